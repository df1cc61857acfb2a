#!/usr/bin/env python3
"""Agreement of the approximate decoding modes with exact decoding, and their speed, in one interleaved run.

For every prompt of a small committed set (bench/eval/agreement-prompts.txt), --repeats times, runs
`dllm run --json --trace FILE` once per arm: "exact" (the reference sampler: only the --common flags, so
by default steps = max_tokens, one token per step) and approximate arms (default: --threshold 0.9;
--cache prefix; --cache dual; --threshold 0.9 --cache dual, the combination Fast-dLLM reports).

Interleaving: each (repeat, prompt) unit runs every arm once, exact included, in an order rotated by one
arm per unit (unit k starts with arm k mod n), so no arm always runs first or last while the shared
machine's load drifts; the order of each unit is stored.

Per run (from the --json report and the --trace lines):
  steps            = forward passes run (steps_run);
  tokens committed = positions decided (max_tokens minus the masks left after the last step; all of them
                     with --no-early-stop in --common, which makes the arms comparable token for token);
  ms per token     = generate_ms / tokens committed; ms per step = generate_ms / steps;
  wall ms          = the whole process (load included), and load_ms;
  commits per step = mean and max tokens committed per step; median forward and sample ms per step;
  cache steps      = trace `cache_refresh` counts: "full" (refresh: full forward, rewrites the cached K/V),
                     "window" (only the window against the cache), "none" (no cache); the median forward
                     ms of each kind, and for window steps the expected cost ratio window rows / canvas;
  threshold        = for arms with a threshold: steps whose most confident committed token reached it,
                     and the highest committed confidence seen.
Against the exact arm of the same unit: token agreement (positions where both answers hold the same token
/ the longer answer length; answers are token ids up to the first end token; both empty counts 1), exact
match, steps speedup (exact steps / arm steps, summed over units), wall speedup (generate_ms) and
ms-per-token speedup.

Writes bench/results/agreement-<model>-<utc>.json (every run, the summary, plain-language notes, machine,
commit, the command and each arm's `dllm run` command) and prints a table. On a random-weight model
(the tiny reference files, the synthetic 8B file) the softmax is nearly flat: a 0.9 threshold is never
reached, so threshold decoding commits exactly one token per step (one forward pass per token, like exact
decoding with steps = max_tokens), and agreement says only how often an approximation flips the argmax
there, not quality. The notes in the report say so whenever it happens.

Usage: bench/agreement.py --model M.gguf [--common "--max-tokens 64 --block-length 32 --no-early-stop"]
         [--threads T] [--arm NAME=FLAGS ...] [--prompts FILE] [--limit N] [--repeats R] [--out FILE]
"""
import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
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


def rotated(names, k):
    """The arm order of unit k: names rotated left by k mod len(names)."""
    s = k % len(names)
    return names[s:] + names[:s]


def flag_value(flags, name):
    """The value of the last `name V` or `name=V` in a flag list, or None."""
    v = None
    for i, f in enumerate(flags):
        if f == name and i + 1 < len(flags):
            v = flags[i + 1]
        elif f.startswith(name + "="):
            v = f.split("=", 1)[1]
    return v


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def trace_stats(lines, threshold):
    """Per-run figures from --trace lines (see the module doc); threshold: the run's, or None."""
    commits = [len(l["positions"]) for l in lines]
    kinds = [l.get("cache_refresh", "unknown") for l in lines]
    fwd = {}
    for l, k in zip(lines, kinds):
        fwd.setdefault(k, []).append(l["forward_ms"])
    s = {
        "commits_per_step_mean": statistics.mean(commits) if commits else 0.0,
        "commits_per_step_max": max(commits) if commits else 0,
        "median_sample_ms": statistics.median(l["sample_ms"] for l in lines) if lines else 0.0,
        "steps_committing_more_than_one": sum(1 for c in commits if c > 1),
        "cache_steps": {k: kinds.count(k) for k in sorted(set(kinds))},
        "median_forward_ms_by_cache_step": {k: statistics.median(v) for k, v in sorted(fwd.items())},
    }
    if threshold is not None:
        tops = [max(c for c in l["confidences"] if c is not None) for l in lines
                if any(c is not None for c in l["confidences"])]
        s["threshold"] = threshold
        s["steps_reaching_threshold"] = sum(1 for t in tops if t >= threshold)
        s["max_committed_confidence"] = max(tops) if tops else None
    return s


