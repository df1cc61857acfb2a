#!/usr/bin/env python3
"""Agreement of the approximate decoding modes with exact decoding, and their speedup.

For every prompt of a small committed set (bench/eval/agreement-prompts.txt) runs `dllm run --json` once
per arm: "exact" (the reference sampler: --steps as given, no threshold, no cache) and approximate arms
(default: --threshold 0.9; --cache prefix; --cache dual; --threshold 0.9 --cache dual). For each arm it
reports, against the exact arm on the same prompt:
  token agreement  = positions i where both answers hold the same token / max(len exact, len arm)
                     (the answers are the token ids up to the first end token; both empty counts 1);
  exact match      = the whole answer is the same token sequence;
  steps speedup    = exact steps_run / arm steps_run;
  wall speedup     = exact generate_ms / arm generate_ms;
  ms per token     = generate_ms / max_tokens (canvas positions decided; use --no-early-stop in
                     --common to make every arm decide them all) and ms per step.
Arms run interleaved per prompt (exact, arm 1, arm 2, ... then the next prompt). Writes
bench/results/agreement-<model>-<utc>.json (per prompt and arm, the summary, machine, commit, commands)
and prints a table. Agreement on a random-weight model (the tiny reference files, the synthetic 8B
file) says only how often the approximations change the argmax there; it is not a quality figure.

Usage: bench/agreement.py --model M.gguf [--common "--max-tokens 64 --block-length 32"] [--threads T]
         [--arm NAME=FLAGS ...] [--prompts FILE] [--limit N] [--out FILE]
"""
import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_gsm8k import git_commit, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PROMPTS = ROOT / "bench" / "eval" / "agreement-prompts.txt"
DEFAULT_ARMS = [
    ("threshold", "--threshold 0.9"),
    ("prefix", "--cache prefix"),
    ("dual", "--cache dual"),
    ("threshold+dual", "--threshold 0.9 --cache dual"),
]


def token_agreement(exact, other):
    """Share of positions where two answers (token id lists) agree, over the longer length."""
    n = max(len(exact), len(other))
    if n == 0:
        return 1.0
    same = sum(1 for a, b in zip(exact, other) if a == b)
    return same / n


def run_one(binary, model, prompt, flags):
    cmd = [str(binary), "run", "--model", str(model), "--prompt", prompt, "--json"] + flags
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall_ms = (time.monotonic() - t0) * 1000
    if r.returncode != 0:
        raise RuntimeError("dllm run failed (exit %d): %s\ncommand: %s" %
                           (r.returncode, r.stderr.strip()[-500:], shlex.join(cmd)))
    return json.loads(r.stdout), wall_ms


def record(j, wall_ms):
    steps = max(1, j["steps_run"])
    return {"tokens": j["tokens"], "text": j["text"], "steps_run": j["steps_run"],
            "generate_ms": j["timings"]["generate_ms"], "wall_ms": wall_ms,
            "ms_per_token": j["timings"]["generate_ms"] / max(1, j["max_tokens"]),
            "ms_per_step": j["timings"]["generate_ms"] / steps, "sampler": j["sampler"],
            "median_forward_ms": statistics.median(j["timings"]["forward_ms"]) if j["timings"]["forward_ms"] else 0,
            "forward_ms": j["timings"]["forward_ms"]}


