#!/usr/bin/env python3
"""Dream sampler cost against the forward pass, in the same runs of `dllm run`.

Each run is `dllm run --json --trace FILE` with Dream's sampled setting (`--max-tokens 256
--temperature 0.2 --top-p 0.95`, alg entropy) and `--no-early-stop`, so every run does the same
steps. The trace gives, per step, the forward pass's ms (forward::Forward::forward), the sampler's own ms
(everything else in the step: per-row statistics over the 152,064 logits of every masked position,
selection, commit) and the rows it sampled (the masked positions: masks left after the step plus
the ones it committed). The results file holds, per (model, binary), the median over all steps of
the sampler ms and of the forward ms, their ratio, and the sampler ms per row.

Models: the tiny reference Dream model and a Dream-7B-shaped synthetic file (tools/make_synthetic_gguf
--arch dream, ~4.5 GB, made when missing; its path is given with --synth). `--steps` keeps a run short
(each step samples fewer rows as the canvas fills; the median step of a 64-step run samples about as
many rows as the median step of the default 256). `--baseline BIN` runs a second binary (the sampler
before a change) interleaved with the first, repeat by repeat: A, B, A, B.

The machine is shared: each run records the 1-minute load average before and after, and the run's
CPU time (user + system) beside its wall time; sampler and forward share every disturbance of a run,
so their ratio is the steadier figure.

Writes bench/results/sampler-dream-t<threads>-<utc stamp>.json (machine, commit, commands, runs).

Usage: bench/sampler_bench.py [--bin build/bin/dllm] [--baseline BIN] [--tiny PATH] [--synth PATH]
                              [--threads 2] [--tiny-steps 64] [--synth-steps 4] [--repeats 2]
                              [--note TEXT]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from e2e_bench import commit, cpu_children, loadavg, machine  # noqa: E402

PROMPT = "Write a short story about a dragon who learns to read."
SETTING = ["--max-tokens", "256", "--temperature", "0.2", "--top-p", "0.95", "--seed", "1", "--no-early-stop"]


def steps_from_trace(lines):
    """Per step of a --trace file: (rows sampled, sample_ms, forward_ms)."""
    out = []
    for line in lines:
        s = json.loads(line)
        out.append((s["masks_left"] + len(s["positions"]), s["sample_ms"], s["forward_ms"]))
    return out


def summarize_steps(steps):
    """Medians over the steps of one run (or of several runs' steps together)."""
    rows = [r for r, _, _ in steps]
    sample = [s for _, s, _ in steps]
    forward = [f for _, _, f in steps]
    med_s, med_f = statistics.median(sample), statistics.median(forward)
    return {"steps": len(steps), "median_rows": statistics.median(rows),
            "median_sample_ms": round(med_s, 3), "median_forward_ms": round(med_f, 3),
            "sample_over_forward": round(med_s / med_f, 4) if med_f > 0 else None,
            "median_step_ratio": round(statistics.median(s / f for _, s, f in steps if f > 0), 4),
            "sample_ms_per_row": round(sum(sample) / sum(rows), 4) if sum(rows) else None}


def run_once(binary, model, threads, steps):
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.jsonl"
        cmd = [str(binary), "run", "--model", str(model), "--prompt", PROMPT, "--threads", str(threads),
               "--json", "--trace", str(trace)] + SETTING + (["--steps", str(steps)] if steps else [])
        la0, c0, t0 = loadavg(), cpu_children(), time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"ERROR: {binary} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        j = json.loads(p.stdout)
        steps_list = steps_from_trace(trace.read_text().splitlines())
    return {"command": " ".join(cmd[1:]), "sampler": j["sampler"], "isa": j["isa"], "threads": j["threads"],
            "steps": [list(s) for s in steps_list], "summary": summarize_steps(steps_list),
            "wall_s": round(wall, 2), "cpu_s": round(cpu_children() - c0, 2), "loadavg_before": la0,
            "loadavg_after": loadavg()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "build" / "bin" / "dllm"))
    ap.add_argument("--baseline", help="a second dllm binary, run interleaved with --bin")
    ap.add_argument("--tiny", default=str(ROOT.parent / "shared" / "reference" / "tiny-dream-q4km.gguf"))
    ap.add_argument("--synth", help="Dream-7B-shaped synthetic GGUF (made with make_synthetic_gguf if missing)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tiny-steps", type=int, default=64)
    ap.add_argument("--synth-steps", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--note", default="")
    a = ap.parse_args()

    models = [("tiny-dream", Path(a.tiny), a.tiny_steps)]
    if a.synth:
        synth = Path(a.synth)
        if not synth.exists():
            tool = Path(a.bin).parent / "make_synthetic_gguf"
            print(f"making {synth} ...", file=sys.stderr)
            subprocess.run([str(tool), "--arch", "dream", "--out", str(synth)], check=True)
        models.append(("dream-7b-synth", synth, a.synth_steps))
    binaries = [("new", Path(a.bin))] + ([("baseline", Path(a.baseline))] if a.baseline else [])

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"sampler-dream-t{a.threads}-{stamp}.json"
    runs = []

    def write(complete):
        """The results file, rewritten after every run, so a run cut short keeps what finished."""
        summary = {}
        for name, _, _ in models:
            for label, _ in binaries:
                steps = [tuple(st) for r in runs if r["model"] == name and r["binary"] == label
                         for st in r["steps"]]
                if steps:
                    summary[f"{name}/{label}"] = summarize_steps(steps)
        tiny, synth = summary.get("tiny-dream/new"), summary.get("dream-7b-synth/new")
        checks = {"tiny_sample_ms_per_step_le_100": tiny["median_sample_ms"] <= 100 if tiny else None,
                  "synth_sample_le_10pct_of_forward": synth["sample_over_forward"] <= 0.10 if synth else None}
        result = {"bench": "sampler", "date": stamp, "commit": commit(), "machine": machine(),
                  "threads": a.threads, "setting": SETTING, "prompt": PROMPT, "note": a.note,
                  "complete": complete, "argv": sys.argv[1:],
                  "binaries": {label: str(b) for label, b in binaries},
                  "models": {name: {"path": str(m), "steps": s} for name, m, s in models},
                  "summary": summary, "checks": checks, "runs": runs}
        out.write_text(json.dumps(result, indent=1) + "\n")
        return summary, checks

    for rep in range(a.repeats):
        for name, model, steps in models:
            for label, binary in binaries:
                print(f"repeat {rep}: {name} {label} ...", file=sys.stderr)
                r = run_once(binary, model, a.threads, steps)
                r.update({"repeat": rep, "model": name, "binary": label})
                runs.append(r)
                s = r["summary"]
                print(f"  sampler {s['median_sample_ms']} ms/step, forward {s['median_forward_ms']} ms/step, "
                      f"ratio {s['sample_over_forward']}, {s['sample_ms_per_row']} ms/row, load "
                      f"{r['loadavg_before']}", file=sys.stderr)
                write(False)

    summary, checks = write(True)
    print(json.dumps({"summary": summary, "checks": checks}, indent=1))
    print(out)


if __name__ == "__main__":
    main()
