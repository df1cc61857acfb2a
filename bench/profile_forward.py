#!/usr/bin/env python3
"""Where a forward pass spends its time: runs `dllm run` with DLLM_PROFILE=1 on the synthetic LLaDA-8B file
(or --arch llada-moe --model FILE; same command shape as bench/e2e_bench.py: canvas = prompt + --gen, one block, --steps steps) and writes the
per-phase wall and CPU ms per forward pass that dllm prints to stderr into
bench/results/profile-<arch>-c<canvas>-t<threads>-<utc stamp>.json, with the machine, commit and command
(for a MoE model also the routed block's passes, how many experts got how many rows, its expert GEMMs'
int8 ops per CPU-second, and that rate over the core's int8 peak, which qgemm_bench measures right before and right after the run: the
host is shared, so a peak taken at another time would not be the same core's speed).

Usage: python3 bench/profile_forward.py [--threads 2] [--steps 2] [--note TEXT]
"""

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_bench as e2e  # noqa: E402  (machine(), commit(), loadavg(), ensure_model(), prompt_with_n_tokens())

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
MOE_ROW = re.compile(r"^(\S.*?)((?:\s+[\d.]+)+)$")


def two_column_table(lines, heading, cols):
    """The rows 'NAME A B ...' (one number per name in cols) after the line starting with `heading` and its
    column header -> {NAME: {cols[0]: A, cols[1]: B, ...}}, up to the first line of another shape; None when
    no line starts with `heading`."""
    head = next((i for i, l in enumerate(lines) if l.startswith(heading)), None)
    if head is None:
        return None
    table = {}
    for l in lines[head + 2:]:
        m = MOE_ROW.match(l.strip())
        if not m or len(m.group(2).split()) != len(cols):
            break
        table[m.group(1)] = dict(zip(cols, map(float, m.group(2).split())))
    return table


def parse_profile(stderr: str) -> dict:
    """The table after 'profile: N forward passes; per pass:' -> {phase: {wall_ms, cpu_ms}} and the pass count."""
    lines = stderr.splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith("profile:")), None)
    if head is None:
        raise SystemExit("ERROR: dllm printed no profile table (was it built with the DLLM_PROFILE hook?)")
    passes = int(re.search(r"(\d+) forward pass", lines[head]).group(1))
    phases = {}
    for l in lines[head + 2:]:
        m = ROW.match(l.strip())
        if not m:
            break
        phases[m.group(1)] = {"wall_ms": float(m.group(2)), "cpu_ms": float(m.group(4))}
    result = {"forward_passes": passes, "phases": phases}
    # A MoE model's tables after it (cpu/moe.h MoeFfn::print_times): the block's passes, and how the
    # routed rows fell on the experts (per forward: (layer, expert) pairs and their rows).
    for heading, key, cols in (("moe ffn passes", "moe_passes", ("wall_ms", "cpu_ms")),
                               ("moe rows per expert", "moe_rows_per_expert",
                                ("experts", "rows", "thread_ms", "gops_per_thread_s"))):
        table = two_column_table(lines, heading, cols)
        if table is not None:
            result[key] = table
    rate = re.search(r"moe expert gemms: ([\d.]+) G int8 ops per CPU-s, ([\d.]+) G per wall-s", stderr)
    if rate:
        result["moe_expert_gemm_gops_per_cpu_s"] = float(rate.group(1))
        result["moe_expert_gemm_gops_per_wall_s"] = float(rate.group(2))
    return result


PEAK = re.compile(r"^(.*) peak: ([\d.]+) G int8 ops/s per core", re.M)


def measure_peak(bindir: Path):
    """(reference instruction, G int8 ops per core-second): qgemm_bench's peak probe alone (a filter that
    matches no GEMM, no results file): zmm vpdpbusd where the CPU has AVX-512 VNNI, else ymm vpmaddubsw.
    None when qgemm_bench is not built."""
    tool = bindir / "qgemm_bench"
    if not tool.exists():
        return None
    p = subprocess.run([str(tool), "--benchmark_filter=^$", "--benchmark_out=/dev/null"], capture_output=True,
                       text=True)
    m = PEAK.search(p.stdout)
    return (m.group(1), float(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", type=Path, default=Path(os.environ.get("DLLM_BIN_DIR", ROOT / "build" / "bin")))
    ap.add_argument("--model", type=Path, default=ROOT / "bench" / "tmp" / "llada-8b-synth.gguf")
    ap.add_argument("--arch", default="llada")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=13)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    e2e.ensure_model(a.model, a.arch, a.bin)
    prompt = e2e.prompt_with_n_tokens(a.bin, a.model, a.prompt_tokens)
    cmd = [str(a.bin / "dllm"), "run", "--model", str(a.model), "--no-chat", "--prompt", prompt, "--max-tokens",
           str(a.gen), "--block-length", str(a.gen), "--steps", str(a.steps), "--threads", str(a.threads),
           "--no-early-stop", "--json", "--device", "cpu"]  # the CPU profile (auto could take a GPU)
    before = e2e.loadavg()
    peak_before = measure_peak(a.bin)
    p = subprocess.run(cmd, env={**os.environ, "DLLM_PROFILE": "1"}, capture_output=True, text=True)
    peak_after = measure_peak(a.bin)
    if p.returncode != 0:
        raise SystemExit(f"ERROR: dllm run failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    prof = parse_profile(p.stderr)
    canvas = a.prompt_tokens + a.gen
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result = {"kind": "forward-profile", "date": stamp, "machine": e2e.machine(), "commit": e2e.commit(),
              "command": "DLLM_PROFILE=1 " + " ".join(cmd), "script": " ".join([sys.argv[0]] + sys.argv[1:]),
              "note": a.note, "loadavg_before": before, "loadavg_after": e2e.loadavg(), "canvas": canvas,
              "threads": a.threads, "units": "ms per forward pass; cpu = process CPU time of all threads",
              **prof}
    if peak_before and peak_after:
        result["int8_peak"] = {"reference": peak_before[0], "gops_per_core_before": peak_before[1],
                               "gops_per_core_after": peak_after[1], "source": str(a.bin / "qgemm_bench")}
        if "moe_expert_gemm_gops_per_cpu_s" in prof:
            peak = (peak_before[1] + peak_after[1]) / 2
            result["moe_expert_gemm_peak_frac"] = round(prof["moe_expert_gemm_gops_per_cpu_s"] / peak, 3)
    out = ROOT / "bench" / "results" / f"profile-{a.arch}-c{canvas}-t{a.threads}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    gemm = sum(v["cpu_ms"] for k, v in prof["phases"].items() if k.startswith("gemm"))
    total = prof["phases"]["total"]["cpu_ms"]
    print(f"{out.relative_to(ROOT)}: total {prof['phases']['total']['wall_ms']} wall ms, {total} CPU ms per "
          f"forward; GEMMs {gemm / total:.0%} of the CPU time")
    if "moe_expert_gemm_peak_frac" in result:
        print(f"expert GEMMs: {prof['moe_expert_gemm_gops_per_cpu_s']} G int8 ops per CPU-s = "
              f"{result['moe_expert_gemm_peak_frac']} of the {result['int8_peak']['reference']} peak")


if __name__ == "__main__":
    main()
