"""Through HTTP: the same request (same seed) gives the same text alone and among 4 concurrent ones
(each answer must not depend on what else is in the batch), a full queue answers 503 with
Retry-After, and /metrics counts what ran."""

import concurrent.futures
import http.client
import json
import threading
import time
import unittest

from server_util import DREAM, LLADA, Server, metric, request


def chat(port, text, **fields):
    body = {"messages": [{"role": "user", "content": text}], **fields}
    st, h, raw = request(port, "POST", "/v1/chat/completions", body, timeout=300)
    return st, h, json.loads(raw)


class Batching(unittest.TestCase):
    def check_alone_vs_batched(self, model):
        with Server(model, ["--parallel", "4"]) as s:
            probe = dict(max_tokens=32, temperature=0.8, seed=1234, steps=16)
            st, _, alone = chat(s.port, "Once upon a time", **probe)
            self.assertEqual(st, 200, alone)
            others = [("Tell me about cats", dict(max_tokens=64, temperature=0.5, seed=1)),
                      ("Hello", dict(max_tokens=32, seed=2, steps=32)),
                      ("The sea was", dict(max_tokens=32, temperature=1.0, seed=3, steps=8))]
            jobs = [("Once upon a time", probe)] + others
            start = threading.Barrier(len(jobs))

            def go(job):
                start.wait()
                return chat(s.port, job[0], **job[1])

            with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
                results = list(pool.map(go, jobs))
            for st, _, body in results:
                self.assertEqual(st, 200, body)
            self.assertEqual(results[0][2]["choices"][0]["message"]["content"],
                             alone["choices"][0]["message"]["content"])
            self.assertEqual(results[0][2]["usage"], alone["usage"])
            # The four really were in flight together at some point: the engine ran them as a batch
            # when it steps fewer forward passes than job steps.
            self.assertGreaterEqual(metric(s.port, 'dllm_requests_total{outcome="ok"}'), 5)

    def test_llada_alone_equals_batched(self):
        self.check_alone_vs_batched(LLADA)

    def test_dream_alone_equals_batched(self):
        self.check_alone_vs_batched(DREAM)

    def test_queue_full_is_503_with_retry_after(self):
        with Server(LLADA, ["--parallel", "1", "--queue", "1"]) as s:
            # Two long streams hold the one canvas and the one queue slot; closing them afterwards
            # cancels them, so the test does not wait for their answers.
            long = {"messages": [{"role": "user", "content": "x"}], "stream": True, "max_tokens": 256,
                    "steps": 256, "block_length": 256}
            conns = []
            deadline = time.time() + 60
            for gauge in ("dllm_active_canvases", "dllm_queue_depth"):
                c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
                c.request("POST", "/v1/chat/completions", body=json.dumps(long),
                          headers={"Content-Type": "application/json"})
                conns.append(c)
                while metric(s.port, gauge) < 1:
                    self.assertLess(time.time(), deadline, gauge)
                    time.sleep(0.02)
            st, h, body = chat(s.port, "three", max_tokens=8)
            self.assertEqual(st, 503, body)
            self.assertEqual(body["error"]["code"], "queue_full")
            self.assertEqual(body["error"]["type"], "unavailable_error")
            self.assertGreaterEqual(int(h["retry-after"]), 1)
            self.assertEqual(metric(s.port, 'dllm_requests_total{outcome="rejected"}'), 1)
            for c in conns:
                c.close()

    def test_metrics_count_the_work(self):
        with Server(LLADA) as s:
            before = metric(s.port, "dllm_forward_passes_total")
            st, _, body = chat(s.port, "hi", max_tokens=32, steps=8)
            self.assertEqual(st, 200, body)
            self.assertEqual(metric(s.port, "dllm_forward_passes_total") - before, body["dllm"]["steps"])
            self.assertEqual(metric(s.port, "dllm_sequence_steps_total"), body["dllm"]["steps"])
            self.assertGreater(metric(s.port, "dllm_tokens_committed_total"), 0)
            self.assertEqual(metric(s.port, "dllm_step_seconds_count"), body["dllm"]["steps"])
            self.assertEqual(metric(s.port, 'dllm_http_requests_total{route="/v1/chat/completions",status="200"}'), 1)
            self.assertEqual(metric(s.port, "dllm_model_loaded"), 1)


if __name__ == "__main__":
    unittest.main()
