"""Shared harness of the `dllm serve` tests: start the built binary on a free 127.0.0.1 port with a
tiny reference model, wait until /health says 200, stop it with SIGTERM (the port must be released),
and small raw-HTTP helpers (http.client) for the requests the openai client would never send."""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

BINARY = os.environ.get("DLLM_BINARY", "")
SHARED = os.environ.get("DLLM_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
LLADA = os.path.join(SHARED, "reference", "tiny-llada-q4km.gguf")
DREAM = os.path.join(SHARED, "reference", "tiny-dream-q4km.gguf")
# The demo model in the repository (models/README.md): readable fairy-tale text, a 256-token context.
FAIRYTALES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                          "tiny-llada-fairytales-q4km.gguf")

try:
    import openai  # noqa: F401  (the official client, from tests/requirements.txt)
except ImportError:  # pragma: no cover
    sys.exit("the openai package is missing: run ./dllm test (it installs tests/requirements.txt into "
             "build/venv), or put build/venv/bin first on PATH")


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `dllm serve` process. Use as a context manager; `port`, `url`, `log()` (its stderr)."""

    def __init__(self, model=LLADA, args=(), env=None, port=None, wait=True):
        if not BINARY or not os.path.exists(BINARY):
            raise RuntimeError(f"DLLM_BINARY is not the built binary: {BINARY!r}")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="dllm-serve-", suffix=".log", delete=False)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.cmd = [BINARY, "serve", "--model", model, "--host", "127.0.0.1", "--port", str(self.port),
                    "--threads", "1"] + list(args)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self._log, env=full_env)
        if wait:
            self.wait_ready()

    def log(self):
        with open(self._log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dllm serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                status, _, _ = request(self.port, "GET", "/health", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"dllm serve not ready after {timeout} s:\n{self.log()}")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig`, waits for the exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"dllm serve did not stop within {timeout} s of {sig!r}:\n{self.log()}")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        os.unlink(self._log.name)


def request(port, method, path, body=None, headers=None, timeout=60):
    """One raw HTTP request; returns (status, headers dict (lower-case names), body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def metric(port, name, headers=None):
    """The value of one Prometheus sample line from /metrics (`name` with its labels, if any)."""
    status, _, body = request(port, "GET", "/metrics", headers=headers)
    assert status == 200, status
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise KeyError(f"{name} not in /metrics:\n{body.decode()}")


def run_cli(model, prompt, *flags, chat=True):
    """`dllm run --json` of the same settings: the reference text for the server's answer."""
    cmd = [BINARY, "run", "--model", model, "--prompt", prompt, "--json", "--threads", "1"] + list(flags)
    if not chat:
        cmd.append("--no-chat")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def sse_events(resp):
    """(event, data) pairs of a streamed http.client response, until [DONE] or the end."""
    event, data = None, []
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def port_is_free(port, within_s=5.0):
    """port_free_now, tried for up to `within_s` seconds (the kernel finishes closing a dead process's
    connections asynchronously). On failure prints the port's sockets (ss) for the log."""
    end = time.time() + within_s
    while True:
        if port_free_now(port):
            return True
        if time.time() > end:
            out = subprocess.run(["ss", "-tanp"], capture_output=True, text=True).stdout
            print("\n".join(l for l in out.splitlines() if f":{port} " in l), file=sys.stderr)
            return False
        time.sleep(0.1)


def port_free_now(port):
    """Nothing listens on 127.0.0.1:port and a new server could bind it with the options cpp-httplib
    sets (SO_REUSEADDR and SO_REUSEPORT, so the closed connections' TIME_WAIT entries, which carry the
    same options, do not keep the port busy)."""
    with socket.socket() as c:
        c.settimeout(2)
        if c.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
            return True
        except OSError:
            return False
