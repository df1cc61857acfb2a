"""Scale-out on loopback: nginx (the Debian package, run as this test's own process with its config,
pid and logs in a temporary directory, listening on 127.0.0.1 only) in front of two `dllm serve`
replicas. 40 requests from 4 clients; one replica is killed (SIGKILL) half way. Every request must end
in a response, a completion or an error status (nothing silently lost), and the requests after the
kill must all complete on the live replica: nginx open source has no active health checks, so it is
passive, max_fails / fail_timeout marking the dead one down and proxy_next_upstream retrying on the
other (docs/serving.md shows the same upstream block)."""

import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from server_util import LLADA, Server, free_port, metric, request

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log {tmp}/access.log;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream dllm {{
    server 127.0.0.1:{a} max_fails=1 fail_timeout=30s;
    server 127.0.0.1:{b} max_fails=1 fail_timeout=30s;
    keepalive 8;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://dllm;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 2;
    }}
  }}
}}
"""


@unittest.skipUnless(os.path.exists(NGINX), "nginx is not installed (Debian package nginx-light)")
class NginxScaleOut(unittest.TestCase):
    def test_kill_one_replica_half_way(self):
        tmp = tempfile.mkdtemp(prefix="dllm-nginx-")
        a = Server(LLADA, ["--parallel", "2"])
        b = Server(LLADA, ["--parallel", "2"])
        port = free_port()
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(CONF.format(tmp=tmp, a=a.port, b=b.port, port=port))
        nginx = subprocess.Popen([NGINX, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf"), "-e",
                                  os.path.join(tmp, "error.log")], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 20
            while True:
                try:
                    if request(port, "GET", "/health", timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                self.assertIsNone(nginx.poll(), nginx.stderr.read() if nginx.poll() is not None else "")
                self.assertLess(time.time(), deadline, "nginx did not start")
                time.sleep(0.05)

            results = [None] * 40
            killed = threading.Event()
            done_count = [0]
            lock = threading.Lock()

            def one(i):
                body = {"messages": [{"role": "user", "content": f"story {i}"}], "max_tokens": 32, "steps": 16,
                        "seed": i}
                after_kill = killed.is_set()
                try:
                    st, _, raw = request(port, "POST", "/v1/chat/completions", body, timeout=120)
                    ok = st == 200 and json.loads(raw)["choices"][0]["message"]["content"] is not None
                    results[i] = (st, ok, after_kill)
                except (OSError, http.client.HTTPException) as e:
                    results[i] = ("no response: " + repr(e), False, after_kill)
                with lock:
                    done_count[0] += 1
                    if done_count[0] == 20 and not killed.is_set():
                        a.proc.send_signal(signal.SIGKILL)
                        a.proc.wait()
                        killed.set()

            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                list(pool.map(one, range(40)))

            self.assertTrue(killed.is_set())
            lost = [(i, r) for i, r in enumerate(results) if r is None or isinstance(r[0], str)]
            self.assertEqual(lost, [], "requests without any response")
            for i, (st, ok, after) in enumerate(results):
                self.assertTrue(ok or st >= 400, (i, st))
                if after:
                    self.assertTrue(ok, f"request {i} sent after the kill got {st}")
            self.assertGreaterEqual(sum(1 for r in results if r[2]), 10)
            print(f"\n40 requests: {sum(1 for r in results if r[1])} completed, "
                  f"{sum(1 for r in results if not r[1])} error responses, "
                  f"{sum(1 for r in results if r[2])} sent after the kill")
            # The live replica served the rest; nginx logged the dead one as failed.
            self.assertGreaterEqual(metric(b.port, 'dllm_requests_total{outcome="ok"}'), 20)
        finally:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(timeout=20)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait()
            nginx.stderr.close()
            for s in (a, b):
                s.__exit__(None, None, None)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
