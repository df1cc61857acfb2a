#!/usr/bin/env python3
"""LLaDA2.0-mini baselines before our llada2 forward pass exists (issue 31): llama.cpp on the synthetic
pair, this machine's read bandwidth and int8 peak, and the floor figures of a 32-row block step.

Files: a synthetic LLaDA2.0-mini pair from tools/make_synthetic_gguf (`--arch llada2` and `--arch
bailingmoe2`, same seed: byte-identical tensors; made when missing), kept outside the repository (about
9.9 GB each).

Each repeat runs, one after the other, with the load average read before and after each:
- llama.cpp's `llama-bench -m BAILINGMOE2 -p 32,128 -n 32 -t THREADS -o json` (its own 5 repetitions):
  pp32, pp128 and tg32 on the bailingmoe2 copy (autoregressive, causal: the only llama.cpp path that
  runs these weights);
- `qgemm_bench --peaks-only`, which measures only the zmm vpdpbusd peak per core (per second of thread
  CPU time) and the 1- and 2-thread read bandwidth of a 2 GiB buffer (bench/read_bandwidth.h).
With --max-load L each measurement first waits (up to
--max-wait seconds) for the 1-minute load average to drop below L; the loads seen are in the file.

Then, once, PR #17454's `llama-diffusion-cli` on the llada2 copy in the issue's recompute case: a prompt
of exactly 512 tokens after its chat template, 128 generated, blocks of 32, a fixed 8 steps per block
(no threshold), temperature 0; once in its default mode and once with --diffusion-hybrid. Its canvas is
-ub (640), its blocks count from position 0 (640 / 32 = 20 blocks, so --diffusion-steps 160 gives 8 per
block) but start at the prompt's end; return code, wall time, its totals line, every distinct error line
and the output's tail are recorded.

Floor (`floor`, from the bailingmoe2 file's tensor directory as `dllm inspect` lists it): bytes a 32-row
step reads when each touched expert is read once, with evenly spread routing: each row picks
expert_used_count of expert_count experts, each expert with probability k / E, independently per row, so
a layer touches E (1 - (1 - k / E)^rows) experts in expectation (group-limited routing keeps the
marginal k / E when the groups are evenly used). Every other matrix (attention, dense FFN, shared
expert, router, norms, LM head) is read once per step; token_embd only by the rows' lookups. The same for
one autoregressive token (k experts per MoE layer). Multiply-adds: each weight matrix's n_in x n_out per
row (k experts), the LM head over all rows (its upper bound: the first step of a block has 32 masked
rows). Floors: bytes / 2-thread read bandwidth, int8 ops / (2 x zmm vpdpbusd peak).

Quoted figures (`quoted`) are medians over the quiet repeats: those after which the 1-minute load
average was below threads + 0.5, i.e. during which other processes took little of the machine (all
repeats when none was); the medians over all repeats are kept beside them.

Usage: bench/llada2_baseline.py --llama-bin DIR [--llama-src DIR] [--bin build/bin]
           [--bailingmoe2 FILE] [--llada2 FILE] [--threads 2] [--repeats 3] [--max-load L]
           [--max-wait S] [--skip-diffusion] [--note TEXT]
       bench/llada2_baseline.py --summarize FILE   (recompute medians, floors and `quoted` in place)
Writes bench/results/llada2-baseline-<utc stamp>.json.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_bench as e2e  # noqa: E402  (machine(), commit(), ensure_model())

ROOT = e2e.ROOT
ROWS = 32  # the block length: rows per step


def loads():
    """The three load averages (1, 5, 15 minutes)."""
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def wait_for_load(max_load, max_wait):
    """Waits until the 1-minute load average is below max_load (None: no wait); returns seconds waited."""
    t0 = time.monotonic()
    while max_load is not None and loads()[0] >= max_load and time.monotonic() - t0 < max_wait:
        time.sleep(15)
    return round(time.monotonic() - t0, 1)


def measured(cmd, max_load, max_wait, **kw):
    """Runs cmd after waiting for the load; returns (CompletedProcess, record with loads and wall time)."""
    waited = wait_for_load(max_load, max_wait)
    before = loads()
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.monotonic() - t0
    return p, {"load_before": before, "load_after": loads(), "waited_s": waited, "wall_s": round(wall, 3),
               "returncode": p.returncode}


# ---- llama.cpp: llama-bench on the bailingmoe2 copy -------------------------------------------------

def llama_bench(bindir, model, threads, max_load, max_wait):
    cmd = [str(bindir / "llama-bench"), "-m", str(model), "-p", "32,128", "-n", "32", "-t", str(threads),
           "-o", "json"]
    p, rec = measured(cmd, max_load, max_wait)
    rec["command"] = " ".join(cmd)
    if p.returncode != 0:
        rec["stderr_tail"] = p.stderr[-2000:]
        return rec
    rows = json.loads(p.stdout)
    rec["build_commit"] = rows[0]["build_commit"]
    rec["model_type"] = rows[0]["model_type"]
    rec["tests"] = {}
    for r in rows:
        name = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        rec["tests"][name] = {"avg_ts": r["avg_ts"], "stddev_ts": r["stddev_ts"], "samples_ts": r["samples_ts"]}
    return rec


# ---- qgemm_bench: int8 peak and read bandwidth -------------------------------------------------------

def machine_peaks(ours, max_load, max_wait):
    cmd = [str(ours / "qgemm_bench"), "--peaks-only"]
    p, rec = measured(cmd, max_load, max_wait)
    rec["command"] = " ".join(cmd)
    start = p.stdout.rfind('{\n "context"')
    if p.returncode != 0 or start < 0:
        rec["output_tail"] = (p.stdout + p.stderr)[-2000:]
        return rec
    ctx = json.loads(p.stdout[start:])["context"]
    for k in ("peak_zmm_vpdpbusd_gops", "read_bw_zmm_1t_gbs", "read_bw_zmm_1t_gbs_cpu", "read_bw_zmm_2t_gbs",
              "read_bw_zmm_2t_gbs_cpu", "read_bw_zmm_2t_gbs_best", "read_bw_buffer_bytes"):
        if k in ctx:
            rec[k] = float(ctx[k])
    return rec


# ---- PR #17454's llama-diffusion-cli in the recompute case ------------------------------------------

def prompt_of_n_tokens(bindir, model, n):
    """A prompt that is exactly n tokens once llama-diffusion-cli has applied the file's chat template
    (llama.cpp's BAILING2 rendering, src/llama-chat.cpp), counted by llama-tokenize: "the" repeated
    (one token per " the" in the synthetic vocabulary)."""
    def count(words):
        text = ("<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>" + " ".join(["the"] * words)
                + "<|role_end|><role>ASSISTANT</role>")
        out = subprocess.run([str(bindir / "llama-tokenize"), "-m", str(model), "-p", text, "--ids", "--log-disable"],
                             capture_output=True, text=True, check=True).stdout
        return len(json.loads(out.strip().splitlines()[-1]))
    words = n
    for _ in range(4):
        c = count(words)
        if c == n:
            return " ".join(["the"] * words)
        words += n - c
    sys.exit(f"ERROR: no prompt of exactly {n} tokens found (last: {words} words, {c} tokens)")


def diffusion_cli(bindir, model, prompt, threads, hybrid, max_load, max_wait):
    canvas, gen, block, steps_per_block = 640, 128, 32, 8
    cmd = [str(bindir / "llama-diffusion-cli"), "-m", str(model), "-p", prompt, "-ub", str(canvas), "-b", str(canvas),
           "-c", str(canvas), "-n", str(canvas), "-t", str(threads), "-tb", str(threads),
           "--diffusion-block-length", str(block), "--diffusion-steps", str(canvas // block * steps_per_block),
           "--temp", "0", "--seed", "1"]
    if hybrid:
        cmd.append("--diffusion-hybrid")
    p, rec = measured(cmd, max_load, max_wait, timeout=1800)
    log = p.stdout + p.stderr
    shown = " ".join(c if c != prompt else f"\"<'the' x {prompt.count('the')}>\"" for c in cmd)
    rec.update({"command": shown, "prompt_tokens": 512, "generated": gen, "block_length": block,
                "steps_per_block": steps_per_block})
    totals = re.search(r"total time: ([\d.]+)ms, time per step: ([\d.]+)ms, sampling time per step: ([\d.]+)ms", log)
    if totals:
        rec["total_time_ms"], rec["time_per_step_ms"], rec["sampling_ms_per_step"] = map(float, totals.groups())
    failed = re.findall(r"diffusion_generate: (failed to [^\n]*)", log)
    rec["failures"] = failed
    rec["failed_decode_steps"] = [int(s) for s in re.findall(r"failed to decode at step (\d+)", log)]
    errors, seen = [], set()
    for line in log.splitlines():
        line = re.sub(r"^.*?\d+%(?=\S)", "", line)  # drop the progress bar glued to the line
        shape = re.sub(r"-?\d+", "N", line)  # e.g. "invalid token[0] = <garbage>": one entry per kind
        if re.search(r"inconsistent|invalid token|GGML_ASSERT|abort|failed to initialize|Segmentation", line) and \
                shape not in seen:
            seen.add(shape)
            errors.append(line)
    rec["distinct_error_lines"] = errors[:20]
    rec["output_tail"] = log[-1500:]
    return rec


# ---- The floor, from the file's layout ---------------------------------------------------------------

def layout_and_floor(ours, model, bw_gbs, peak_gops_core, threads):
    """The floor from the file's layout (layout_floor) with the given bandwidth and peak (apply_floors)."""
    floor, layout = layout_floor(ours, model)
    apply_floors(floor, bw_gbs, peak_gops_core, threads)
    return floor, layout


def layout_floor(ours, model):
    """Bytes and multiply-adds of a 32-row step and of an autoregressive token, from `dllm inspect MODEL`."""
    out = subprocess.run([str(ours / "dllm"), "inspect", str(model)], capture_output=True, text=True,
                         check=True).stdout
    meta = dict(re.findall(r"^\s+(\S+)\s+(?:UINT32|FLOAT32|BOOL|STRING)\s+(\S+)", out, re.M))
    arch = meta["general.architecture"].strip('"')
    E = int(meta[f"{arch}.expert_count"])
    k = int(meta[f"{arch}.expert_used_count"])
    touched = E * (1 - (1 - k / E) ** ROWS)
    tensors = re.findall(r"^\s*\d+\s+(\S+)\s+(\S+)\s+\[([\d, ]+)\]\s+(\d+) bytes", out, re.M)
    by = {"experts": 0.0, "attention": 0, "dense_ffn": 0, "shared_expert": 0, "router": 0, "lm_head": 0,
          "norms_bias": 0}
    step_bytes = {key: 0.0 for key in by}
    ar_bytes = {key: 0.0 for key in by}
    macs_row = {key: 0 for key in by}
    embd_row_bytes = 0
    for name, typ, shape, nbytes in tensors:
        ne = [int(x) for x in shape.split(",")]
        nbytes = int(nbytes)
        if name == "token_embd.weight":
            embd_row_bytes = nbytes // ne[1]
            continue
        if name.endswith("_exps.weight"):
            cat = "experts"
            per_expert = nbytes / ne[2]
            step_bytes[cat] += touched * per_expert
            ar_bytes[cat] += k * per_expert
            macs_row[cat] += k * ne[0] * ne[1]
            by[cat] += nbytes
            continue
        cat = ("lm_head" if name == "output.weight" else
               "attention" if ".attn_qkv." in name or ".attn_output." in name else
               "shared_expert" if "_shexp." in name else
               "router" if ".ffn_gate_inp." in name else
               "dense_ffn" if re.search(r"\.ffn_(gate|up|down)\.weight", name) else "norms_bias")
        by[cat] += nbytes
        step_bytes[cat] += nbytes
        ar_bytes[cat] += nbytes
        if len(ne) == 2 and cat != "norms_bias":
            macs_row[cat] += ne[0] * ne[1]
    step_total = sum(step_bytes.values()) + ROWS * embd_row_bytes
    ar_total = sum(ar_bytes.values()) + embd_row_bytes
    # Router products are f32 (not int8); counted with the rest, they are under 1% of the total.
    step_ops = 2 * ROWS * sum(macs_row.values())
    n_layer = int(meta[f"{arch}.block_count"])
    heads, head_dim = int(meta[f"{arch}.attention.head_count"]), int(meta[f"{arch}.attention.key_length"])
    floor = {
        "rows": ROWS,
        "expert_count": E,
        "expert_used_count": k,
        "experts_touched_per_layer": round(touched, 2),
        "experts_touched_formula": "E * (1 - (1 - k/E)^rows)",
        "step_bytes": round(step_total),
        "step_bytes_by_part": {key: round(v) for key, v in step_bytes.items()},
        "token_embd_lookup_bytes": ROWS * embd_row_bytes,
        "ar_bytes_per_token": round(ar_total),
        "ar_bytes_by_part": {key: round(v) for key, v in ar_bytes.items()},
        "file_bytes_by_part": by,
        "macs_per_row": macs_row,
        "step_int8_ops": step_ops,
        "step_int8_ops_note": "2 x rows x multiply-adds per row; LM head over all 32 rows (a block's first step)",
        "attention_macs_per_step_at_context_640": 2 * ROWS * n_layer * heads * head_dim * 640,
        "tokens_per_step_to_match_ar_at_both_floors": step_total / ar_total,
    }
    return floor, {"arch": arch, "n_layer": n_layer, "tensors": len(tensors)}


def apply_floors(floor, bw_gbs, peak_gops_core, threads, llama_tg_ms=None):
    """Adds the time floors: bytes / bandwidth, int8 ops / (threads x peak per core), their max, and that
    max over llama.cpp's autoregressive ms per token (the tokens a step must commit to keep up)."""
    if bw_gbs:
        floor["read_bw_gbs"] = bw_gbs
        floor["step_floor_bytes_s"] = floor["step_bytes"] / (bw_gbs * 1e9)
        floor["ar_floor_s_per_token"] = floor["ar_bytes_per_token"] / (bw_gbs * 1e9)
    if peak_gops_core:
        floor["int8_peak_gops"] = peak_gops_core * threads
        floor["step_floor_ops_s"] = floor["step_int8_ops"] / (peak_gops_core * threads * 1e9)
    if bw_gbs and peak_gops_core:
        floor["step_floor_s"] = max(floor["step_floor_bytes_s"], floor["step_floor_ops_s"])
        if llama_tg_ms:
            floor["step_floor_over_llama_tg_ms"] = floor["step_floor_s"] * 1000 / llama_tg_ms


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def quiet(run, threads):
    """A run during which other processes stayed off the machine: the 1-minute load average right
    after it is below threads + 0.5 (the run's own threads account for up to `threads`)."""
    return run.get("load_after", [99])[0] < threads + 0.5


def summarize(result):
    """Medians over all repeats and over the quiet ones (quiet()), and the floors with the quiet
    bandwidth and peak (all repeats when none was quiet). `quoted` holds the figures to quote."""
    threads = result["threads"]
    bench_runs, peak_runs = result["llama_cpp_bench"]["runs"], result["machine_floor_runs"]

    def tests_of(runs):
        tests = {}
        for name in ("pp32", "pp128", "tg32"):
            ts = med([r.get("tests", {}).get(name, {}).get("avg_ts") for r in runs])
            if ts:
                tests[name] = {"tok_s": ts, "ms_per_token": 1000 / ts}
                if name.startswith("pp"):
                    tests[name]["ms_per_32_rows"] = 32000 / ts
        return tests

    def machine_of(runs):
        return {k: med([r.get(k) for r in runs]) for k in ("read_bw_zmm_2t_gbs", "read_bw_zmm_2t_gbs_cpu",
                                                            "read_bw_zmm_1t_gbs", "peak_zmm_vpdpbusd_gops")}

    quiet_bench = [r for r in bench_runs if quiet(r, threads)]
    quiet_peak = [r for r in peak_runs if quiet(r, threads)]
    result["llama_cpp_bench"]["median"] = tests_of(bench_runs)
    result["llama_cpp_bench"]["median_quiet"] = tests_of(quiet_bench)
    result["llama_cpp_bench"]["quiet_runs"] = f"{len(quiet_bench)} of {len(bench_runs)}"
    result["machine_floor_median"] = machine_of(peak_runs)
    result["machine_floor_median_quiet"] = machine_of(quiet_peak)
    result["machine_floor_quiet_runs"] = f"{len(quiet_peak)} of {len(peak_runs)}"
    tests = tests_of(quiet_bench or bench_runs)
    m = machine_of(quiet_peak or peak_runs)
    apply_floors(result["floor"], m["read_bw_zmm_2t_gbs"], m["peak_zmm_vpdpbusd_gops"], threads,
                 tests.get("tg32", {}).get("ms_per_token"))
    for rec in (result.get("llama_diffusion_cli") or {}).values():
        # Every id of the synthetic vocabulary but the specials prints as "[FILLn]"; masks print as nothing.
        lines = rec.get("output_tail", "").strip().splitlines()
        rec["tokens_in_output"] = lines[-1].count("[FILL") if lines else 0
    result["quoted"] = {
        "from": ("quiet repeats (1-min load after the run below threads + 0.5): "
                 f"llama-bench {len(quiet_bench)} of {len(bench_runs)}, "
                 f"qgemm_bench {len(quiet_peak)} of {len(peak_runs)}")
        if quiet_bench and quiet_peak else "all repeats (none was quiet)",
        "llama_bench": tests, "read_bw_zmm_2t_gbs": m["read_bw_zmm_2t_gbs"],
        "read_bw_zmm_2t_gbs_cpu": m["read_bw_zmm_2t_gbs_cpu"], "read_bw_zmm_1t_gbs": m["read_bw_zmm_1t_gbs"],
        "peak_zmm_vpdpbusd_gops_per_core": m["peak_zmm_vpdpbusd_gops"],
        "floor": {k: v for k, v in result["floor"].items() if not isinstance(v, (dict, str))}}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-bin", type=Path, help="folder with llama-bench, llama-diffusion-cli, "
                    "llama-tokenize (PR #17454's build)")
    ap.add_argument("--llama-src", type=Path, help="its source checkout, for the full commit hash")
    ap.add_argument("--bin", type=Path, default=ROOT / "build" / "bin", help="our build/bin (dllm, qgemm_bench, "
                    "make_synthetic_gguf)")
    ap.add_argument("--bailingmoe2", type=Path, default=Path("/work/synth/bailingmoe2-mini-synth.gguf"))
    ap.add_argument("--llada2", type=Path, default=Path("/work/synth/llada2-mini-synth.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-load", type=float, help="wait before each measurement until the 1-min load is below")
    ap.add_argument("--max-wait", type=float, default=1200, help="seconds to wait for the load at most")
    ap.add_argument("--skip-diffusion", action="store_true")
    ap.add_argument("--note", default="")
    ap.add_argument("--summarize", type=Path, metavar="FILE", help="recompute the medians, floors and quoted "
                    "figures of a results file from its runs, in place")
    a = ap.parse_args()
    if a.summarize:
        r = summarize(json.loads(a.summarize.read_text()))
        a.summarize.write_text(json.dumps(r, indent=1) + "\n")
        print(json.dumps(r["quoted"], indent=1))
        return
    if not a.llama_bin:
        ap.error("--llama-bin is required (the folder of PR #17454's llama-bench and llama-diffusion-cli)")

    for path, arch in ((a.bailingmoe2, "bailingmoe2"), (a.llada2, "llada2")):
        e2e.ensure_model(path, arch, a.bin)
    result = {
        "kind": "llada2-baseline",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": e2e.machine(),
        "commit": e2e.commit(),
        "command": " ".join(sys.argv),
        "threads": a.threads,
        "note": a.note,
        "files": {arch: {"path": str(p), "bytes": p.stat().st_size,
                         "made_by": f"tools/make_synthetic_gguf --arch {arch} --out {p}"}
                  for p, arch in ((a.bailingmoe2, "bailingmoe2"), (a.llada2, "llada2"))},
    }
    if a.llama_src:
        result["llama_cpp_commit"] = subprocess.run(["git", "-C", str(a.llama_src), "rev-parse", "HEAD"],
                                                    capture_output=True, text=True).stdout.strip()
    bench_runs, peak_runs = [], []
    for rep in range(a.repeats):
        print(f"repeat {rep + 1}/{a.repeats}: llama-bench ...", file=sys.stderr)
        bench_runs.append(llama_bench(a.llama_bin, a.bailingmoe2, a.threads, a.max_load, a.max_wait))
        print(f"repeat {rep + 1}/{a.repeats}: qgemm_bench peak + bandwidth ...", file=sys.stderr)
        peak_runs.append(machine_peaks(a.bin, a.max_load, a.max_wait))
    result["llama_cpp_bench"] = {"runs": bench_runs}
    result["machine_floor_runs"] = peak_runs
    result["floor"], result["layout"] = layout_floor(a.bin, a.bailingmoe2)
    summarize(result)

    if not a.skip_diffusion:
        prompt = prompt_of_n_tokens(a.llama_bin, a.llada2, 512)
        result["llama_diffusion_cli"] = {}
        for hybrid in (False, True):
            key = "hybrid" if hybrid else "default"
            print(f"llama-diffusion-cli ({key}) ...", file=sys.stderr)
            result["llama_diffusion_cli"][key] = diffusion_cli(a.llama_bin, a.llada2, prompt, a.threads, hybrid,
                                                               a.max_load, a.max_wait)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = ROOT / "bench" / "results" / f"llada2-baseline-{stamp}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(path)
    print(json.dumps(result["quoted"], indent=1))


if __name__ == "__main__":
    main()
