#!/usr/bin/env python3
"""End-to-end denoising-step benchmark on the synthetic LLaDA-8B-shaped file.

Runs `dllm run --json` on a canvas of prompt + 128 masks for a few steps and records ms/step (median
over steps), load time and peak RSS in bench/results/e2e-<host>-<utc date>.json with the machine, the
commit and the exact command. When $LLAMA_DIFFUSION_CLI names a llama.cpp `llama-diffusion-cli`, it is
run on the same file, canvas and threads, interleaved with ours (A B A B ...), and its ms/step is
recorded beside ours. Speed does not depend on the weight values, so random valid blocks suffice.

Usage: bench/e2e_bench.py [--model PATH] [--threads 2] [--prompt-tokens 13] [--gen 128]
                          [--steps 4] [--repeats 2] [--isa NAME]
"""
import argparse
import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "build" / "bin"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def machine():
    model = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu": model, "cores": os.cpu_count(),
            "kernel": platform.release()}


def commit():
    try:
        rev = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def ensure_model(path: Path, arch: str):
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tool = BIN / "make_synthetic_gguf"
    if not tool.exists():
        sys.exit(f"ERROR: {tool} not found: build first (./dllm test or ninja -C build make_synthetic_gguf)")
    print(f"making {path} ...", file=sys.stderr)
    sh([str(tool), "--arch", arch, "--out", str(path)])


def prompt_with_n_tokens(model: Path, n: int) -> str:
    """A raw prompt (no chat template) that tokenizes to exactly n ids, BOS included."""
    words = []
    for _ in range(4 * n):
        text = " ".join(words)
        out = sh([str(BIN / "dllm"), "tokenize", "--model", str(model), "--no-chat", "--prompt", text]).stdout
        count = len(out.split())
        if count == n:
            return text
        if count > n:
            break
        words.append("the")
    sys.exit(f"ERROR: could not build a prompt of exactly {n} tokens")


def run_ours(cmd):
    out = sh(cmd).stdout
    j = json.loads(out)
    t = j["timings"]
    steps = t.get("step_ms") or []
    return {"step_ms": steps, "median_step_ms": statistics.median(steps) if steps else None,
            "load_ms": t.get("load_ms"), "peak_rss_bytes": j.get("peak_rss_bytes"),
            "steps_run": j.get("steps_run")}


def run_llama(cli, model, prompt, canvas, steps, threads):
    cmd = [cli, "-m", str(model), "-p", prompt, "-ub", str(canvas), "-b", str(canvas), "-c", str(canvas),
           "-t", str(threads), "--diffusion-steps", str(steps), "--diffusion-block-length", "32",
           "--temp", "0", "--top-k", "1", "--seed", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"time per step:\s*([0-9.]+)\s*ms", p.stderr + p.stdout)
    return cmd, (float(m.group(1)) if m else None), p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=ROOT / "bench" / "tmp" / "llada-8b-synth.gguf")
    ap.add_argument("--arch", default="llada")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=13)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--isa", default=None)
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more flags for dllm run")
    a = ap.parse_args()

    ensure_model(a.model, a.arch)
    prompt = prompt_with_n_tokens(a.model, a.prompt_tokens)
    canvas = a.prompt_tokens + a.gen
    ours_cmd = [str(BIN / "dllm"), "run", "--model", str(a.model), "--no-chat", "--prompt", prompt,
                "--max-tokens", str(a.gen), "--steps", str(a.steps), "--threads", str(a.threads),
                "--no-early-stop", "--json"]
    if a.isa:
        ours_cmd += ["--isa", a.isa]
    ours_cmd += a.extra
    llama = os.environ.get("LLAMA_DIFFUSION_CLI")

    ours, theirs, llama_cmd = [], [], None
    for _ in range(a.repeats):
        ours.append(run_ours(ours_cmd))
        print(f"dllm: median {ours[-1]['median_step_ms']:.1f} ms/step", file=sys.stderr)
        if llama:
            llama_cmd, ms, rc = run_llama(llama, a.model, prompt, canvas, a.steps, a.threads)
            theirs.append(ms)
            print(f"llama-diffusion-cli: {ms} ms/step (rc {rc})", file=sys.stderr)

    all_steps = [s for r in ours for s in r["step_ms"]]
    result = {
        "kind": "e2e",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(), "commit": commit(), "command": " ".join(ours_cmd),
        "model": a.model.name, "model_bytes": a.model.stat().st_size, "arch": a.arch,
        "threads": a.threads, "prompt_tokens": a.prompt_tokens, "canvas": canvas, "steps": a.steps,
        "runs": ours, "median_step_ms": statistics.median(all_steps),
        "load_ms": statistics.median([r["load_ms"] for r in ours if r["load_ms"] is not None] or [0]),
        "peak_rss_bytes": max((r["peak_rss_bytes"] or 0) for r in ours),
    }
    if llama:
        good = [t for t in theirs if t is not None]
        result["llama_cpp"] = {"command": " ".join(llama_cmd or []), "step_ms": theirs,
                               "median_step_ms": statistics.median(good) if good else None}
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = result["date"].replace(":", "").replace("-", "")
    out = out_dir / f"e2e-{a.arch}-c{canvas}-t{a.threads}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(out)


if __name__ == "__main__":
    main()
