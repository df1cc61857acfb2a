"""What OpenAI, llama-server and Ollama clients expect of `dllm serve` (docs/serving.md): a fresh seed
per request without `seed`, reported in dllm.seed and X-Dllm-Seed, and replayable; models.retrieve;
CORS preflights and --cors-origin; logprobs, tools and response_format refused with a 400 naming the
field; top_p 0 accepted; an empty --api-key refused and the Bearer scheme read case-insensitively;
/health counted with its real status in /metrics; a typed mask token noted; the 404 route list; the
-c clamp warned about. The official `openai` client where it has a call for it, raw HTTP elsewhere."""

import json
import os
import subprocess
import unittest

import openai

from server_util import BINARY, DREAM, LLADA, Server, free_port, request

CHAT = "/v1/chat/completions"


def user(text="hi"):
    return [{"role": "user", "content": text}]


class Seeds(unittest.TestCase):
    def test_fresh_seed_per_request_and_replay(self):
        with Server(LLADA) as s:
            client = openai.OpenAI(base_url=s.url + "/v1", api_key="none")
            answers = []
            for _ in range(3):
                raw = client.chat.completions.with_raw_response.create(
                    model="tiny-llada-q4km", messages=user("Tell me a story"), max_tokens=16, temperature=0.9)
                r = raw.parse()
                seed = r.model_extra["dllm"]["seed"]
                self.assertEqual(raw.headers["x-dllm-seed"], str(seed))
                answers.append((seed, r.choices[0].message.content))
            self.assertEqual(len({seed for seed, _ in answers}), 3, answers)
            self.assertGreater(len({text for _, text in answers}), 1, answers)
            # The reported seed replays the answer.
            seed, text = answers[0]
            again = client.chat.completions.create(model="tiny-llada-q4km", messages=user("Tell me a story"),
                                                   max_tokens=16, temperature=0.9, seed=seed)
            self.assertEqual(again.choices[0].message.content, text)
            self.assertEqual(again.model_extra["dllm"]["seed"], seed)

    def test_seed_flag_fixes_the_default(self):
        with Server(LLADA, ["--seed", "7"]) as s:
            st, h, raw = request(s.port, "POST", CHAT, {"messages": user(), "max_tokens": 8})
            self.assertEqual(st, 200, raw)
            self.assertEqual(json.loads(raw)["dllm"]["seed"], 7)
            self.assertEqual(h["x-dllm-seed"], "7")


