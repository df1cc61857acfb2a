#!/usr/bin/env python3
"""DiffusionGemma step time: `dllm run` against PR #24423's `llama-diffusion-cli` on the same file,
interleaved (ours, llama.cpp, ours, llama.cpp, ...), 2 threads.

The case is issue 32's: a canvas of 256 after a short chat prompt (its K/V encoded once), the
entropy-bound sampler with a fixed number of steps (`--eb-confidence 0`: no early stop), the same seed.
A step is one forward pass of the 256 canvas rows against the prompt's K/V, plus the sampler. Step 0
has no self-conditioning input; every later step does (the previous step's logits through
softmax @ token_embd and the self-conditioning MLP), so the figure compared is the median of the
self-conditioned steps (1 .. steps - 1) of each run.

- Ours: `dllm run --json`, `timings.step_ms` (forward + sampler per step); peak RSS from the report.
- llama.cpp: its log prints `diffusion step: i/N` as step i begins, with a timestamp
  (`M.SS.mmm.uuu`); step i's time is the gap to the next line, the last step's is what is left of
  the `total time` it prints on stdout. Peak RSS from `/usr/bin/time -f %M`.

The file: `make_synthetic_gguf --arch diffusion-gemma --layers N` (26B-A4B's layer shapes and
vocabulary, N layers; made when missing). Writes bench/results/dgemma-bench-<utc stamp>.json.
"""
import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_bench as e2e  # noqa: E402

PROMPT = "Explain why the sky is blue in two sentences."
STEP_LINE = re.compile(r"(\d+)\.(\d+)\.(\d+)\.(\d+) I\s+diffusion step: (\d+)/(\d+)")
TOTAL_LINE = re.compile(r"total time: ([\d.]+)ms")


def llama_step_seconds(stderr, stdout):
    """Per-step seconds from llama-diffusion-cli's log (see the module docstring)."""
    starts = {}
    for m in STEP_LINE.finditer(stderr):
        mins, secs, ms, us = (int(m[i]) for i in range(1, 5))
        starts[int(m[5])] = mins * 60 + secs + ms / 1e3 + us / 1e6
    total = TOTAL_LINE.search(stdout)
    if not starts:
        return []
    steps = [starts[i + 1] - starts[i] for i in range(len(starts) - 1) if i + 1 in starts]
    if not total:  # the random model's text can garble stdout: the gaps alone
        return steps
    # total time counts from the first step on, without the prompt's prefill before the first line (on
    # the tiny file a total with the prefill in it would leave the last step no time at all).
    last = float(total[1]) / 1e3 - (starts[max(starts)] - starts[0])
    return steps + [last]


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (CompletedProcess, peak RSS bytes, wall s)."""
    t0 = datetime.datetime.now()
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb %M", *cmd], capture_output=True, text=True, errors="replace",
                       timeout=3600)
    wall = (datetime.datetime.now() - t0).total_seconds()
    m = re.findall(r"maxrss_kb (\d+)", p.stderr)
    return p, int(m[-1]) * 1024 if m else None, wall


def ours(bindir, model, steps, threads):
    cmd = [str(bindir / "dllm"), "run", "-m", str(model), "-p", PROMPT, "-t", str(threads), "--seed", "1",
           "--steps", str(steps), "--eb-confidence", "0", "--json"]
    p, rss, wall = timed(cmd)
    rec = {"command": " ".join(cmd), "returncode": p.returncode, "wall_s": wall, "load_after": e2e_load()}
    if p.returncode != 0:
        rec["stderr_tail"] = p.stderr[-2000:]
        return rec
    j = json.loads(p.stdout)
    rec.update({"step_s": [x / 1e3 for x in j["timings"]["step_ms"]], "n_prompt_tokens": j["n_prompt_tokens"],
                "load_s": j["timings"]["load_ms"] / 1e3, "peak_rss_bytes": j["peak_rss_bytes"]})
    return rec


def llama(cli, model, steps, threads):
    cmd = [str(cli), "-m", str(model), "-p", PROMPT, "-t", str(threads), "--seed", "1", "--diffusion-eb-max-steps",
           str(steps), "--diffusion-eb-confidence", "0"]
    p, rss, wall = timed(cmd)
    rec = {"command": " ".join(cmd), "returncode": p.returncode, "wall_s": wall, "load_after": e2e_load(),
           "peak_rss_bytes": rss}
    if p.returncode != 0:
        rec["stderr_tail"] = p.stderr[-2000:]
        return rec
    rec["step_s"] = llama_step_seconds(p.stderr, p.stdout)
    return rec


def e2e_load():
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def self_conditioned(step_s):
    return statistics.median(step_s[1:]) if len(step_s) > 1 else None


def summarize(result):
    """Per repeat: the median self-conditioned step of each tool and llama.cpp's over ours; overall the
    medians, and peak RSS over the file."""
    per_repeat = []
    for a, b in zip(result["runs"]["ours"], result["runs"]["llama"]):
        sa, sb = self_conditioned(a.get("step_s", [])), self_conditioned(b.get("step_s", []))
        per_repeat.append({"ours_step_s": sa, "llama_step_s": sb, "speedup": sb / sa if sa and sb else None,
                           "ours_step0_s": (a.get("step_s") or [None])[0],
                           "llama_step0_s": (b.get("step_s") or [None])[0]})

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    rss = max([r.get("peak_rss_bytes") or 0 for r in result["runs"]["ours"]] or [0])
    result["summary"] = {
        "per_repeat": per_repeat,
        "ours_step_s": med([r["ours_step_s"] for r in per_repeat]),
        "llama_step_s": med([r["llama_step_s"] for r in per_repeat]),
        "speedup_median": med([r["speedup"] for r in per_repeat]),
        "target_speedup": 3.0,
        "peak_rss_bytes": rss,
        "llama_peak_rss_bytes": max([r.get("peak_rss_bytes") or 0 for r in result["runs"]["llama"]] or [0]),
        "peak_rss_over_file": rss / result["file_bytes"] if rss else None,
        "target_peak_rss_over_file": 1.15,
    }
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-cli", type=Path, required=True, help="PR #24423's llama-diffusion-cli")
    ap.add_argument("--bin", type=Path, default=e2e.ROOT / "build" / "bin")
    ap.add_argument("--model", type=Path, default=Path("/work/synth/dg-6l.gguf"))
    ap.add_argument("--layers", type=int, default=6, help="layers of the synthetic file when it is made")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    if not a.model.exists():
        subprocess.run([str(a.bin / "make_synthetic_gguf"), "--arch", "diffusion-gemma", "--layers", str(a.layers),
                        "--out", str(a.model)], check=True)
    runs = {"ours": [], "llama": []}
    for r in range(a.repeats):
        runs["ours"].append(ours(a.bin, a.model, a.steps, a.threads))
        runs["llama"].append(llama(a.llama_cli, a.model, a.steps, a.threads))
        print(f"repeat {r + 1}/{a.repeats} done", file=sys.stderr)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result = {"kind": "dgemma-bench", "date": stamp, "machine": e2e.machine(), "commit": e2e.commit(),
              "command": " ".join(sys.argv), "threads": a.threads, "steps": a.steps, "repeats": a.repeats,
              "note": a.note, "file": str(a.model), "layers": a.layers, "file_bytes": a.model.stat().st_size,
              "prompt": PROMPT, "runs": runs}
    summarize(result)
    out = e2e.ROOT / "bench" / "results" / f"dgemma-bench-{stamp}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
