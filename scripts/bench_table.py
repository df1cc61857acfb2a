#!/usr/bin/env python3
"""Renders the README's benchmark table from bench/results/*.json, or checks that it is current.

The README holds the table between `<!-- bench-table:begin -->` and `<!-- bench-table:end -->`, and
docs/benchmarks.md the block-diffusion table between `<!-- llada2-table:begin -->` and `<!-- llada2-table:end -->`.
  scripts/bench_table.py          rewrite that part of README.md from the results files
  scripts/bench_table.py --check  exit 1 (and show both) when README.md differs from the files
Numbers in the README come only from here, so README and results files cannot drift apart.
"""
import glob
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
L2_BEGIN, L2_END = "<!-- llada2-table:begin -->", "<!-- llada2-table:end -->"


def fmt_bytes(n):
    return f"{n / 2**30:.2f} GiB" if n else "-"


def isa_of(r):
    if "--isa " in r["command"]:
        return r["command"].split("--isa ")[-1].split()[0]
    runs = r.get("runs") or [{}]
    isa = (runs[0].get("isa") or "auto") + " (auto)"
    if r.get("omp_wait_policy"):
        isa += f", OMP_WAIT_POLICY={r['omp_wait_policy']}"
    return isa


def e2e_rows():
    """One row per (arch, canvas, threads, ISA, CPU model): the newest results file of that kind (the same
    ISA path runs at different speeds on an AMD and an Intel core). Files with a GPU side (device_b) go
    to gpu_table() instead; an A/B of two builds (bin_b) is no row."""
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "e2e-*.json"))):
        r = json.loads(Path(path).read_text())
        if r.get("device_b") or r.get("bin_b"):
            continue
        key = (r["arch"], r["canvas"], r["threads"], isa_of(r), r["machine"].get("cpu", "?"))
        if key not in latest or r["date"] > latest[key][1]["date"]:
            latest[key] = (Path(path).name, r)
    rows = []
    for key in sorted(latest):
        name, r = latest[key]
        llama = r.get("llama_cpp") or {}
        l_fwd, speedup = llama.get("forward_ms_per_step"), llama.get("speedup_forward")
        cpu_speedup = r.get("speedup_slope_cpu")
        rss = r["peak_rss_bytes"]
        rows.append(f"| {r['arch']} synthetic ({r['model_bytes'] / 2**30:.2f} GiB) | {r['canvas']} | "
                    f"{r['threads']} | {key[4]} | {key[3]} | {r['forward_ms_per_step']:.0f} | "
                    f"{f'{l_fwd:.0f}' if l_fwd else '-'} | {f'{speedup:.2f}x' if speedup else '-'} | "
                    f"{f'{cpu_speedup:.2f}x' if cpu_speedup else '-'} | "
                    f"{r['load_ms'] / 1000:.1f} | {fmt_bytes(rss)} ({rss / r['model_bytes']:.2f}x file) | "
                    f"`{name}` |")
    return rows


def gpu_rows():
    """GPU steps against the same machine's CPU (bench/e2e_bench.py --device-b gpu, run by
    scripts/gpu-check.sh): the newest results file per (arch, canvas, GPU)."""
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "e2e-*.json"))):
        r = json.loads(Path(path).read_text())
        if not r.get("device_b"):
            continue
        key = (r["arch"], r["canvas"], r["machine"].get("gpu", "?"))
        if key not in latest or r["date"] > latest[key][1]["date"]:
            latest[key] = (Path(path).name, r)
    rows = []
    for key in sorted(latest):
        name, r = latest[key]
        b = r["device_b"]
        gpu = key[2].split(",")[0]
        rows.append(f"| {r['arch']} synthetic ({r['model_bytes'] / 2**30:.2f} GiB) | {r['canvas']} | {gpu} | "
                    f"{b['forward_ms_per_step']:.1f} | {r['forward_ms_per_step']:.0f} ({r['threads']} threads, "
                    f"{isa_of(r)}) | {r['forward_ms_per_step'] / b['forward_ms_per_step']:.1f}x | `{name}` |")
    return rows


