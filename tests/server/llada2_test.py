"""`dllm serve` on the tiny LLaDA2 reference model (block diffusion) through the official openai client:
the chat answer is what `dllm run` prints for the same prompt and settings, a streamed answer arrives in
several pieces as the blocks become final and concatenates to the whole answer, and cache "none" (the
reference loop's recompute) gives the same text as the default exact cache."""

import os
import unittest

import openai

from server_util import SHARED, Server, run_cli

LLADA2 = os.path.join(SHARED, "reference", "tiny-llada2-q4km.gguf")
NAME = "tiny-llada2-q4km"


class Llada2Serve(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(LLADA2)
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="unused", max_retries=0, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_chat_matches_run(self):
        r = self.client.chat.completions.create(
            model=NAME, messages=[{"role": "user", "content": "What is 2+2?"}], max_tokens=80, seed=3)
        want = run_cli(LLADA2, "What is 2+2?", "--max-tokens", "80", "--seed", "3")
        self.assertEqual(r.choices[0].message.content, want["text"])
        self.assertEqual(r.usage.prompt_tokens, want["n_prompt_tokens"])
        self.assertEqual(r.usage.completion_tokens, len(want["tokens"]))

    def test_sampled_chat_matches_run_and_recompute(self):
        kw = dict(model=NAME, messages=[{"role": "user", "content": "Tell me a story"}], max_tokens=96,
                  temperature=0.8, seed=11, top_p=0.9)
        exact = self.client.chat.completions.create(**kw).choices[0].message.content
        none = self.client.chat.completions.create(extra_body={"cache": "none"}, **kw).choices[0].message.content
        want = run_cli(LLADA2, "Tell me a story", "--max-tokens", "96", "--temperature", "0.8", "--seed", "11",
                       "--top-p", "0.9")
        self.assertEqual(exact, want["text"])
        self.assertEqual(none, exact)

    def test_editing_matches_run(self):
        # LLaDA2.1 token editing through the request fields, as `dllm run --edit-threshold` does it.
        r = self.client.chat.completions.create(
            model=NAME, messages=[{"role": "user", "content": "What is 2+2?"}], max_tokens=64, seed=1,
            extra_body={"edit_threshold": 0.3, "max_post_edit_steps": 4})
        want = run_cli(LLADA2, "What is 2+2?", "--max-tokens", "64", "--seed", "1", "--edit-threshold", "0.3",
                       "--max-post-edit-steps", "4")
        self.assertEqual(r.choices[0].message.content, want["text"])

    def test_stream_block_by_block(self):
        kw = dict(model=NAME, messages=[{"role": "user", "content": "Tell me a story"}], max_tokens=96, seed=5)
        whole = self.client.chat.completions.create(**kw).choices[0].message.content
        chunks = list(self.client.chat.completions.create(stream=True, **kw))
        pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        self.assertEqual("".join(pieces), whole)
        self.assertGreater(len(whole), 0)
        # 96 tokens span several blocks of 32: the answer arrives in more than one piece.
        self.assertGreater(len(pieces), 1)
        finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(len(finals), 1)


if __name__ == "__main__":
    unittest.main()
