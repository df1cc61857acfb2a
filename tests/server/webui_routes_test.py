"""The routes of `dllm serve`'s web page over raw HTTP: GET / (the page, served without the API key,
nothing in it that loads from elsewhere, its Content-Security-Policy), GET /props (the model and the
request defaults, against the GGUF's own metadata and the README's "Defaults"), and --no-webui.
The page itself in a browser: webui_test.py."""

import json
import os
import re
import unittest

from server_util import DREAM, FAIRYTALES, Server, request


class Routes(unittest.TestCase):
    """GET / and GET /props over raw HTTP."""

    def test_page_and_props(self):
        with Server(FAIRYTALES, args=["--parallel", "3", "--api-key", "k"]) as s:
            st, h, body = request(s.port, "GET", "/")  # no key: the page asks for it itself
            self.assertEqual(st, 200)
            self.assertTrue(h["content-type"].startswith("text/html"))
            csp = h["content-security-policy"]
            self.assertIn("default-src 'none'", csp)
            self.assertIn("connect-src 'self'", csp)
            page = body.decode()
            # Nothing to load from elsewhere: every src / href is inline data, no imports or url()s.
            refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
            self.assertEqual(refs, ["data:,"])
            self.assertNotRegex(page, r"@import|url\(\s*['\"]?(?:https?:)?//")
            for name in ("prompt", "send", "stop"):
                self.assertIn(f'data-testid="{name}"', page)
            self.assertEqual(request(s.port, "GET", "/props")[0], 401)
            st, _, raw = request(s.port, "GET", "/props", headers={"Authorization": "Bearer k"})
            self.assertEqual(st, 200)
            props = json.loads(raw)
            # The GGUF's own context length (read with the gguf package, not our reader), under --ctx-size.
            from gguf import GGUFReader
            field = GGUFReader(FAIRYTALES).fields["llada.context_length"]
            n_ctx = int(field.parts[field.data[0]][0])
            # README "Defaults" for LLaDA: block 32, steps = max_tokens (64), low_confidence, greedy; no
            # --seed, so no default seed (each request without one gets a fresh seed).
            self.assertEqual(props, {
                "model": "tiny-llada-fairytales-q4km", "arch": "llada", "schedule": "llada", "total_slots": 3,
                "n_ctx": min(n_ctx, 4096), "steps_follow_max_tokens": True,
                "default_generation_settings": {
                    "max_tokens": 64, "steps": 64, "block_length": 32, "threshold": None, "cache": "none",
                    "temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": None, "cfg_scale": 0.0,
                    "remasking": "low_confidence"}})

    @unittest.skipUnless(os.path.exists(DREAM), f"{DREAM} not found")
    def test_no_webui_and_flags_in_props(self):
        with Server(DREAM, args=["--no-webui", "--steps", "16", "-n", "32", "--threshold", "0.9", "--cache", "dual",
                                 "--seed", "5"]) as s:
            st, _, raw = request(s.port, "GET", "/")
            self.assertEqual(st, 404)
            self.assertEqual(json.loads(raw)["error"]["code"], "route_not_found")
            st, _, raw = request(s.port, "GET", "/props")
            self.assertEqual(st, 200)
            props = json.loads(raw)
            self.assertEqual((props["arch"], props["schedule"], props["steps_follow_max_tokens"]),
                             ("dream", "dream", False))
            d = props["default_generation_settings"]
            # README "Defaults" for Dream: alg entropy, one block (0), top_p 1; the flags over them.
            self.assertEqual({k: d[k] for k in ("max_tokens", "steps", "threshold", "cache", "seed", "alg",
                                                "block_length", "top_p")},
                             {"max_tokens": 32, "steps": 16, "threshold": 0.9, "cache": "dual", "seed": 5,
                              "alg": "entropy", "block_length": 0, "top_p": 1.0})
            self.assertNotIn("remasking", d)


if __name__ == "__main__":
    unittest.main()
