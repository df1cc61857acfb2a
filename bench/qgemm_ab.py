#!/usr/bin/env python3
"""Interleaved A/B of two qgemm_bench builds (two commits of the kernels) on the same benchmarks.

Runs A then B in odd rounds and B then A in even ones, each a whole `qgemm_bench
--benchmark_filter=REGEX --benchmark_out=...` (the build's own results JSON, kept in the output), and
takes the ratio A / B of the real time per call round by round: pairing keeps the ratio meaningful when
the machine's speed drifts. Writes bench/results/qgemm-<name>-ab-<utc stamp>.json with the machine,
both builds' commits (from their own results' context), the per-round times, each benchmark's median
times and the median, minimum and maximum of its ratios, and the int8 peak and read bandwidth each run
measured first. Run it on an otherwise idle machine.

Usage: bench/qgemm_ab.py --a BIN_A --b BIN_B --name NAME --what "what A changes" --filter REGEX
       [--rounds 6]
"""
import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_bench as e2e  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def usage_error(what):
    print(f"ERROR: {what}", file=sys.stderr)
    sys.exit(2)


def run(binary, regex, out):
    """One qgemm_bench run -> (its results JSON, {benchmark name: real time in ms}). Exits 1 with an
    ERROR line when the run fails or matches no benchmark."""
    p = subprocess.run([binary, f"--benchmark_filter={regex}", f"--benchmark_out={out}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or not Path(out).is_file():
        tail = p.stderr.strip().splitlines()[-1:] or ["no output"]
        sys.exit(f"ERROR: {binary} exited {p.returncode} ({tail[0]}); no results file written")
    try:
        j = json.loads(Path(out).read_text())
    except json.JSONDecodeError:  # Google Benchmark leaves the file empty when nothing matched
        j = {}
    if not j.get("benchmarks"):
        sys.exit(f"ERROR: --filter {regex!r} matches no benchmark of {binary}; no results file written")
    return j, {b["name"]: b["real_time"] for b in j["benchmarks"] if b.get("run_type", "iteration") == "iteration"}


def summarize(rounds):
    """Per benchmark: median ms of A and B, and the median / min / max of the per-round ratios A / B."""
    names = sorted(set(rounds[0]["A"]) & set(rounds[0]["B"]))
    out = {}
    for n in names:
        a = [r["A"][n] for r in rounds]
        b = [r["B"][n] for r in rounds]
        ratios = [x / y for x, y in zip(a, b)]
        out[n] = {"A_ms_median": statistics.median(a), "B_ms_median": statistics.median(b),
                  "ratio_A_over_B_median": statistics.median(ratios), "ratio_min": min(ratios),
                  "ratio_max": max(ratios)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="qgemm_bench of build A (the change)")
    ap.add_argument("--b", required=True, help="qgemm_bench of build B (the baseline)")
    ap.add_argument("--name", required=True, help="short name for the results file")
    ap.add_argument("--what", required=True, help="what A changes against B")
    ap.add_argument("--filter", required=True, help="--benchmark_filter regex for both builds")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    if args.rounds < 1:
        usage_error("--rounds must be at least 1")
    for b in (args.a, args.b):
        if not Path(b).is_file():
            usage_error(f"{b} is not a file: give the path of a qgemm_bench binary")

    rounds, context = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            r = {"load_before": e2e.loadavg()}
            for side in ("AB" if i % 2 == 0 else "BA"):
                j, times = run(args.a if side == "A" else args.b, args.filter, f"{tmp}/{side}.json")
                ctx = j["context"]
                context.setdefault(side, ctx)
                r[side] = times
                r[f"{side}_peak_zmm_gops"] = ctx.get("peak_zmm_vpdpbusd_gops")
                r[f"{side}_read_bw_1t"] = ctx.get("read_bw_zmm_1t_gbs")
            r["load_after"] = e2e.loadavg()
            rounds.append(r)
            print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)

    summary = summarize(rounds)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result = {
        "kind": "qgemm-ab",
        "date": stamp,
        "what": args.what,
        "machine": e2e.machine(),
        "A": {"binary": args.a, "commit": context["A"].get("commit")},
        "B": {"binary": args.b, "commit": context["B"].get("commit")},
        "filter": args.filter,
        "order": "A then B in odd rounds, B then A in even ones; ms = real time per call",
        "rounds": rounds,
        "summary": summary,
    }
    dest = ROOT / "bench" / "results" / f"qgemm-{args.name}-ab-{stamp}.json"
    dest.write_text(json.dumps(result, indent=1) + "\n")
    for n, s in summary.items():
        print(f"{n}: A {s['A_ms_median']:.3f} ms, B {s['B_ms_median']:.3f} ms, A/B median "
              f"{s['ratio_A_over_B_median']:.3f} [{s['ratio_min']:.3f}, {s['ratio_max']:.3f}]")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
