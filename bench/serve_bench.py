#!/usr/bin/env python3
"""Throughput of `dllm serve` with 1, 2, 4 and 8 concurrent clients against the same requests run
one after another through `dllm run`, in the same run, once exact (cache none) and once with the
Fast-dLLM dual cache.

Each client sends --requests requests (chat, max_tokens 64, block_length 32, its own seed) and waits
for each answer. Server side: committed tokens/s = the engine's dllm_tokens_committed_total over the
wall time of the whole wave, and p50 / p95 of the request latencies the clients saw. Sequential side:
every request of the C = 8 wave, one after another, as `dllm run --json` processes; committed tokens
are the canvas positions that are no longer the mask id, time is the runs' generate_ms (load and
process start left out, which favours the sequential side). Writes
bench/results/serve-<model stem>-<utc stamp>.json with the machine, the commit and the commands.

Usage: bench/serve_bench.py [--bin build/bin] [--model PATH] [--threads 2] [--clients 1,2,4,8]
                            [--requests 1] [--max-tokens 64] [--block-length 32] [--steps S]
                            [--caches none,dual] [--note TEXT]
"""
import argparse
import concurrent.futures
import datetime
import json
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from e2e_bench import commit, loadavg, machine  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=3600) as r:
        out = json.loads(r.read())
    return out, time.perf_counter() - t0


def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise KeyError(name)


def prompts(n):
    topics = ["a cat", "the sea", "a robot", "winter", "a dragon", "the moon", "a garden", "a train", "rain",
              "a castle", "a fox", "music", "a river", "the city", "a star", "bread"]
    return [f"Tell me a short story about {topics[i % len(topics)]}." for i in range(n)]


def mask_id(binary, model):
    out = subprocess.run([binary, "inspect", model], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if "tokenizer.ggml.mask_token_id" in x)
    return int(line.split()[-1])


def percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin"))
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "reference" / "tiny-llada-q4km.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--requests", type=int, default=1, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--block-length", type=int, default=32)
    ap.add_argument("--caches", default="none,dual")
    ap.add_argument("--steps", type=int, default=0,
                    help="denoising steps per request (default 0: the model's default, max_tokens steps); "
                         "fewer keeps a run on a full-size model short")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    binary = str(Path(a.bin) / "dllm")
    clients = [int(c) for c in a.clients.split(",")]
    mid = mask_id(binary, a.model)
    result = {"bench": "serve", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "commit": commit(), "machine": machine(), "model": Path(a.model).name, "threads": a.threads,
              "max_tokens": a.max_tokens, "block_length": a.block_length, "steps": a.steps or None, "requests_per_client": a.requests,
              "note": a.note, "load_before": loadavg(), "modes": []}
    for cache in a.caches.split(","):
        fields = {"max_tokens": a.max_tokens, "block_length": a.block_length, "cache": cache}
        if a.steps:
            fields["steps"] = a.steps
        port = free_port()
        serve = [binary, "serve", "--model", a.model, "--port", str(port), "--threads", str(a.threads),
                 "--parallel", str(max(clients)), "--queue", str(max(clients) * a.requests)]
        proc = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 900  # a full-size model loads (and repacks) for a while
            while time.monotonic() < deadline:
                try:
                    if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            else:
                raise SystemExit(f"serve_bench: {' '.join(serve)} was not healthy within 900 s")
            mode = {"cache": cache, "serve_command": " ".join(serve), "waves": []}
            for c in clients:
                texts = prompts(c * a.requests)
                before = metric(port, "dllm_tokens_committed_total")
                passes0 = metric(port, "dllm_forward_passes_total")

                def client(i):
                    lat = []
                    for r in range(a.requests):
                        k = i * a.requests + r
                        body = {"messages": [{"role": "user", "content": texts[k]}], "seed": k, **fields}
                        lat.append(post(url + "/v1/chat/completions", body)[1])
                    return lat

                t0 = time.perf_counter()
                with concurrent.futures.ThreadPoolExecutor(c) as pool:
                    lats = [x for lat in pool.map(client, range(c)) for x in lat]
                wall = time.perf_counter() - t0
                tokens = metric(port, "dllm_tokens_committed_total") - before
                passes = metric(port, "dllm_forward_passes_total") - passes0
                mode["waves"].append({"clients": c, "requests": len(lats), "wall_s": wall, "tokens_committed": tokens,
                                      "tok_s": tokens / wall, "forward_passes": passes,
                                      "p50_s": percentile(lats, 0.5), "p95_s": percentile(lats, 0.95)})
                print(f"cache {cache}: {c} clients: {tokens / wall:.1f} tok/s, p50 {percentile(lats, 0.5):.2f} s",
                      file=sys.stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        # The same requests as the largest wave, one after another through `dllm run`.
        seq_tokens, seq_ms, runs = 0, 0.0, []
        texts = prompts(max(clients) * a.requests)
        for k, text in enumerate(texts):
            cmd = [binary, "run", "--model", a.model, "--prompt", text, "--json", "--threads", str(a.threads),
                   "--seed", str(k), "--max-tokens", str(a.max_tokens), "--block-length", str(a.block_length),
                   "--cache", cache] + (["--steps", str(a.steps)] if a.steps else [])
            out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            committed = sum(1 for t in out["generated"] if t != mid)
            seq_tokens += committed
            seq_ms += out["timings"]["generate_ms"]
            runs.append({"tokens_committed": committed, "generate_ms": out["timings"]["generate_ms"],
                         "steps_run": out["steps_run"]})
        mode["sequential"] = {"requests": len(runs), "tokens_committed": seq_tokens, "generate_s": seq_ms / 1000,
                              "tok_s": seq_tokens / (seq_ms / 1000), "run_command": " ".join(cmd), "runs": runs}
        for w in mode["waves"]:
            w["speedup_vs_sequential"] = w["tok_s"] / mode["sequential"]["tok_s"]
        print(f"cache {cache}: sequential {mode['sequential']['tok_s']:.1f} tok/s", file=sys.stderr)
        result["modes"].append(mode)
    result["load_after"] = loadavg()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"serve-{Path(a.model).stem}-{stamp}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
