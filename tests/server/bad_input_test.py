"""Every bad input gets an OpenAI error JSON with the right status, over raw HTTP (http.client), and
the server keeps answering afterwards: malformed JSON, wrong types, unknown model, empty messages,
max_tokens 0 / negative / above the context, a prompt too long (both lengths named), run's schedule
checks in run's words, a body over the limit (413), unknown routes (404), wrong methods (405), a
missing or wrong key (401)."""

import json
import socket
import unittest

from server_util import LLADA, Server, request

KEY = {"Authorization": "Bearer k1"}
CHAT = "/v1/chat/completions"


def user(text="hi"):
    return [{"role": "user", "content": text}]


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Context 256 tokens so "above the context" and "prompt too long" are cheap to send.
        cls.s = Server(LLADA, ["--api-key", "k1", "--ctx-size", "256", "--max-body-bytes", "65536"])

    @classmethod
    def tearDownClass(cls):
        cls.s.__exit__(None, None, None)

    def error(self, method, path, body=None, headers=KEY, status=400):
        st, h, raw = request(self.s.port, method, path, body, headers)
        self.assertEqual(st, status, raw)
        self.assertTrue(h.get("content-type", "").startswith("application/json"), h)
        e = json.loads(raw)["error"]
        self.assertEqual(set(e), {"message", "type", "param", "code"})
        self.assertTrue(e["message"])
        return e, h

    def test_malformed_json_and_wrong_types(self):
        for body in ("{", "not json", "[1, 2]", '"text"', '{"messages": [}'):
            e, _ = self.error("POST", CHAT, body)
            self.assertEqual(e["code"], "invalid_json")
        for body, param in (({"messages": "hi"}, "messages"), ({"messages": user(), "max_tokens": "8"}, "max_tokens"),
                            ({"messages": user(), "temperature": "hot"}, "temperature"),
                            ({"messages": user(), "stream": 1}, "stream"),
                            ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
                            ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content")):
            e, _ = self.error("POST", CHAT, body)
            self.assertEqual(e["param"], param, e)
            self.assertEqual(e["type"], "invalid_request_error")
        e, _ = self.error("POST", "/v1/completions", {"prompt": {"a": 1}})
        self.assertEqual(e["param"], "prompt")

    def test_unknown_model_and_empty_messages(self):
        e, _ = self.error("POST", CHAT, {"model": "gpt-4o", "messages": user()}, status=404)
        self.assertEqual(e["code"], "model_not_found")
        self.assertIn("tiny-llada-q4km", e["message"])
        e, _ = self.error("POST", CHAT, {"messages": []})
        self.assertEqual(e["param"], "messages")

    def test_max_tokens_out_of_range(self):
        for n in (0, -5):
            e, _ = self.error("POST", CHAT, {"messages": user(), "max_tokens": n})
            self.assertEqual(e["param"], "max_tokens")
            self.assertIn(str(n), e["message"])
        e, _ = self.error("POST", CHAT, {"messages": user(), "max_tokens": 1000})
        self.assertEqual(e["code"], "context_length_exceeded")
        self.assertIn("256", e["message"])
        self.assertIn("max_tokens 1000", e["message"])

    def test_prompt_too_long_names_both_lengths(self):
        e, _ = self.error("POST", "/v1/completions", {"prompt": "word " * 400, "max_tokens": 8})
        self.assertEqual(e["code"], "context_length_exceeded")
        self.assertEqual(e["param"], "prompt")
        self.assertRegex(e["message"], r"the prompt is \d+ tokens and the context is 256 tokens")

    def test_run_checks_in_run_words(self):
        # LLaDA: max_tokens must be a multiple of block_length, exactly as `dllm run` says it.
        e, _ = self.error("POST", CHAT, {"messages": user(), "max_tokens": 48, "block_length": 32})
        self.assertIn("block", e["message"])
        self.assertEqual(e["param"], "max_tokens")  # the field the message starts from
        e, _ = self.error("POST", CHAT, {"messages": user(), "cfg_scale": 1.0, "cache": "dual"})
        self.assertIn("cfg", e["message"])
        self.assertEqual(e["param"], "cfg_scale")
        # Nested fields are named in full.
        e, _ = self.error("POST", CHAT, {"messages": user(), "stream": True, "dllm": {"canvas": 1}})
        self.assertEqual(e["param"], "dllm.canvas")
        e, _ = self.error("POST", CHAT, {"messages": user(), "dllm": {"canvas": True}})
        self.assertEqual(e["param"], "dllm.canvas")

    def test_body_over_the_limit(self):
        e, _ = self.error("POST", CHAT, json.dumps({"messages": user("x" * 70000)}), status=413)
        self.assertIn("65536", e["message"])

    def test_routes_methods_keys(self):
        e, _ = self.error("GET", "/v1/nothing", status=404)
        self.assertIn("/v1/nothing", e["message"])
        e, h = self.error("GET", CHAT, status=405)
        self.assertEqual(h.get("allow"), "POST")
        e, h = self.error("POST", "/v1/models", {}, status=405)
        self.assertEqual(h.get("allow"), "GET")
        e, _ = self.error("POST", CHAT, {"messages": user()}, headers={}, status=401)
        self.assertEqual(e["code"], "invalid_api_key")
        e, _ = self.error("GET", "/v1/models", headers={"Authorization": "Bearer nope"}, status=401)
        e, _ = self.error("GET", "/metrics", headers={"Authorization": "k1"}, status=401)
        self.assertEqual(request(self.s.port, "GET", "/health")[0], 200)

    def test_garbage_on_the_socket_gets_an_answer(self):
        with socket.create_connection(("127.0.0.1", self.s.port), timeout=10) as c:
            c.sendall(b"\x00\x01\x02 nonsense\r\n\r\n")
            data = c.recv(4096)
        self.assertTrue(data.startswith(b"HTTP/1.1 4"), data)
        # A body shorter than its Content-Length: the read times out or the server answers; either way
        # the server goes on serving.
        with socket.create_connection(("127.0.0.1", self.s.port), timeout=10) as c:
            c.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n"
                      b"Content-Length: 100\r\n\r\n{\"messages\"")
            c.shutdown(socket.SHUT_WR)
            c.recv(4096)
        st, _, _ = request(self.s.port, "POST", CHAT, {"messages": user(), "max_tokens": 8}, KEY)
        self.assertEqual(st, 200)


if __name__ == "__main__":
    unittest.main()
