#!/usr/bin/env python3
"""End-to-end denoising-step benchmark on a synthetic full-size file (LLaDA-8B by default; --arch
llada-moe --model ... for LLaDA-MoE-7B-A1B).

Runs `dllm run --json` on a canvas of prompt + 128 masks for a few steps and records ms per step
(each step is one full forward pass over the canvas plus the sampler), ms per forward pass, load
time and peak RSS in bench/results/e2e-<arch>-c<canvas>-t<threads>-<utc stamp>.json with the
machine, the commit and the exact commands. Speed does not depend on the weight values, so the
random valid blocks of tools/make_synthetic_gguf suffice; the file is made when missing.

When $LLAMA_DIFFUSION_CLI names a llama.cpp `llama-diffusion-cli`, it runs on the same file, the
same canvas (-ub = -b = -c = canvas: its canvas length is n_ubatch) and the same threads, interleaved
with ours (ours, llama.cpp, ours, llama.cpp, ...), with the same schedule: one block over the
generated part and --steps steps, so both do exactly --steps forward passes of the whole canvas.
(llama-diffusion-cli counts its blocks from position 0 and asserts n_ubatch % block_length == 0;
block length = canvas makes one block from the end of the prompt to the end of the canvas, the same
as our --block-length = --max-tokens.) llama-diffusion-cli prints only totals over the run:
"total time: T ms, time per step: T/steps ms, sampling time per step: S/steps ms" (its
examples/diffusion/diffusion.cpp), so its forward ms per step is the difference of the two. It
always applies the file's chat template to -p, so its prompt is longer than ours and it has fewer
masks to sample; the forward pass, the figure compared, covers the same canvas length either way.

The machine is shared: every run records the 1-minute load average before and after it, and the
process's CPU time (user + system) beside its wall time.

With --steps-long N each repeat also runs both tools with N steps, and the per-step wall and CPU time
(user + system, both threads) are also taken from the difference of the two runs, which cancels load,
set-up and first-step costs on both sides; the CPU figure is the one least disturbed by other
processes on a shared machine (spin-waiting threads still count).

Usage: bench/e2e_bench.py [--bin build/bin] [--model PATH] [--threads 2] [--prompt-tokens 13]
                          [--gen 128] [--steps 4] [--steps-long 0] [--repeats 3] [--isa NAME]
                          [--isa-b NAME] [--peak-json FILE] [--note TEXT]

With --isa-b a second kernel path of ours runs in every repeat right after the first (e.g. --isa amx
--isa-b avx512vnni: the AMX tile GEMM against the AVX-512 path, interleaved); its runs and figures
go under "isa_b", whose speedup_forward is its forward time over that of --isa. --device-b gpu does
the same with a second device (the CUDA backend against the CPU, scripts/gpu-check.sh); its figures go
under "device_b".
"""
import argparse
import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None


def machine():
    model = platform.processor()
    flags = ""
    vendor = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("vendor_id") and vendor is None:
                vendor = line.split(":", 1)[1].strip()
            if line.startswith("model name") and model in ("", platform.processor()):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line
    except OSError:
        pass
    mem = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    isa = [f for f in ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "amx_tile", "amx_int8", "amx_bf16")
           if f" {f} " in flags + " "]
    m = {"host": socket.gethostname(), "vendor": vendor, "cpu": model, "logical_cpus": os.cpu_count(),
         "mem_bytes": mem, "isa_flags": isa, "kernel": platform.release()}
    try:  # the GPU, driver and memory where nvidia-smi answers
        m["gpu"] = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                       "--format=csv,noheader"]).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        pass
    return m


