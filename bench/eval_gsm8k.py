#!/usr/bin/env python3
"""GSM8K quality harness: two sampler settings ("arms") compared problem by problem.

Runs `dllm run --json` on every problem of a GSM8K subset (default bench/eval/gsm8k-subset.jsonl, the
first 50 problems of the test set; see bench/eval/README.md) once per arm, A and B interleaved per
problem so that machine noise hits both alike, extracts the model's answer and scores it against the
reference. Writes a JSON report (every problem's text, answers, times; the summary; the machine,
commit and exact commands) under bench/results/ and prints a summary.

Prompt (chat template applied by `dllm run`): the question, a blank line, then
  "Solve the problem step by step. End with the final answer on its own line as '#### <number>'."

Scoring (sources in ../shared/notes/landscape.md section 4):
  reference: the text after '#### ', commas removed (openai/grade-school-math dataset.py);
  model: strict first: the first '#### N' (lm-eval gsm8k strict-match regex '#### (\\-?[0-9\\.\\,]+)'),
         else the last number in the text (lm-eval flexible-extract, OpenCompass gsm8k_postprocess);
         '$' and ',' removed, a trailing '.' dropped, compared as numbers (|pred - ref| < 1e-6).
Statistics on the paired outcomes (n problems; b = A right B wrong, c = A wrong B right):
  accuracy of each arm; difference B - A with a 95% interval by Newcombe's hybrid score method for
  paired proportions (Newcombe 1998, Stat Med 17:2635, method 10: Wilson score intervals of each
  accuracy combined with the phi correlation of the paired table, phi without continuity correction);
  McNemar's exact test: two-sided binomial p-value on the b + c discordant pairs,
  p = min(1, 2 * P[X <= min(b, c)]), X ~ Binomial(b + c, 1/2); mean generate time per problem.

Usage:
  bench/eval_gsm8k.py --model M.gguf --arm-a "--steps 256" --arm-b "--steps 256 --threshold 0.9" \\
      [--common "--max-tokens 256 --block-length 32"] [--limit N] [--threads T] [--out FILE]
The tiny reference models can run it (the harness's own test does), but their accuracy means nothing.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SUBSET = ROOT / "bench" / "eval" / "gsm8k-subset.jsonl"
PROMPT_SUFFIX = ("Solve the problem step by step. End with the final answer on its own line as "
                 "'#### <number>'.")

STRICT_RE = re.compile(r"#### (\-?[0-9\.\,]+)")
NUMBER_RE = re.compile(r"-?[$0-9.,]*[0-9]")


# ---- scoring -------------------------------------------------------------------------------------

def normalize_number(s):
    """'$1,234.' -> 1234.0; None when no number is left."""
    s = s.replace(",", "").replace("$", "").strip()
    s = s.rstrip(".")
    if not s or s in ("-", "."):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def reference_answer(answer_field):
    """GSM8K gold answer: the text after '#### ', commas removed, as a number."""
    if "#### " not in answer_field:
        raise ValueError("reference answer has no '#### ': " + answer_field[-80:])
    return normalize_number(answer_field.split("#### ")[-1].strip())


def extract_answer(text):
    """(number or None, method): strict '#### N' first, else the last number in the text."""
    m = STRICT_RE.search(text)
    if m:
        v = normalize_number(m.group(1))
        if v is not None:
            return v, "strict"
    numbers = [normalize_number(x) for x in NUMBER_RE.findall(text)]
    numbers = [x for x in numbers if x is not None]
    if numbers:
        return numbers[-1], "last_number"
    return None, "none"


def is_correct(pred, ref):
    return pred is not None and ref is not None and abs(pred - ref) < 1e-6


def mcnemar_exact(b, c):
    """Two-sided exact McNemar p-value for b and c discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def wilson(x, n, z=1.959963984540054):
    """Wilson score interval (lower, upper) for x successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = x / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lower = 0.0 if x == 0 else max(0.0, centre - half)  # exact at the edges (rounding gives 1 - 1e-16)
    upper = 1.0 if x == n else min(1.0, centre + half)
    return lower, upper


def paired_table(correct_a, correct_b):
    """(both, a_only, b_only, neither) counts of paired booleans."""
    both = sum(1 for x, y in zip(correct_a, correct_b) if x and y)
    a_only = sum(1 for x, y in zip(correct_a, correct_b) if x and not y)
    b_only = sum(1 for x, y in zip(correct_a, correct_b) if y and not x)
    neither = sum(1 for x, y in zip(correct_a, correct_b) if not x and not y)
    return both, a_only, b_only, neither


def newcombe_paired_diff(both, a_only, b_only, neither, z=1.959963984540054):
    """Difference accB - accA and its 95% interval (Newcombe 1998, method 10)."""
    n = both + a_only + b_only + neither
    if n == 0:
        return 0.0, -1.0, 1.0
    p_a = (both + a_only) / n
    p_b = (both + b_only) / n
    l_a, u_a = wilson(both + a_only, n, z)
    l_b, u_b = wilson(both + b_only, n, z)
    # phi: correlation of the two arms' outcomes over the paired 2x2 table; 0 when a margin is empty.
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    phi = (both * neither - a_only * b_only) / math.sqrt(margins) if margins > 0 else 0.0
    d = p_b - p_a
    lower = d - math.sqrt(max(0.0, (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2))
    upper = d + math.sqrt(max(0.0, (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2))
    return d, max(-1.0, lower), min(1.0, upper)


def summarize(records_a, records_b):
    """Summary dict from two lists of per-problem records ({'correct', 'generate_ms', ...})."""
    ca = [r["correct"] for r in records_a]
    cb = [r["correct"] for r in records_b]
    both, a_only, b_only, neither = paired_table(ca, cb)
    n = len(ca)
    d, lo, hi = newcombe_paired_diff(both, a_only, b_only, neither)
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {
        "n": n,
        "accuracy_a": sum(ca) / n if n else 0.0,
        "accuracy_b": sum(cb) / n if n else 0.0,
        "diff_b_minus_a": d,
        "diff_ci95": [lo, hi],
        "ci_method": "Newcombe 1998 method 10 (paired, Wilson score + phi, no continuity correction)",
        "table": {"both": both, "a_only": a_only, "b_only": b_only, "neither": neither},
        "mcnemar_exact_p": mcnemar_exact(a_only, b_only),
        "mean_generate_ms_a": mean([r["generate_ms"] for r in records_a]),
        "mean_generate_ms_b": mean([r["generate_ms"] for r in records_b]),
        "mean_steps_a": mean([r["steps_run"] for r in records_a]),
        "mean_steps_b": mean([r["steps_run"] for r in records_b]),
        "strict_share_a": mean([r["method"] == "strict" for r in records_a]),
        "strict_share_b": mean([r["method"] == "strict" for r in records_b]),
    }


# ---- running -------------------------------------------------------------------------------------

def load_problems(path, limit):
    problems = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                problems.append(json.loads(line))
    return problems[:limit] if limit else problems


def make_prompt(question):
    return question.strip() + "\n\n" + PROMPT_SUFFIX


def run_one(binary, model, prompt, flags):
    cmd = [str(binary), "run", "--model", str(model), "--prompt", prompt, "--json"] + flags
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall_ms = (time.monotonic() - t0) * 1000
    if r.returncode != 0:
        raise RuntimeError("dllm run failed (exit %d): %s\ncommand: %s" %
                           (r.returncode, r.stderr.strip()[-500:], shlex.join(cmd)))
    j = json.loads(r.stdout)
    return j, wall_ms


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count()}


def git_commit():
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="GGUF file (or anything `dllm run --model` accepts)")
    ap.add_argument("--arm-a", required=True, help='flags of arm A, e.g. "--steps 256"')
    ap.add_argument("--arm-b", required=True, help='flags of arm B, e.g. "--steps 256 --threshold 0.9"')
    ap.add_argument("--common", default="", help="flags given to both arms (e.g. --max-tokens 256)")
    ap.add_argument("--subset", default=str(DEFAULT_SUBSET), help="GSM8K jsonl (question, answer)")
    ap.add_argument("--limit", type=int, default=0, help="first N problems only (0: all)")
    ap.add_argument("--threads", type=int, default=0, help="--threads for dllm (0: its default)")
    ap.add_argument("--binary", default=str(ROOT / "build" / "bin" / "dllm"))
    ap.add_argument("--out", default="", help="report path (default bench/results/gsm8k-<model>-<utc>.json)")
    ap.add_argument("--quiet", action="store_true", help="no per-problem lines")
    args = ap.parse_args(argv)

    problems = load_problems(args.subset, args.limit)
    common = shlex.split(args.common)
    if args.threads:
        common += ["--threads", str(args.threads)]
    arms = {"a": common + shlex.split(args.arm_a), "b": common + shlex.split(args.arm_b)}
    records = {"a": [], "b": []}
    for i, prob in enumerate(problems):
        ref = reference_answer(prob["answer"])
        prompt = make_prompt(prob["question"])
        for arm in ("a", "b"):
            j, wall_ms = run_one(args.binary, args.model, prompt, arms[arm])
            pred, method = extract_answer(j["text"])
            rec = {"index": i, "reference": ref, "prediction": pred, "method": method,
                   "correct": is_correct(pred, ref), "text": j["text"], "steps_run": j["steps_run"],
                   "generate_ms": j["timings"]["generate_ms"], "wall_ms": wall_ms}
            records[arm].append(rec)
        if not args.quiet:
            ra, rb = records["a"][-1], records["b"][-1]
            print("problem %d: ref %s | A %s (%s, %.0f ms) | B %s (%s, %.0f ms)" %
                  (i, ref, ra["prediction"], "ok" if ra["correct"] else "wrong", ra["generate_ms"],
                   rb["prediction"], "ok" if rb["correct"] else "wrong", rb["generate_ms"]), flush=True)

    summary = summarize(records["a"], records["b"])
    report = {
        "what": "GSM8K paired comparison of two dllm sampler settings",
        "model": str(args.model),
        "subset": str(args.subset),
        "prompt_suffix": PROMPT_SUFFIX,
        "arm_a": shlex.join(arms["a"]),
        "arm_b": shlex.join(arms["b"]),
        "command": shlex.join([sys.executable] + sys.argv),
        "machine": machine(),
        "commit": git_commit(),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "summary": summary,
        "problems_a": records["a"],
        "problems_b": records["b"],
    }
    out = Path(args.out) if args.out else (
        ROOT / "bench" / "results" /
        ("gsm8k-%s-%s.json" % (Path(args.model).stem, datetime.datetime.now(datetime.timezone.utc)
                                .strftime("%Y%m%dT%H%M%SZ"))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")

    s = summary
    print("n %d | accuracy A %.3f, B %.3f | B - A %+.3f, 95%% CI [%+.3f, %+.3f] (Newcombe paired) | "
          "McNemar exact p %.3g (A only %d, B only %d) | mean generate ms A %.0f, B %.0f | steps A %.1f, B %.1f"
          % (s["n"], s["accuracy_a"], s["accuracy_b"], s["diff_b_minus_a"], s["diff_ci95"][0], s["diff_ci95"][1],
             s["mcnemar_exact_p"], s["table"]["a_only"], s["table"]["b_only"], s["mean_generate_ms_a"],
             s["mean_generate_ms_b"], s["mean_steps_a"], s["mean_steps_b"]))
    print("report: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
