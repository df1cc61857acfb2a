"""Streaming over raw HTTP: the canvas events of "dllm": {"canvas": true}, a client that disconnects
(its job's steps stop advancing), and SIGTERM with a stream in flight (an error event, then [DONE];
the process exits 0 and the port is free)."""

import http.client
import json
import signal
import time
import unittest

from server_util import LLADA, Server, metric, port_is_free, request, sse_events

MASK = "\u2591"


def open_stream(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/chat/completions", body=json.dumps({"stream": True, **body}),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return conn, resp


class Streaming(unittest.TestCase):
    def test_canvas_events(self):
        with Server(LLADA) as s:
            conn, resp = open_stream(s.port, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 32,
                                              "steps": 16, "dllm": {"canvas": True}})
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
            canvases, chunks, done = [], [], False
            for event, data in sse_events(resp):
                if data == "[DONE]":
                    done = True
                    break
                (canvases if event == "canvas" else chunks).append(json.loads(data))
            conn.close()
            self.assertTrue(done)
            self.assertGreater(len(canvases), 0)
            self.assertEqual([c["step"] for c in canvases], list(range(len(canvases))))
            masks = [c["text"].count(MASK) for c in canvases]
            self.assertEqual(masks, sorted(masks, reverse=True))
            # LLaDA: 32 tokens in 16 steps, two per step; the first canvas shows 30 masks.
            self.assertEqual(canvases[0]["tokens_committed"], 2)
            self.assertEqual(masks[0], 30)
            self.assertTrue(all(len(c["committed"]) == c["tokens_committed"] for c in canvases))
            # The cells: one per position, null exactly where the text shows a mask; LLaDA never
            # changes a committed token, so the count grows by each step's commits; one block of 32.
            for i, c in enumerate(canvases):
                self.assertEqual(len(c["cells"]), 32)
                self.assertEqual(sum(x is None for x in c["cells"]), masks[i])
                self.assertTrue(all(c["cells"][p] is not None for p in c["committed"]))
                self.assertEqual(c["committed_total"], 2 * (i + 1))
                self.assertGreater(c["step_ms"], 0)
                self.assertNotIn("changed", c)
                self.assertNotIn("block", c)
            text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
            st, _, raw = request(s.port, "POST", "/v1/chat/completions",
                                 {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 32, "steps": 16})
            self.assertEqual(text, json.loads(raw)["choices"][0]["message"]["content"])

    def test_disconnect_cancels_the_job(self):
        with Server(LLADA) as s:
            conn, resp = open_stream(s.port, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 256,
                                              "steps": 256, "block_length": 256, "dllm": {"canvas": True}})
            events = sse_events(resp)
            for _ in range(3):
                next(events)
            conn.sock.close()  # the client goes away mid-stream
            conn.close()
            deadline = time.time() + 30
            while metric(s.port, 'dllm_requests_total{outcome="cancelled"}') < 1:
                self.assertLess(time.time(), deadline, "the job was not cancelled")
                time.sleep(0.05)
            steps = metric(s.port, "dllm_sequence_steps_total")
            time.sleep(0.5)
            self.assertEqual(metric(s.port, "dllm_sequence_steps_total"), steps)
            self.assertLess(steps, 256)
            self.assertEqual(metric(s.port, "dllm_active_canvases"), 0)

    def test_sigterm_ends_streams_with_an_error_event(self):
        s = Server(LLADA)
        try:
            conn, resp = open_stream(s.port, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 256,
                                              "steps": 256, "block_length": 256, "dllm": {"canvas": True}})
            events = sse_events(resp)
            next(events)
            s.proc.send_signal(signal.SIGTERM)
            rest = list(events)
            resp.close()  # the response holds the socket too: without this the port waits in FIN_WAIT2
            conn.close()
            self.assertEqual(rest[-1][1], "[DONE]")
            err = json.loads(rest[-2][1])
            self.assertEqual(err["error"]["code"], "shutting_down")
            self.assertEqual(s.proc.wait(timeout=30), 0)
            self.assertIn("stopped", s.log())
            self.assertTrue(port_is_free(s.port))
        finally:
            s.__exit__(None, None, None)

    def test_sigint_stops_an_idle_server(self):
        s = Server(LLADA)
        try:
            self.assertEqual(s.stop(signal.SIGINT), 0)
            self.assertTrue(port_is_free(s.port))
        finally:
            s.__exit__(None, None, None)


if __name__ == "__main__":
    unittest.main()