def window_rows(lines, n_prompt, canvas, block_length, mode, shift):
    """Rows each window step of a run recomputes (src/diffusion/sampler.h CacheMode).

    block_length: the block the windows start at (LLaDA --block-length; Dream: the threshold block, or
    the whole answer); mode: "prefix" (block start to canvas end) or "dual" (the block); shift: Dream's
    logit shift (the window starts one row earlier).
    """
    rows = []
    for l in lines:
        if l.get("cache_refresh") != "window":
            continue
        begin = n_prompt + l["block"] * block_length - (1 if shift else 0)
        end = canvas if mode == "prefix" else min(canvas, n_prompt + (l["block"] + 1) * block_length)
        rows.append(end - max(0, begin))
    return rows


def run_one(binary, model, prompt, flags, trace_path):
    cmd = [str(binary), "run", "--model", str(model), "--prompt", prompt, "--json", "--trace", str(trace_path)] + flags
    load0 = loadavg()
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall_ms = (time.monotonic() - t0) * 1000
    if r.returncode != 0:
        raise RuntimeError("dllm run failed (exit %d): %s\ncommand: %s" %
                           (r.returncode, r.stderr.strip()[-500:], shlex.join(cmd)))
    return json.loads(r.stdout), read_trace(trace_path), wall_ms, (load0, loadavg())


def effective_block(flags, j):
    """The block length the run used, as `dllm run` chooses it (src/cli/run_pipeline.cpp)."""
    bl = flag_value(flags, "--block-length")
    m = j["max_tokens"]
    if j["arch"] == "dream":
        return int(bl) if bl and "threshold" in j["sampler"] and int(bl) > 0 else m
    if bl:
        return int(bl)
    return 32 if m % 32 == 0 else m


def record(j, lines, wall_ms, loads, flags):
    steps = max(1, j["steps_run"])
    committed = j["max_tokens"] - (lines[-1]["masks_left"] if lines else j["max_tokens"])
    m = re.search(r"threshold ([0-9.eE+-]+)", j["sampler"])
    threshold = float(m.group(1)) if m else None
    m = re.search(r"cache (prefix|dual)", j["sampler"])
    mode = m.group(1) if m else None
    n_prompt = j["n_prompt_tokens"]
    canvas = n_prompt + j["max_tokens"]
    block = effective_block(flags, j)
    shift = j["arch"] == "dream"
    rec = {"tokens": j["tokens"], "text": j["text"], "steps_run": j["steps_run"], "tokens_committed": committed,
           "generate_ms": j["timings"]["generate_ms"], "wall_ms": wall_ms, "load_ms": j["timings"]["load_ms"],
           "ms_per_token": j["timings"]["generate_ms"] / max(1, committed),
           "ms_per_step": j["timings"]["generate_ms"] / steps, "sampler": j["sampler"],
           "n_prompt_tokens": n_prompt, "canvas": canvas, "block_length": block,
           "loadavg_before_after": list(loads),
           "median_forward_ms": statistics.median(j["timings"]["forward_ms"]) if j["timings"]["forward_ms"] else 0,
           "forward_ms": j["timings"]["forward_ms"],
           "cache_refresh": [l.get("cache_refresh") for l in lines],
           "commits": [len(l["positions"]) for l in lines]}
    rec.update(trace_stats(lines, threshold))
    if mode:
        rows = window_rows(lines, n_prompt, canvas, block, mode, shift)
        rec["window_rows_mean"] = statistics.mean(rows) if rows else None
        rec["expected_window_over_full_cost"] = statistics.mean(rows) / canvas if rows else None
    return rec


def _pooled_median(rows, kind):
    v = [ms for r in rows for ms, k in zip(r["forward_ms"], r["cache_refresh"]) if k == kind]
    return statistics.median(v) if v else None


