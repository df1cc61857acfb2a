"""`dllm serve` driven by the official openai client (PyPI `openai`): chat, completions, streaming and
the model list, on both tiny reference models. The expected text is what `dllm run` prints for the same
prompt and settings (the CLI's own path through the engine), and usage.prompt_tokens is the length
of the prompt ids `dllm run --json` reports."""

import unittest

import openai

from server_util import DREAM, LLADA, Server, run_cli, request


class OpenAiClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.llada = Server(LLADA, ["--api-key", "sekret"])
        cls.dream = Server(DREAM)
        cls.lc = openai.OpenAI(base_url=cls.llada.url + "/v1", api_key="sekret", max_retries=0, timeout=120)
        cls.dc = openai.OpenAI(base_url=cls.dream.url + "/v1", api_key="unused", max_retries=0, timeout=120)

    @classmethod
    def tearDownClass(cls):
        for s in (cls.llada, cls.dream):
            s.__exit__(None, None, None)

    def test_models(self):
        models = self.lc.models.list()
        self.assertEqual([m.id for m in models.data], ["tiny-llada-q4km"])
        self.assertEqual(models.data[0].object, "model")

    def test_chat_matches_run(self):
        for client, model, name in ((self.lc, LLADA, "tiny-llada-q4km"), (self.dc, DREAM, "tiny-dream-q4km")):
            with self.subTest(model=name):
                r = client.chat.completions.create(
                    model=name, messages=[{"role": "user", "content": "What is 2+2?"}], max_tokens=32, seed=3,
                    extra_body={"steps": 16})
                want = run_cli(model, "What is 2+2?", "--max-tokens", "32", "--seed", "3", "--steps", "16")
                self.assertEqual(r.object, "chat.completion")
                self.assertEqual(r.model, name)
                self.assertEqual(r.choices[0].message.role, "assistant")
                self.assertEqual(r.choices[0].message.content, want["text"])
                self.assertEqual(r.usage.prompt_tokens, want["n_prompt_tokens"])
                self.assertEqual(r.usage.completion_tokens, len(want["tokens"]))
                self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
                self.assertEqual(r.choices[0].finish_reason, "stop" if want["ended_with_end_token"] else "length")

    def test_system_turn_matches_run_system_flag(self):
        r = self.dc.chat.completions.create(
            model="tiny-dream-q4km", max_tokens=16, temperature=0.7, seed=11,
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Once upon"}])
        want = run_cli(DREAM, "Once upon", "--system", "Be brief.", "--max-tokens", "16", "--temperature", "0.7",
                       "--seed", "11")
        self.assertEqual(r.choices[0].message.content, want["text"])
        self.assertEqual(r.usage.prompt_tokens, want["n_prompt_tokens"])

    def test_completion_is_raw_prompt(self):
        r = self.lc.completions.create(model="tiny-llada-q4km", prompt="Once upon a time", max_tokens=32, seed=5)
        want = run_cli(LLADA, "Once upon a time", "--max-tokens", "32", "--seed", "5", chat=False)
        self.assertEqual(r.object, "text_completion")
        self.assertEqual(r.choices[0].text, want["text"])
        self.assertEqual(r.usage.prompt_tokens, want["n_prompt_tokens"])

    def test_chat_stream_concatenates_to_the_answer(self):
        kw = dict(model="tiny-dream-q4km", messages=[{"role": "user", "content": "Tell me a story"}], max_tokens=32,
                  seed=9, extra_body={"steps": 32})
        whole = self.dc.chat.completions.create(**kw).choices[0].message.content
        stream = self.dc.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw)
        chunks = list(stream)
        self.assertTrue(all(c.object == "chat.completion.chunk" for c in chunks))
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, whole)
        finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(len(finals), 1)
        self.assertIn(finals[0], ("stop", "length"))
        self.assertEqual(chunks[-1].choices, [])
        self.assertGreater(chunks[-1].usage.prompt_tokens, 0)

    def test_completion_stream(self):
        kw = dict(model="tiny-llada-q4km", prompt="The cat", max_tokens=32, seed=2)
        whole = self.lc.completions.create(**kw).choices[0].text
        text = "".join(c.choices[0].text for c in self.lc.completions.create(stream=True, **kw) if c.choices)
        self.assertEqual(text, whole)

    def test_stop_string_cuts_the_answer(self):
        kw = dict(model="tiny-llada-q4km", prompt="Once upon a time", max_tokens=32, seed=5)
        whole = self.lc.completions.create(**kw).choices[0].text
        words = whole.split()
        if len(words) < 3:
            self.skipTest(f"the answer {whole!r} has too few words to cut")
        stop = " " + words[2]
        cut = whole[: whole.index(stop)]
        r = self.lc.completions.create(stop=[stop], **kw)
        self.assertEqual(r.choices[0].text, cut)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        streamed = "".join(c.choices[0].text for c in self.lc.completions.create(stream=True, stop=stop, **kw)
                           if c.choices)
        self.assertEqual(streamed, cut)

    def test_errors_raise_the_client_exceptions(self):
        with self.assertRaises(openai.NotFoundError):
            self.lc.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "x"}])
        with self.assertRaises(openai.BadRequestError) as e:
            self.lc.chat.completions.create(model="tiny-llada-q4km", messages=[])
        self.assertEqual(e.exception.body["param"], "messages")
        bad = openai.OpenAI(base_url=self.llada.url + "/v1", api_key="wrong", max_retries=0)
        with self.assertRaises(openai.AuthenticationError):
            bad.models.list()
        # /health needs no key.
        self.assertEqual(request(self.llada.port, "GET", "/health")[0], 200)


if __name__ == "__main__":
    unittest.main()