def commit(bindir=None):
    """The commit of the dllm build in bindir (default $DLLM_BIN_DIR or build/bin) as its --version names
    it: the code that ran, "-dirty" when its sources differed from that commit when it was built. Without
    a build there: the checkout's HEAD, "-dirty" when src/, tools/ or CMakeLists.txt differ from it now."""
    bindir = Path(bindir) if bindir else Path(os.environ.get("DLLM_BIN_DIR", ROOT / "build" / "bin"))
    stamp = re.findall(r"commit (\S+)\)", commit_of(bindir))
    if stamp and stamp[0] != "unknown":
        return stamp[0]
    try:
        rev = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "src",
                    "tools", "CMakeLists.txt"]).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def commit_of(bindir: Path):
    """What `dllm --version` of the build in bindir says (it names the commit it was built from)."""
    try:
        return sh([str(bindir / "dllm"), "--version"]).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def timed(cmd):
    """Runs cmd; returns (returncode, stdout, stderr, wall seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    return p.returncode, out, err, wall


def ensure_model(path: Path, arch: str, bindir: Path):
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tool = bindir / "make_synthetic_gguf"
    if not tool.exists():
        sys.exit(f"ERROR: {tool} not found: build first (ninja -C build make_synthetic_gguf)")
    print(f"making {path} ...", file=sys.stderr)
    sh([str(tool), "--arch", arch, "--out", str(path)])


def matmul_params(bindir: Path, model: Path):
    """Multiply-adds per token of all weight matrices a forward pass multiplies (every 2-D tensor but
    token_embd, which is a row lookup), from `dllm inspect`'s tensor list. A 3-D expert tensor
    [n_in, n_out, E] counts expert_used_count of its E matrices: each token runs that many."""
    out = sh([str(bindir / "dllm"), "inspect", str(model)]).stdout
    used = re.search(r"^\s*\S+\.expert_used_count\s+\S+\s+(\d+)", out, re.M)
    k = int(used.group(1)) if used else 0
    total = 0
    for m in re.finditer(r"^\s*\d+\s+(\S+)\s+\S+\s+\[(\d+), (\d+)(?:, (\d+))?\]", out, re.M):
        if m.group(1) == "token_embd.weight":
            continue
        n = int(m.group(2)) * int(m.group(3))
        total += n * k if m.group(4) else n
    return total


def prompt_with_n_tokens(bindir: Path, model: Path, n: int) -> str:
    """A raw prompt (no chat template) that tokenizes to exactly n ids, BOS included."""
    words = []
    for _ in range(4 * n):
        text = " ".join(words)
        out = sh([str(bindir / "dllm"), "tokenize", "--model", str(model), "--no-chat", "--prompt", text]).stdout
        count = len(out.split())
        if count == n:
            return text
        if count > n:
            break
        words.append("the")
    sys.exit(f"ERROR: could not build a prompt of exactly {n} tokens")


def cpu_children():
    r = os.times()
    return r.children_user + r.children_system


def run_ours(cmd):
    la0, c0 = loadavg(), cpu_children()
    rc, out, err, wall = timed(cmd)
    if rc != 0:
        sys.exit(f"ERROR: dllm exited {rc}: {err.strip()[-2000:]}")
    j = json.loads(out)
    t = j["timings"]
    steps, fwd = t.get("step_ms") or [], t.get("forward_ms") or []
    return {"step_ms": steps, "forward_ms": fwd, "sum_step_ms": sum(steps),
            "median_step_ms": statistics.median(steps), "mean_step_ms": statistics.fmean(steps),
            "median_forward_ms": statistics.median(fwd), "mean_forward_ms": statistics.fmean(fwd),
            "load_ms": t.get("load_ms"), "peak_rss_bytes": j.get("peak_rss_bytes"),
            "steps_run": j.get("steps_run"), "isa": j.get("isa"), "threads": j.get("threads"),
            "n_prompt_tokens": j.get("n_prompt_tokens"), "wall_s": round(wall, 2),
            "cpu_s": round(cpu_children() - c0, 2), "loadavg_before": la0, "loadavg_after": loadavg()}


def llama_cmd(cli, model, prompt, canvas, steps, threads):
    return [cli, "-m", str(model), "-p", prompt, "-ub", str(canvas), "-b", str(canvas), "-c", str(canvas),
            "-t", str(threads), "-tb", str(threads), "--diffusion-steps", str(steps),
            "--diffusion-block-length", str(canvas), "--temp", "0", "--seed", "1"]


LLAMA_TIMES = re.compile(r"total time:\s*([0-9.]+)\s*ms, time per step:\s*([0-9.]+)\s*ms, "
                         r"sampling time per step:\s*([0-9.]+)\s*ms")


def run_llama(cmd, steps):
    la0, c0 = loadavg(), cpu_children()
    rc, out, err, wall = timed(["/usr/bin/time", "-f", "MAXRSS_KB=%M"] + cmd)
    text = err + out
    m = LLAMA_TIMES.search(text)
    rss = re.search(r"MAXRSS_KB=(\d+)", text)
    r = {"rc": rc, "wall_s": round(wall, 2), "cpu_s": round(cpu_children() - c0, 2),
         "loadavg_before": la0, "loadavg_after": loadavg(),
         "peak_rss_bytes": int(rss.group(1)) * 1024 if rss else None}
    if m:
        total, per_step, sampling = (float(g) for g in m.groups())
        r.update({"total_ms": total, "step_ms": per_step, "sampling_ms_per_step": sampling,
                  "forward_ms": per_step - sampling})
        # Its steps end early only when no mask is left in the block; ours ran all of them.
        r["steps_counted"] = steps
    else:
        r["error_tail"] = text.strip()[-1500:]
    return r


def slope(short, long, key, n_short, n_long):
    """Per-step cost from a short and a long run of one tool: (long - short) / (extra steps). Load,
    set-up and a slow first step cancel out."""
    if short.get(key) is None or long.get(key) is None:
        return None
    return (long[key] - short[key]) / (n_long - n_short)


def summarize(result):
    """Fills the derived figures of a results file from its raw runs (so they can be recomputed).

    forward_ms_per_step / step_ms_per_step: median over all runs (short and long) of each run's mean
    over its steps, for ours and for llama.cpp alike (llama-diffusion-cli prints only that mean);
    speedup_forward is the ratio of the two. slope: per-step sum of step times and CPU seconds from the
    difference between each repeat's short and long run; speedup_slope_* are the ratios."""
    ours = result["runs"] + result.get("runs_long", [])
    all_steps = [s for r in ours for s in r["step_ms"]]
    result["median_step_ms"] = statistics.median(all_steps)
    result["median_forward_ms"] = statistics.median([s for r in ours for s in r["forward_ms"]])
    result["step_ms_per_step"] = statistics.median([r["mean_step_ms"] for r in ours])
    result["forward_ms_per_step"] = statistics.median([r["mean_forward_ms"] for r in ours])
    result["load_ms"] = statistics.median([r["load_ms"] for r in ours])
    result["peak_rss_bytes"] = max(r["peak_rss_bytes"] or 0 for r in ours)
    result["rss_over_file"] = result["peak_rss_bytes"] / result["model_bytes"]
    result["rss_limit_bytes"] = int(1.15 * result["model_bytes"] + 0.5 * 2**30)
    d = (result.get("steps_long") or 0) - result["steps"]
    if result.get("runs_long"):
        result["slope"] = {
            "wall_ms_per_step": statistics.median(
                [slope(s, l, "sum_step_ms", 0, d) for s, l in zip(result["runs"], result["runs_long"])]),
            "cpu_s_per_step": statistics.median(
                [slope(s, l, "cpu_s", 0, d) for s, l in zip(result["runs"], result["runs_long"])])}
    if "floor" in result:
        f = result["floor"]
        f.pop("floor_over_median_forward", None)
        f["floor_ms_per_step"] = result["ops_per_step"] / (f["peak_zmm_vpdpbusd_gops_per_core"] * 1e9 *
                                                           result["threads"]) * 1e3
        f["floor_over_forward_ms_per_step"] = f["floor_ms_per_step"] / result["forward_ms_per_step"]
        if "slope" in result:
            # CPU seconds per step against the peak of both cores' seconds: independent of other load.
            f["floor_cpu_s_per_step"] = f["floor_ms_per_step"] / 1e3 * result["threads"]
            f["floor_over_slope_cpu"] = f["floor_cpu_s_per_step"] / result["slope"]["cpu_s_per_step"]
    for key in ("isa_b", "device_b", "bin_b"):  # the B side: the same figures from its own runs
        b = result.get(key)
        if not b:
            continue
        sub = {k: result.get(k) for k in ("model_bytes", "steps", "steps_long", "threads", "ops_per_step")}
        sub.update(runs=b["runs"], runs_long=b.get("runs_long", []))
        summarize(sub)
        for k in ("median_step_ms", "median_forward_ms", "step_ms_per_step", "forward_ms_per_step", "load_ms",
                  "peak_rss_bytes", "slope"):
            if k in sub:
                b[k] = sub[k]
        b["speedup_forward"] = b["forward_ms_per_step"] / result["forward_ms_per_step"]
    lc = result.get("llama_cpp")
    if not lc:
        return result
    theirs = [t for t in lc["runs"] + lc.get("runs_long", []) if "step_ms" in t]
    lc["peak_rss_bytes"] = max((t["peak_rss_bytes"] or 0) for t in lc["runs"] + lc.get("runs_long", []))
    for k in ("median_step_ms", "median_forward_ms", "ours_median_of_mean_forward_ms"):
        lc.pop(k, None)
    if theirs:
        lc["step_ms_per_step"] = statistics.median([t["step_ms"] for t in theirs])
        lc["forward_ms_per_step"] = statistics.median([t["forward_ms"] for t in theirs])
        lc["speedup_forward"] = lc["forward_ms_per_step"] / result["forward_ms_per_step"]
    pairs = [(s, l) for s, l in zip(lc["runs"], lc.get("runs_long", [])) if "total_ms" in s and "total_ms" in l]
    if pairs and "slope" in result:
        lc["slope"] = {
            # total_ms excludes llama.cpp's load and covers forward + sampling, like our sum of step_ms.
            "wall_ms_per_step": statistics.median([slope(s, l, "total_ms", 0, d) for s, l in pairs]),
            "cpu_s_per_step": statistics.median([slope(s, l, "cpu_s", 0, d) for s, l in pairs])}
        result["speedup_slope_wall"] = lc["slope"]["wall_ms_per_step"] / result["slope"]["wall_ms_per_step"]
        result["speedup_slope_cpu"] = lc["slope"]["cpu_s_per_step"] / result["slope"]["cpu_s_per_step"]
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", type=Path, default=Path(os.environ.get("DLLM_BIN_DIR", ROOT / "build" / "bin")),
                    help="folder with dllm and make_synthetic_gguf (default build/bin or $DLLM_BIN_DIR)")
    ap.add_argument("--model", type=Path, default=ROOT / "bench" / "tmp" / "llada-8b-synth.gguf")
    ap.add_argument("--arch", default="llada")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=13)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--steps-long", type=int, default=0,
                    help="also run both tools with this many steps in each repeat; per-step wall and CPU "
                         "time then also come from the difference of the two runs (0: off)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--isa", default=None)
    ap.add_argument("--isa-b", default=None,
                    help="a second --isa for dllm, run interleaved with the first in every repeat (results under isa_b)")
    ap.add_argument("--device-b", default=None,
                    help="a second --device for dllm (gpu), run interleaved with the CPU in every repeat "
                         "(results under device_b)")
    ap.add_argument("--bin-b", type=Path, default=None,
                    help="a second folder with a dllm build (another commit), run interleaved with --bin in every "
                         "repeat: an A/B of two builds (results under bin_b; not a row of the README table)")
    ap.add_argument("--peak-json", type=Path, default=None,
                    help="a bench/results/qgemm-*.json whose context has peak_zmm_vpdpbusd_gops: adds the floor")
    ap.add_argument("--note", default="", help="free text stored in the results file")
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more flags for dllm run")
    ap.add_argument("--summarize", type=Path, nargs="+", default=None,
                    help="recompute the derived figures of existing results files from their raw runs and exit "
                         "(with --peak-json: also add the floor from that peak file)")
    a = ap.parse_args()
    if sum(x is not None for x in (a.isa_b, a.device_b, a.bin_b)) > 1:
        sys.exit("ERROR: --isa-b, --device-b and --bin-b each take the B side: give one of them")
    if a.summarize:
        for path in a.summarize:
            r = json.loads(path.read_text())
            if a.peak_json:  # add (or replace) the floor, and say so in the note
                ctx = json.loads(a.peak_json.read_text())["context"]
                peak_file = str(a.peak_json.resolve().relative_to(ROOT))
                r["floor"] = {"peak_file": peak_file,
                              "peak_zmm_vpdpbusd_gops_per_core": float(ctx["peak_zmm_vpdpbusd_gops"])}
                added = f"floor added afterwards from {peak_file} (e2e_bench.py --summarize --peak-json)"
                if added not in r.get("note", ""):
                    r["note"] = (r.get("note", "") + "; " + added).lstrip("; ")
            r = summarize(r)
            for k in ("mean_step_ms", "mean_forward_ms"):
                r.pop(k, None)
            path.write_text(json.dumps(r, indent=2) + "\n")
        return

    bindir = a.bin if a.bin.is_absolute() else (Path.cwd() / a.bin)
    ensure_model(a.model, a.arch, bindir)
    prompt = prompt_with_n_tokens(bindir, a.model, a.prompt_tokens)
    canvas = a.prompt_tokens + a.gen

    bindir_b = None
    if a.bin_b:
        bindir_b = a.bin_b if a.bin_b.is_absolute() else (Path.cwd() / a.bin_b)

    def ours_cmd(steps, isa=a.isa, device="cpu", bins=bindir):
        cmd = [str(bins / "dllm"), "run", "--model", str(a.model), "--no-chat", "--prompt", prompt,
               "--max-tokens", str(a.gen), "--block-length", str(a.gen), "--steps", str(steps),
               "--threads", str(a.threads), "--no-early-stop", "--json"]
        # The CPU against llama.cpp's CPU: the binary's default device (auto) would take a GPU.
        device = [] if "--device" in a.extra else ["--device", device]
        return cmd + device + (["--isa", isa] if isa else []) + a.extra

    llama = os.environ.get("LLAMA_DIFFUSION_CLI")
    step_counts = [a.steps] + ([a.steps_long] if a.steps_long else [])
    ours = {n: [] for n in step_counts}
    theirs = {n: [] for n in step_counts}
    ours_b = {n: [] for n in step_counts}
    for i in range(a.repeats):
        for n in step_counts:
            variants = [(a.isa, "cpu", ours, bindir)] + ([(a.isa_b, "cpu", ours_b, bindir)] if a.isa_b else []) + \
                ([(a.isa, a.device_b, ours_b, bindir)] if a.device_b else []) + \
                ([(a.isa, "cpu", ours_b, bindir_b)] if bindir_b else [])
            for isa, device, runs, bins in variants:
                runs[n].append(run_ours(ours_cmd(n, isa, device, bins)))
                o = runs[n][-1]
                side = " (B build)" if bins is not bindir else ""
                print(f"[{i + 1}/{a.repeats}] dllm{side} --device {device} --isa {isa or 'auto'} {n} steps: {o['median_step_ms']:.0f} ms/step "
                      f"median, forward {o['median_forward_ms']:.0f} ms, load {o['load_ms']:.0f} ms, cpu {o['cpu_s']} s, "
                      f"load avg {o['loadavg_before']}", file=sys.stderr)
            if llama:
                theirs[n].append(run_llama(llama_cmd(llama, a.model, prompt, canvas, n, a.threads), n))
                t = theirs[n][-1]
                print(f"[{i + 1}/{a.repeats}] llama-diffusion-cli {n} steps: {t.get('step_ms')} ms/step, forward "
                      f"{t.get('forward_ms')} ms (rc {t['rc']}), cpu {t['cpu_s']} s, load avg {t['loadavg_before']}",
                      file=sys.stderr)

    macs = matmul_params(bindir, a.model)
    result = {
        "kind": "e2e",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(), "commit": commit(a.bin), "command": " ".join(ours_cmd(a.steps)), "note": a.note,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        # The binary may be older than the commit above (and built from a tree with local edits).
        "dllm_binary_mtime": datetime.datetime.fromtimestamp((bindir / "dllm").stat().st_mtime,
                                                             datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model": a.model.name, "model_bytes": a.model.stat().st_size, "arch": a.arch,
        "threads": a.threads, "prompt_tokens": a.prompt_tokens, "canvas": canvas, "steps": a.steps,
        "steps_long": a.steps_long or None, "repeats": a.repeats,
        "runs": ours[a.steps], "runs_long": ours[a.steps_long] if a.steps_long else [],
        # 2 int8 ops (multiply, add) per weight per canvas position, all matrices but token_embd.
        "matmul_macs_per_token": macs, "ops_per_step": 2 * macs * canvas,
    }
    if a.device_b:
        result["device_b"] = {"device": a.device_b, "command": " ".join(ours_cmd(a.steps, a.isa, a.device_b)),
                              "runs": ours_b[a.steps], "runs_long": ours_b[a.steps_long] if a.steps_long else []}
    if bindir_b:
        result["bin_b"] = {"bin": str(bindir_b), "commit": commit_of(bindir_b),
                           "command": " ".join(ours_cmd(a.steps, a.isa, "cpu", bindir_b)),
                           "runs": ours_b[a.steps], "runs_long": ours_b[a.steps_long] if a.steps_long else []}
    if a.isa_b:
        result["isa_b"] = {"isa": a.isa_b, "command": " ".join(ours_cmd(a.steps, a.isa_b)),
                           "runs": ours_b[a.steps], "runs_long": ours_b[a.steps_long] if a.steps_long else []}
    if a.peak_json:
        ctx = json.loads(a.peak_json.read_text())["context"]
        result["floor"] = {"peak_file": str(a.peak_json.resolve().relative_to(ROOT)),
                           "peak_zmm_vpdpbusd_gops_per_core": float(ctx["peak_zmm_vpdpbusd_gops"])}
    if llama:
        result["llama_cpp"] = {"command": " ".join(llama_cmd(llama, a.model, prompt, canvas, a.steps, a.threads)),
                               "runs": theirs[a.steps], "runs_long": theirs[a.steps_long] if a.steps_long else []}
    summarize(result)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = result["date"].replace(":", "").replace("-", "")
    out = out_dir / f"e2e-{a.arch}-c{canvas}-t{a.threads}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(out)


if __name__ == "__main__":
    main()
