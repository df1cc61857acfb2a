"""`dllm serve` on the tiny DiffusionGemma file (tests/data/diffusion-gemma), driven by the official openai
client: chat and streamed chat give what `dllm run` prints for the same prompt, seed and steps (the server's
engine runs the entropy-bound sampler through diffusion::Sequence, `run` through its own loop over the same
EntropyBoundSequence), usage counts the Gemma-templated prompt, and a max_tokens of more than one canvas runs
more blocks."""

import os
import unittest

import openai

import json

from server_util import Server, metric, request, run_cli

DG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "diffusion-gemma",
                  "tiny-diffusion-gemma-q4km.gguf")
NAME = "tiny-diffusion-gemma-q4km"


class DiffusionGemmaServe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(DG)
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="unused", max_retries=0, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_chat_and_stream_match_run(self):
        want = run_cli(DG, "What is 2+2?", "--max-tokens", "32", "--seed", "1", "--steps", "8")
        msgs = [{"role": "user", "content": "What is 2+2?"}]
        r = self.client.chat.completions.create(model=NAME, messages=msgs, max_tokens=32, seed=1,
                                                extra_body={"steps": 8})
        self.assertEqual(r.choices[0].message.content, want["text"])
        self.assertEqual(r.usage.prompt_tokens, len(want["prompt_tokens"]))
        self.assertEqual(r.usage.prompt_tokens, 27)  # the CLI's chat prompt (cli/defaults-seed1.tokens.json)
        stream = self.client.chat.completions.create(model=NAME, messages=msgs, max_tokens=32, seed=1,
                                                     extra_body={"steps": 8}, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        self.assertEqual(text, want["text"])

    def test_eb_fields_match_run_flags(self):
        # The entropy-bound settings as request fields (the names /props reports) give what `dllm run`
        # prints with the same settings as flags; out of range, a 400 naming the field.
        flags = ["--eb-t-max", "2.5", "--eb-t-min", "0.9", "--eb-entropy-bound", "0.3", "--eb-confidence", "0.5",
                 "--eb-stability", "2"]
        want = run_cli(DG, "What is 2+2?", "--max-tokens", "32", "--seed", "3", "--steps", "6", *flags)
        default = run_cli(DG, "What is 2+2?", "--max-tokens", "32", "--seed", "3", "--steps", "6")
        self.assertNotEqual(want["text"], default["text"])  # the settings matter on this model
        fields = {"steps": 6, "eb_t_max": 2.5, "eb_t_min": 0.9, "eb_entropy_bound": 0.3, "eb_confidence": 0.5,
                  "eb_stability": 2}
        r = self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "What is 2+2?"}],
                                                max_tokens=32, seed=3, extra_body=fields)
        self.assertEqual(r.choices[0].message.content, want["text"])
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                                max_tokens=32, extra_body={"eb_t_min": 0})
        self.assertEqual(e.exception.body["param"], "eb_t_min")

    def test_max_tokens_cuts_the_answer(self):
        # One canvas of 32 runs; the answer is cut at max_tokens, as run cuts it at --max-tokens.
        want = run_cli(DG, "Tell me a story.", "--max-tokens", "8", "--seed", "5", "--steps", "4")
        self.assertLessEqual(len(want["tokens"]), 8)
        r = self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Tell me a story."}],
                                                max_tokens=8, seed=5, extra_body={"steps": 4})
        self.assertEqual(r.choices[0].message.content, want["text"])
        self.assertLessEqual(r.usage.completion_tokens, 8)

    def test_props_metrics_and_refusals(self):
        status, _, raw = request(self.server.port, "GET", "/props")
        d = json.loads(raw)["default_generation_settings"]
        # serve's default max_tokens (64) is what a request without one gets; the file's settings read
        # back as written (0.05, not the f32 widened to 0.05000000074505806).
        self.assertEqual(d["max_tokens"], 64)
        self.assertEqual(d["canvas_length"], 32)
        self.assertEqual(d["seed"], None)
        from gguf import GGUFReader
        import numpy as np
        field = GGUFReader(DG).fields["diffusion.eb_confidence_threshold"]
        self.assertEqual(d["eb_confidence"], float(str(np.float32(field.parts[field.data[0]][0]))))
        before = metric(self.server.port, "dllm_tokens_committed_total")
        r = self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                                max_tokens=32, seed=1)
        # The finished canvas's answer counts as committed.
        self.assertEqual(metric(self.server.port, "dllm_tokens_committed_total") - before, r.usage.completion_tokens)
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}],
                                                max_tokens=32, extra_body={"edit_threshold": 0.5})
        self.assertIn("no token editing", e.exception.body["message"])

    def test_two_blocks(self):
        want = run_cli(DG, "Tell me a story.", "--max-tokens", "64", "--seed", "2", "--steps", "4")
        r = self.client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Tell me a story."}],
                                                max_tokens=64, seed=2, extra_body={"steps": 4})
        self.assertEqual(r.choices[0].message.content, want["text"])
        self.assertLessEqual(r.usage.completion_tokens, 64)


if __name__ == "__main__":
    unittest.main()