def summarize(per_prompt, arm_names):
    out = {}
    for name in ["exact"] + arm_names:
        rows = [p[name] for p in per_prompt]
        s = {"mean_steps": statistics.mean(r["steps_run"] for r in rows),
             "mean_generate_ms": statistics.mean(r["generate_ms"] for r in rows),
             "mean_ms_per_token": statistics.mean(r["ms_per_token"] for r in rows),
             "mean_ms_per_step": statistics.mean(r["ms_per_step"] for r in rows),
             "mean_median_forward_ms": statistics.mean(r["median_forward_ms"] for r in rows)}
        if name != "exact":
            s["mean_token_agreement"] = statistics.mean(r["token_agreement"] for r in rows)
            s["min_token_agreement"] = min(r["token_agreement"] for r in rows)
            s["exact_match_share"] = statistics.mean(1.0 if r["exact_match"] else 0.0 for r in rows)
            s["steps_speedup"] = (sum(p["exact"]["steps_run"] for p in per_prompt) /
                                  max(1, sum(r["steps_run"] for r in rows)))
            s["wall_speedup"] = (sum(p["exact"]["generate_ms"] for p in per_prompt) /
                                 max(1e-9, sum(r["generate_ms"] for r in rows)))
        out[name] = s
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--common", default="--max-tokens 64 --block-length 32",
                    help="flags of every arm (the exact arm gets only these)")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=FLAGS",
                    help="an approximate arm (repeatable); default: threshold, prefix, dual, threshold+dual")
    ap.add_argument("--prompts", default=str(DEFAULT_PROMPTS))
    ap.add_argument("--limit", type=int, default=0, help="first N prompts only")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--binary", default=str(ROOT / "build" / "bin" / "dllm"))
    ap.add_argument("--out", default="")
    ap.add_argument("--label", default="", help="free text stored in the report (e.g. what the run is for)")
    args = ap.parse_args(argv)

    arms = [tuple(a.split("=", 1)) for a in args.arm] if args.arm else DEFAULT_ARMS
    for a in arms:
        if len(a) != 2 or not a[0] or a[0] == "exact":
            ap.error("--arm takes NAME=FLAGS with a name other than 'exact'")
    prompts = [l.rstrip("\n") for l in open(args.prompts, encoding="utf-8") if l.strip()]
    if args.limit:
        prompts = prompts[:args.limit]
    common = shlex.split(args.common)
    if args.threads:
        common += ["--threads", str(args.threads)]

    per_prompt = []
    for i, prompt in enumerate(prompts):
        entry = {"prompt": prompt}
        exact = record(*run_one(args.binary, args.model, prompt, common))
        entry["exact"] = exact
        line = "prompt %d: exact %d steps %.0f ms" % (i, exact["steps_run"], exact["generate_ms"])
        for name, flags in arms:
            r = record(*run_one(args.binary, args.model, prompt, common + shlex.split(flags)))
            r["token_agreement"] = token_agreement(exact["tokens"], r["tokens"])
            r["exact_match"] = r["tokens"] == exact["tokens"]
            entry[name] = r
            line += " | %s %.2f agree, %d steps %.0f ms" % (name, r["token_agreement"], r["steps_run"],
                                                            r["generate_ms"])
        print(line, flush=True)
        per_prompt.append(entry)

    names = [n for n, _ in arms]
    summary = summarize(per_prompt, names)
    report = {
        "what": "token agreement of approximate decoding with exact decoding, and speedup",
        "label": args.label,
        "model": str(args.model),
        "common": shlex.join(common),
        "arms": {"exact": ""} | {n: f for n, f in arms},
        "command": shlex.join([sys.executable] + sys.argv),
        "machine": machine(),
        "commit": git_commit(),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        "prompts": per_prompt,
    }
    out = Path(args.out) if args.out else (
        ROOT / "bench" / "results" /
        ("agreement-%s-%s.json" % (Path(args.model).stem, datetime.datetime.now(datetime.timezone.utc)
                                   .strftime("%Y%m%dT%H%M%SZ"))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")

    print("%-16s %9s %9s %11s %11s %9s %9s %9s" % ("arm", "agree", "exact=", "steps", "ms/step", "ms/token",
                                                 "steps x", "wall x"))
    for name in ["exact"] + names:
        s = summary[name]
        print("%-16s %9s %9s %11.1f %11.1f %9.1f %9s %9s" % (
            name, "%.3f" % s["mean_token_agreement"] if name != "exact" else "-",
            "%.2f" % s["exact_match_share"] if name != "exact" else "-", s["mean_steps"], s["mean_ms_per_step"],
            s["mean_ms_per_token"], "%.2f" % s["steps_speedup"] if name != "exact" else "-",
            "%.2f" % s["wall_speedup"] if name != "exact" else "-"))
    print("report: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