def summarize(units, arm_names):
    out = {}
    for name in ["exact"] + arm_names:
        rows = [u["arms"][name] for u in units]
        s = {"runs": len(rows),
             "mean_steps": statistics.mean(r["steps_run"] for r in rows),
             "mean_tokens_committed": statistics.mean(r["tokens_committed"] for r in rows),
             "mean_commits_per_step": (sum(r["tokens_committed"] for r in rows) /
                                       max(1, sum(r["steps_run"] for r in rows))),
             "mean_generate_ms": statistics.mean(r["generate_ms"] for r in rows),
             "mean_wall_ms": statistics.mean(r["wall_ms"] for r in rows),
             "ms_per_token": (sum(r["generate_ms"] for r in rows) /
                              max(1, sum(r["tokens_committed"] for r in rows))),
             "mean_ms_per_step": statistics.mean(r["ms_per_step"] for r in rows),
             "mean_median_forward_ms": statistics.mean(r["median_forward_ms"] for r in rows),
             "mean_median_sample_ms": statistics.mean(r["median_sample_ms"] for r in rows)}
        kinds = {k for r in rows for k in r["cache_refresh"]}
        for k in sorted(kinds):
            s["median_forward_ms_%s_steps" % k] = _pooled_median(rows, k)
            s["%s_steps" % k] = sum(r["cache_refresh"].count(k) for r in rows)
        if "full" in kinds and "window" in kinds:
            s["measured_window_over_full_forward"] = (s["median_forward_ms_window_steps"] /
                                                      s["median_forward_ms_full_steps"])
            exp = [r["expected_window_over_full_cost"] for r in rows if r.get("expected_window_over_full_cost")]
            s["expected_window_over_full_cost"] = statistics.mean(exp) if exp else None
        if any("threshold" in r for r in rows):
            s["threshold"] = rows[0]["threshold"]
            s["steps_reaching_threshold"] = sum(r["steps_reaching_threshold"] for r in rows)
            confs = [r["max_committed_confidence"] for r in rows if r["max_committed_confidence"] is not None]
            s["max_committed_confidence"] = max(confs) if confs else None
        if name != "exact":
            ex = [u["arms"]["exact"] for u in units]
            s["mean_token_agreement"] = statistics.mean(r["token_agreement"] for r in rows)
            s["min_token_agreement"] = min(r["token_agreement"] for r in rows)
            s["exact_match_share"] = statistics.mean(1.0 if r["exact_match"] else 0.0 for r in rows)
            s["steps_speedup"] = sum(r["steps_run"] for r in ex) / max(1, sum(r["steps_run"] for r in rows))
            s["wall_speedup"] = (sum(r["generate_ms"] for r in ex) /
                                 max(1e-9, sum(r["generate_ms"] for r in rows)))
            s["ms_per_token_speedup"] = out["exact"]["ms_per_token"] / max(1e-9, s["ms_per_token"])
        out[name] = s
    return out