def gpu_table():
    rows = gpu_rows()
    if not rows:
        return ""
    head = ("\n\nThe CUDA backend (int8 GEMM) against the CPU of the same machine, interleaved "
            "(docs/gpu.md):\n\n"
            "| model | canvas | GPU | GPU forward ms/step | CPU forward ms/step | GPU speedup | results file |\n"
            "|---|---|---|---|---|---|---|")
    return head + "\n" + "\n".join(rows)


def serve_rows():
    """`dllm serve` throughput (bench/serve_bench.py): the newest results file per model, one row per cache mode
    and client count."""
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "serve-*.json"))):
        r = json.loads(Path(path).read_text())
        if r["model"] not in latest or r["date"] > latest[r["model"]][1]["date"]:
            latest[r["model"]] = (Path(path).name, r)
    rows = []
    for model in sorted(latest):
        name, r = latest[model]
        for m in r["modes"]:
            for w in m["waves"]:
                steps = r.get("steps") or r["max_tokens"]
                isa = "+".join(r["machine"].get("isa_flags", [])) or "?"
                rows.append(f"| {r['model']} | {isa} | {steps} | {m['cache']} | {w['clients']} | {w['tok_s']:.1f} | "
                            f"{m['sequential']['tok_s']:.1f} | {w['speedup_vs_sequential']:.2f}x | {w['p50_s']:.2f} | "
                            f"{w['p95_s']:.2f} | `{name}` |")
    return rows


def serve_table():
    rows = serve_rows()
    if not rows:
        return ""
    head = ("\n\n`dllm serve`, chat requests of max_tokens 64, block 32, against the same requests one after "
            "another through `dllm run` (its generate time only):\n\n"
            "| model | CPU ISA | steps | cache | clients | committed tok/s | sequential tok/s | speedup | p50 s | p95 s | "
            "results file |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")
    return head + "\n" + "\n".join(rows)


def llada2_rows():
    """Block diffusion (bench/llada2_bench.py): one row per kind of CPU, the newest results file of each.
    The kind is whether the CPU has AMX (then `auto` runs Q4_K on tiles) or else its ISA flags: the flag
    list the files record grew over time, so an AMX machine's files do not all list the same flags."""
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "llada2-bench-*.json"))):
        flags = json.loads(Path(path).read_text())["machine"].get("isa_flags", [])
        latest["amx" if "amx_int8" in flags else "+".join(flags)] = path
    rows = []
    for path in sorted(latest.values()):
        r = json.loads(Path(path).read_text())
        s = r["summary"]
        actual = s.get("actual_routing") or {}
        speedups = [x for x in s["speedup_vs_llama_pp32_per_repeat"] if x]
        isa = "+".join(r["machine"].get("isa_flags", [])) or "?"
        ratio = actual.get("step_over_floor_median")
        rows.append(f"| llada2-mini synthetic ({s['file_bytes'] / 2**30:.2f} GiB) | {r['threads']} | {isa} | "
                    f"{s['our_block_step_ms']:.0f} | {s['llama_pp32_ms_per_32_rows']:.0f} | "
                    f"{statistics.median(speedups):.2f}x | "
                    f"{f'{ratio:.1f}x' if ratio else '-'} | {s['exact_speedup_vs_none_repeat0']:.1f}x | "
                    f"{s['tokens_per_step_to_match_llama_ar']:.1f} | "
                    f"{fmt_bytes(s['peak_rss_bytes'])} ({s['peak_rss_over_file']:.2f}x file) | `{Path(path).name}` |")
    return rows


def llada2_table():
    rows = llada2_rows()
    if not rows:
        return ""
    return ("| model | threads | CPU ISA | 32-row block step ms | llama.cpp pp32 ms | speedup | step / floor | "
            "exact cache vs --cache none | tokens per step to match AR | peak RSS | results file |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nBlock step: one denoising step of a 32-row block against the exact K/V cache of a 512-token "
            "prompt, the LM head over the block; llama.cpp pp32: `llama-bench -p 32` on the same weights "
            "labelled bailingmoe2 (there is no llama.cpp block-diffusion path that completes; docs/benchmarks.md). "
            "Speedup: median over repeats of llama.cpp's over ours in the same repeat. Step / floor: each step "
            "over max(weight bytes / read bandwidth, int8 ops / peak), with the bytes and multiply-adds its "
            "routing actually read and this run's bandwidth and peak. Tokens per step to match AR: our step "
            "over llama.cpp's autoregressive ms per token.")