class RoutesAndFields(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(DREAM, ["--cors-origin", "https://ui.example"])

    @classmethod
    def tearDownClass(cls):
        cls.s.__exit__(None, None, None)

    def test_models_retrieve(self):
        client = openai.OpenAI(base_url=self.s.url + "/v1", api_key="none")
        m = client.models.retrieve("tiny-dream-q4km")
        self.assertEqual((m.id, m.object), ("tiny-dream-q4km", "model"))
        with self.assertRaises(openai.NotFoundError):
            client.models.retrieve("gpt-4o")

    def test_cors_preflight(self):
        for origin in ("https://ui.example", "http://localhost:5173", "http://127.0.0.1:3000"):
            st, h, _ = request(self.s.port, "OPTIONS", CHAT, headers={
                "Origin": origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"})
            self.assertEqual(st, 204, origin)
            self.assertEqual(h.get("access-control-allow-origin"), origin)
            self.assertIn("POST", h.get("access-control-allow-methods", ""))
            self.assertIn("authorization", h.get("access-control-allow-headers", "").lower())
        st, h, raw = request(self.s.port, "OPTIONS", CHAT, headers={"Origin": "https://evil.example"})
        self.assertEqual(st, 403, raw)
        self.assertNotIn("access-control-allow-origin", h)
        st, h, _ = request(self.s.port, "POST", CHAT, {"messages": user(), "max_tokens": 8},
                           headers={"Origin": "https://ui.example"})
        self.assertEqual(st, 200)
        self.assertEqual(h.get("access-control-allow-origin"), "https://ui.example")

    def test_unsupported_fields_are_refused_by_name(self):
        client = openai.OpenAI(base_url=self.s.url + "/v1", api_key="none")
        tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
        for extra, param in (({"logprobs": True}, "logprobs"), ({"logprobs": False, "top_logprobs": 2}, "top_logprobs"),
                             ({"tools": [tool]}, "tools"),
                             ({"response_format": {"type": "json_object"}}, "response_format")):
            with self.assertRaises(openai.BadRequestError) as cm:
                client.chat.completions.create(model="tiny-dream-q4km", messages=user(), max_tokens=8, **extra)
            self.assertEqual(cm.exception.body["param"], param)
            self.assertIn("not supported", cm.exception.body["message"])
        # The values that ask for nothing pass.
        r = client.chat.completions.create(model="tiny-dream-q4km", messages=user(), max_tokens=8, logprobs=False,
                                           tools=[tool], tool_choice="none", response_format={"type": "text"})
        self.assertEqual(r.choices[0].finish_reason in ("stop", "length"), True)

    def test_top_p_zero_is_the_most_likely_token(self):
        # OpenAI accepts top_p 0. Dream reads top_p: 0 keeps the most likely token alone, so the draw has
        # one candidate and the seed no longer matters, while at top_p 1 two seeds give two texts.
        body = {"messages": user("Tell me a story"), "max_tokens": 16, "temperature": 1.0}

        def text(**extra):
            st, _, raw = request(self.s.port, "POST", CHAT, {**body, **extra})
            self.assertEqual(st, 200, raw)
            return json.loads(raw)["choices"][0]["message"]["content"]

        self.assertEqual(text(top_p=0, seed=1), text(top_p=0, seed=2))
        self.assertNotEqual(text(top_p=1, seed=1), text(top_p=1, seed=2))

    def test_typed_mask_token_is_noted_and_no_special_per_request(self):
        st, _, raw = request(self.s.port, "POST", CHAT, {"messages": user("a <|mask|> b"), "max_tokens": 8})
        self.assertEqual(st, 200, raw)
        warnings = json.loads(raw)["dllm"].get("warnings", [])
        self.assertTrue(any("mask token" in w and "not denoised" in w for w in warnings), warnings)
        st, _, raw = request(self.s.port, "POST", CHAT,
                             {"messages": user("a <|mask|> b"), "max_tokens": 8, "no_special": True})
        self.assertEqual(st, 200, raw)
        self.assertNotIn("warnings", json.loads(raw)["dllm"])

    def test_404_lists_every_route(self):
        st, _, raw = request(self.s.port, "GET", "/v2/nothing")
        self.assertEqual(st, 404)
        message = json.loads(raw)["error"]["message"]
        for route in ("POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "GET /health",
                      "GET /metrics", "POST /apply-template"):
            self.assertIn(route, message)

    def test_health_is_counted_with_its_status(self):
        for _ in range(2):
            self.assertEqual(request(self.s.port, "GET", "/health")[0], 200)
        _, _, raw = request(self.s.port, "GET", "/metrics")
        text = raw.decode()
        self.assertIn('dllm_http_requests_total{route="/health",status="200"}', text)
        self.assertNotIn('status="-1"', text)


class Auth(unittest.TestCase):
    def test_empty_key_is_refused(self):
        for args, env in ((["--api-key", ""], {}), ([], {"DLLM_API_KEY": ""})):
            out = subprocess.run([BINARY, "serve", "--model", LLADA, "--port", str(free_port())] + args,
                                 capture_output=True, text=True, timeout=60, env={**os.environ, **env})
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertTrue(out.stderr.startswith("ERROR: "), out.stderr)
            self.assertIn("empty", out.stderr)

    def test_bearer_scheme_is_case_insensitive(self):
        with Server(LLADA, ["--api-key", "k1"]) as s:
            for header in ("Bearer k1", "bearer k1", "BEARER k1"):
                self.assertEqual(request(s.port, "GET", "/v1/models", headers={"Authorization": header})[0], 200,
                                 header)
            for header in ("Bearer k2", "Basic k1", "k1", "Bearerk1"):
                self.assertEqual(request(s.port, "GET", "/v1/models", headers={"Authorization": header})[0], 401,
                                 header)


class ContextClamp(unittest.TestCase):
    def test_ctx_size_above_the_model_is_warned(self):
        with Server(LLADA, ["-c", "100000"]) as s:
            self.assertIn("warning: --ctx-size 100000 is longer than the model's context", s.log())


if __name__ == "__main__":
    unittest.main()