def notes_for(summary):
    """Plain-language statements the figures need beside them (threshold never reached, and so on)."""
    notes = []
    for name, s in summary.items():
        if "threshold" in s and s["steps_reaching_threshold"] == 0:
            notes.append(
                "%s: the threshold %g was never reached (highest confidence of a committed token: %.3g), so "
                "every step committed exactly one token, the most confident: %.2f tokens per step, one forward "
                "pass per committed token, as many as exact decoding with one token per step. None of its "
                "ms/token difference from exact comes from parallel decoding: it comes from the other per-step "
                "costs (a threshold step scores only the current block's masked rows, where Dream's exact "
                "schedule scores every masked row of the answer; the cache, if any) and from noise. Fast-dLLM's "
                "parallel-decoding speedup needs confident logits, which this model does not give (random weights or a weak model)." %
                (name, s["threshold"], s["max_committed_confidence"] or 0.0, s["mean_commits_per_step"]))
        if "measured_window_over_full_forward" in s:
            notes.append(
                "%s: a window step's forward took %.2f of a refresh step's (medians: %.1f vs %.1f ms); the "
                "window / canvas row ratio is %.2f (the cost a step would have if it scaled with rows)." %
                (name, s["measured_window_over_full_forward"], s["median_forward_ms_window_steps"],
                 s["median_forward_ms_full_steps"], s["expected_window_over_full_cost"] or 0.0))
    return notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--common", default="--max-tokens 64 --block-length 32 --no-early-stop",
                    help="flags of every arm (the exact arm gets only these)")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=FLAGS",
                    help="an approximate arm (repeatable); default: threshold, prefix, dual, threshold+dual")
    ap.add_argument("--prompts", default=str(DEFAULT_PROMPTS))
    ap.add_argument("--limit", type=int, default=0, help="first N prompts only")
    ap.add_argument("--repeats", type=int, default=1, help="runs of every (prompt, arm); the order rotates")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--binary", default=str(ROOT / "build" / "bin" / "dllm"))
    ap.add_argument("--out", default="")
    ap.add_argument("--label", default="", help="free text stored in the report (e.g. what the run is for)")
    args = ap.parse_args(argv)

    arms = [tuple(a.split("=", 1)) for a in args.arm] if args.arm else DEFAULT_ARMS
    for a in arms:
        if len(a) != 2 or not a[0] or a[0] == "exact":
            ap.error("--arm takes NAME=FLAGS with a name other than 'exact'")
    if len({n for n, _ in arms}) != len(arms):
        ap.error("--arm names must be distinct")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    prompts = [l.rstrip("\n") for l in open(args.prompts, encoding="utf-8") if l.strip()]
    if args.limit:
        prompts = prompts[:args.limit]
    common = shlex.split(args.common)
    if args.threads:
        common += ["--threads", str(args.threads)]
    flags = {"exact": common} | {n: common + shlex.split(f) for n, f in arms}
    names = ["exact"] + [n for n, _ in arms]

    units = []
    with tempfile.TemporaryDirectory(prefix="dllm-agreement-") as tmp:
        trace = Path(tmp) / "trace.jsonl"
        for rep in range(args.repeats):
            for i, prompt in enumerate(prompts):
                order = rotated(names, len(units))
                unit = {"repeat": rep, "prompt_index": i, "prompt": prompt, "order": order, "arms": {}}
                for name in order:
                    j, lines, wall_ms, loads = run_one(args.binary, args.model, prompt, flags[name], trace)
                    unit["arms"][name] = record(j, lines, wall_ms, loads, flags[name])
                exact = unit["arms"]["exact"]
                line = "repeat %d prompt %d (order %s): exact %d steps %.0f ms" % (
                    rep, i, ",".join(order), exact["steps_run"], exact["generate_ms"])
                for name in names[1:]:
                    r = unit["arms"][name]
                    r["token_agreement"] = token_agreement(exact["tokens"], r["tokens"])
                    r["exact_match"] = r["tokens"] == exact["tokens"]
                    line += " | %s %.2f agree, %d steps %.0f ms" % (name, r["token_agreement"], r["steps_run"],
                                                                    r["generate_ms"])
                print(line, flush=True)
                units.append(unit)

    summary = summarize(units, names[1:])
    notes = notes_for(summary)
    report = {
        "what": "token agreement of approximate decoding with exact decoding, and ms/token, arms interleaved",
        "label": args.label,
        "model": str(args.model),
        "common": shlex.join(common),
        "arms": {"exact": ""} | {n: f for n, f in arms},
        "commands": {n: shlex.join([str(args.binary), "run", "--model", str(args.model), "--prompt", "<prompt>",
                                    "--json", "--trace", "<file>"] + flags[n]) for n in names},
        "interleaving": "each (repeat, prompt) unit runs every arm once; unit k starts at arm k mod %d" % len(names),
        "repeats": args.repeats,
        "command": shlex.join([sys.executable] + (sys.argv if argv is None else [__file__] + list(argv))),
        "machine": machine(),
        "commit": git_commit(),
        "omp_env": {k: v for k, v in os.environ.items() if k.startswith("OMP_")},
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "notes": notes,
        "summary": summary,
        "units": units,
    }
    out = Path(args.out) if args.out else (
        ROOT / "bench" / "results" /
        ("agreement-%s-%s.json" % (Path(args.model).stem, datetime.datetime.now(datetime.timezone.utc)
                                   .strftime("%Y%m%dT%H%M%SZ"))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")

    print("%-16s %7s %7s %7s %8s %10s %10s %8s %8s %9s" % (
        "arm", "agree", "exact=", "steps", "tok/step", "ms/step", "ms/token", "steps x", "wall x", "ms/tok x"))
    for name in names:
        s = summary[name]
        ex = name == "exact"
        print("%-16s %7s %7s %7.1f %8.2f %10.1f %10.1f %8s %8s %9s" % (
            name, "-" if ex else "%.3f" % s["mean_token_agreement"], "-" if ex else "%.2f" % s["exact_match_share"],
            s["mean_steps"], s["mean_commits_per_step"], s["mean_ms_per_step"], s["ms_per_token"],
            "-" if ex else "%.2f" % s["steps_speedup"], "-" if ex else "%.2f" % s["wall_speedup"],
            "-" if ex else "%.2f" % s["ms_per_token_speedup"]))
    for n in notes:
        print("note: " + n)
    print("report: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