def dgemma_rows():
    """DiffusionGemma (bench/dgemma_bench.py): the newest results file per layer count."""
    latest = {}
    for path in sorted(glob.glob(str(ROOT / "bench" / "results" / "dgemma-bench-*.json"))):
        r = json.loads(Path(path).read_text())
        if r["layers"] not in latest or r["date"] > latest[r["layers"]][1]["date"]:
            latest[r["layers"]] = (Path(path).name, r)
    rows = []
    for layers in sorted(latest):
        name, r = latest[layers]
        s = r["summary"]
        isa = "+".join(r["machine"].get("isa_flags", [])) or "?"
        ratios = ", ".join(f"{x['speedup']:.2f}x" for x in s["per_repeat"] if x["speedup"])
        rows.append(f"| diffusion-gemma synthetic, {layers} of 30 layers ({r['file_bytes'] / 2**30:.2f} GiB) | "
                    f"{r['threads']} | {isa} | {s['ours_step_s']:.2f} | {s['llama_step_s']:.2f} | "
                    f"{s['speedup_median']:.2f}x ({ratios}) | "
                    f"{fmt_bytes(s['peak_rss_bytes'])} ({s['peak_rss_over_file']:.2f}x file) | `{name}` |")
    return rows


def dgemma_table():
    rows = dgemma_rows()
    if not rows:
        return ""
    return ("\n\nDiffusionGemma, 26B-A4B's layer shapes, canvas 256 after a short chat prompt, against PR "
            "#24423's llama-diffusion-cli (bench/dgemma_bench.py):\n\n"
            "| model | threads | CPU ISA | step s | llama.cpp step s | speedup (per repeat) | peak RSS | results file |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nStep: a self-conditioned denoising step (every step but the first), the median per run, "
            "then over the interleaved runs.")


def render():
    rows = e2e_rows()
    if not rows:
        return "No benchmark results yet (run `bench/e2e_bench.py`)."
    head = ("| model | canvas | threads | CPU | ISA | forward ms/step | "
            "llama.cpp forward ms/step | speedup | speedup, CPU s/step | load s | peak RSS | results file |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    note = ("\n\nForward ms/step: one pass over the whole canvas, the mean over the steps of a run (all "
            "llama-diffusion-cli prints), median over the interleaved runs, for both tools alike; speedup = "
            "llama.cpp's over ours. Speedup, CPU s/step = the same ratio for "
            "CPU seconds (both threads) per extra step between a short and a long run of each tool, the figure "
            "least disturbed by other processes on a shared machine. Details: docs/benchmarks.md.")
    l2 = llada2_table()
    l2 = "\n\nBlock diffusion, LLaDA2-mini's shape:\n\n" + l2 if l2 else ""
    return head + "\n" + "\n".join(rows) + note + l2 + dgemma_table() + gpu_table() + serve_table()


def update(path, begin, end, body, check):
    """Puts body between the markers of `path`; with check, only says whether it is there already."""
    text = path.read_text()
    if begin not in text or end not in text:
        sys.exit(f"ERROR: {path.name} has no {begin} ... {end} section")
    pre, rest = text.split(begin, 1)
    current, post = rest.split(end, 1)
    want = "\n" + body + "\n"
    if check:
        if current != want:
            print(f"{path.name} benchmark table is stale; run scripts/bench_table.py\n--- {path.name}\n" + current +
                  "\n--- from bench/results\n" + want, file=sys.stderr)
            return False
        print(f"{path.name} benchmark table matches bench/results")
        return True
    path.write_text(pre + begin + want + end + post)
    return True


def main():
    check = "--check" in sys.argv[1:]
    ok = update(README, BEGIN, END, render(), check)
    ok &= update(BENCHMARKS, L2_BEGIN, L2_END, llada2_table() or "No block-diffusion results yet.", check)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
