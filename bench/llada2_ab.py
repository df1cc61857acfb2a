#!/usr/bin/env python3
"""Interleaved A/B of two dllm builds on LLaDA2's 32-row block step (bench/llada2_bench.py's command with
--max-tokens 64): B A B A ..., each run's step time the median of its 32-row passes (`forward_ms` of
--json, every step but each block's first, which also folds the finished block in). Writes
bench/results/llada2-<name>-ab-<date>.json with the per-run medians, the per-pair ratios A / B and their
median, each run's token hash (the two builds must give the same tokens), both builds' commits and the
machine. Run it on an otherwise idle machine.

Usage: bench/llada2_ab.py --a BIN_A --b BIN_B --name NAME --what "what A changes" [--model FILE]
       [--pairs 4] [--threads 2] [--env-a KEY=VALUE ...] [--env-b KEY=VALUE ...] [--busy]
--env-a / --env-b set environment variables for one side only (the same binary twice then compares
settings, e.g. OMP_WAIT_POLICY=passive against GOMP_SPINCOUNT=10000); --busy keeps one core busy with
another process (`yes > /dev/null`) during every run, a shared machine's case.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_bench as e2e  # noqa: E402
import llada2_bench as l2  # noqa: E402


def run(binary, model, prompt, threads, env):
    cmd = [binary, "run", "--model", str(model), "--no-chat", "--prompt", prompt, "--max-tokens", "64",
           "--block-length", "32", "--steps", str(l2.STEPS_PER_BLOCK), "--threshold", "1", "--temperature", "0",
           "--no-early-stop", "--threads", str(threads), "--cache", "exact", "--json"]
    j = json.loads(e2e.sh(cmd, env=env).stdout)
    steps = l2.block_step_times(j["timings"]["forward_ms"])
    return (statistics.median(steps), hashlib.sha256(json.dumps(j["tokens"]).encode()).hexdigest()[:12],
            " ".join(c if c != prompt else "\"<BOS + 'the' x 511>\"" for c in ["BIN", *cmd[1:]]))


def version_commit(binary):
    """The commit `BINARY --version` names (the binary may be a copy under another name)."""
    try:
        out = e2e.sh([binary, "--version"]).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"
    return (re.findall(r"commit (\S+)\)", out) or ["unknown"])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="dllm binary A (the change)")
    ap.add_argument("--b", required=True, help="dllm binary B (the base)")
    ap.add_argument("--name", required=True, help="a short name for the results file")
    ap.add_argument("--what", required=True, help="what A changes against B")
    ap.add_argument("--model", default="/work/synth/llada2-mini-synth.gguf")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--env-a", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--env-b", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--busy", action="store_true", help="keep one core busy with `yes > /dev/null`")
    a = ap.parse_args()
    envs = {side: dict(os.environ, **dict(kv.split("=", 1) for kv in extra))
            for side, extra in (("A", a.env_a), ("B", a.env_b))}
    prompt = " ".join(["the"] * 511)
    med = {"A": [], "B": []}
    tok = {"A": set(), "B": set()}
    command = ""
    busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if a.busy else None
    try:
        for _ in range(a.pairs):
            for side, binary in (("B", a.b), ("A", a.a)):
                m, h, command = run(binary, a.model, prompt, a.threads, envs[side])
                med[side].append(round(m, 2))
                tok[side].add(h)
                print(f"{side} {m:.1f} ms {h}", file=sys.stderr)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    ratios = [round(x / y, 4) for x, y in zip(med["A"], med["B"])]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = {
        "what": f"LLaDA2 32-row block steps with the exact cache: A ({a.what}) against B, interleaved B A B A ...",
        "command": command,
        "threads": a.threads,
        "env": {"A": a.env_a, "B": a.env_b},
        "busy_core": "one `yes > /dev/null` process ran during every run" if a.busy else None,
        "commits": {k: version_commit(b) for k, b in (("A", a.a), ("B", a.b))},
        "step_ms_median_per_run": med,
        "tokens_sha256": {k: sorted(v) for k, v in tok.items()},
        "same_tokens": tok["A"] == tok["B"] and len(tok["A"]) == 1,
        "ratio_A_over_B_per_pair": ratios,
        "ratio_A_over_B_median": statistics.median(ratios),
        "reading": "step: median over a run's 32-row passes (forward_ms; the prompt pass and the block's fold "
                   "pass left out)",
        "date_utc": date,
        "machine": e2e.machine(),
    }
    path = e2e.ROOT / "bench" / "results" / f"llada2-{a.name}-ab-{date}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"A/B median ratio {out['ratio_A_over_B_median']:.3f}, same tokens {out['same_tokens']}: {path}")


if __name__ == "__main__":
    main()
