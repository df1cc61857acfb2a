#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU backend's check on a machine with an NVIDIA GPU (issue 7), in one go:
# build for the GPU, run the GPU tests (kernels vs CPU functions, mma fragments, GPU forward vs f64
# references, llama.cpp's logits and the CPU forward), then the user's commands: `dllm logits
# --device gpu` against ../shared/reference (scripts/compare_logits.py, the CPU path's bounds) and
# `dllm run --device gpu|auto` on the tiny models and on a synthetic LLaDA-8B file made there; time
# ms/step on that file at canvas 141 and 512 for both GEMM paths, and `dllm run` steps on the GPU
# interleaved with the CPU (bench/e2e_bench.py --device-b gpu); write JSON under bench/results/,
# print a short table last.
#
#   scripts/gpu-check.sh stage [--part 1|2]     on a machine WITHOUT the GPU: build sm_90 binaries and
#                                                copy what the run needs into .gpu-stage/ (git-ignored
#                                                through .git/info/exclude), to be carried to the device
#   scripts/gpu-check.sh run [--part 1|2|all] [--arch 90] [--prebuilt] [--no-bench] [--sanitize]
#                                                on the GPU machine: build (or use the staged binaries),
#                                                test, time; results under $OUT too when OUT is set
#
# Parts exist because a device run here receives at most 64 MiB: part 1 = build, unit tests,
# synthetic-model tests, tiny-llada against llama.cpp, timings (carries tiny-llada, ~40 MiB);
# part 2 = tiny-dream (~57 MiB compressed): its GPU logits are compared with tiny-dream-c's
# llama.cpp logits there, and written to $OUT (f32, 6 files) for tiny-dream-a, whose reference
# logits do not fit;
# compare those afterwards, on any machine, with
#   DLLM_GPU_LOGITS_IN=<folder with the returned files> build-cuda/bin/cuda_forward_test --gtest_filter='*Reference*dream*'
# On a machine with the whole ../shared at hand, `run --part all` does everything at once.
#
# Building on the GPU machine needs the project's Debian packages (./dllm setup lists them); when
# the configure step fails there (a bare CUDA image), the staged binaries (.gpu-stage/bin) are used.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STAGE="$ROOT/.gpu-stage"
MODE="${1:-}"
shift || true
PART=all
ARCH=90
PREBUILT=0
BENCH=1
SANITIZE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --part) PART="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --prebuilt) PREBUILT=1; shift ;;
    --no-bench) BENCH=0; shift ;;
    --sanitize) SANITIZE=1; shift ;;
    *) echo "ERROR: unknown argument $1 (see the header of scripts/gpu-check.sh)" >&2; exit 2 ;;
  esac
done
TARGETS=(cuda_ops_test cuda_gemm_test cuda_gemm_frag_test cuda_forward_test dllm_gpu_bench make_synthetic_gguf dllm)
say() { printf 'gpu-check: %s\n' "$*" >&2; }
SHARED_SRC="${DLLM_SHARED:-$ROOT/../shared}"

build() {  # build DIR: configure for sm_$ARCH and build the GPU targets
  local dir="$1"
  mkdir -p "$dir"
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLLM_CUDA=ON -DDLLM_BENCH=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >"$dir/configure.log" 2>&1 || {
    say "configure failed (last lines of $dir/configure.log):"
    tail -5 "$dir/configure.log" >&2
    return 1
  }
  ninja -C "$dir" -j"$(nproc)" "${TARGETS[@]}"
}

if [[ "$MODE" == stage ]]; then
  # Binaries built here for sm_$ARCH, and the reference files of the part, under .gpu-stage/.
  mkdir -p "$ROOT/.git/info"
  grep -qx '/.gpu-stage/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.gpu-stage/' >>"$ROOT/.git/info/exclude"
  rm -rf "$STAGE"
  mkdir -p "$STAGE/bin" "$STAGE/shared/reference/logits"
  start=$(date +%s)
  build "$ROOT/build-gpu-stage"
  say "sm_$ARCH build took $(($(date +%s) - start)) s"
  # What the binaries were built from, for the results file (the device copy may have no .git).
  echo "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src tests tools CMakeLists.txt || echo -dirty)" \
    >"$STAGE/commit"
  nvcc --version | tail -1 >"$STAGE/nvcc"
  for t in "${TARGETS[@]}"; do cp "$ROOT/build-gpu-stage/bin/$t" "$STAGE/bin/"; done
  # dllm's shared libraries from Debian packages (libcurl, PCRE2, OpenSSL and theirs) that a bare CUDA
  # image lacks; the C and C++ runtimes and the CUDA libraries are the device machine's own.
  # Packed with xz (python3's tarfile, on every image): a third of their size.
  mkdir -p "$STAGE/lib"
  ldd "$STAGE/bin/dllm" | awk '$3 ~ /^\// {print $3}' |
    grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcublas[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
  python3 -c "import tarfile,sys; t=tarfile.open(sys.argv[1],'w:xz'); t.add(sys.argv[2],arcname='lib'); t.close()" \
    "$STAGE/lib.tar.xz" "$STAGE/lib"
  rm -rf "$STAGE/lib"
  ref="$SHARED_SRC/reference"
  cp "$ref"/logits/tokens-*.i32 "$ref"/logits/*.json "$STAGE/shared/reference/logits/"
  if [[ "$PART" == 1 ]]; then
    cp "$ref/tiny-llada-q4km.gguf" "$STAGE/shared/reference/"
    cp "$ref"/logits/logits-tiny-llada-[ac].f16 "$STAGE/shared/reference/logits/"
  elif [[ "$PART" == 2 ]]; then
    # The Dream file compressed (python3's lzma is on every image), tiny-dream-c's logits only.
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(open(sys.argv[1],'rb'), lzma.open(sys.argv[2],'wb',preset=6))" \
      "$ref/tiny-dream-q4km.gguf" "$STAGE/shared/reference/tiny-dream-q4km.gguf.xz"
    cp "$ref"/logits/logits-tiny-dream-c.f16 "$STAGE/shared/reference/logits/"
    rm -f "$STAGE/bin/cuda_ops_test" "$STAGE/bin/cuda_gemm_test" "$STAGE/bin/cuda_gemm_frag_test" "$STAGE/bin/dllm_gpu_bench"
  else
    echo "ERROR: stage needs --part 1 or --part 2" >&2
    exit 2
  fi
  say "staged $(du -sh "$STAGE" | cut -f1) in .gpu-stage/ (carry [\".gpu-stage\"]; the device limit is 64 MiB with the tree)"
  exit 0
fi

if [[ "$MODE" != run ]]; then
  echo "usage: scripts/gpu-check.sh stage --part 1|2 | run [--part 1|2|all] [--arch 90] [--prebuilt] [--no-bench] [--sanitize]" >&2
  exit 2
fi

T0=$(date +%s)
# $OUT (the device tool's return folder, at most 8 files) gets the test logs (part 1: 5 with the
# sanitizer's), the GPU logits dumps of part 2 (6) and the results file; without OUT the logs stay in
# build-gpu-logs/.
LOGDIR="${OUT:-$ROOT/build-gpu-logs}"
mkdir -p "$LOGDIR" "$ROOT/build-gpu-logs" "$ROOT/bench/results"
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader >&2 || say "nvidia-smi failed"

# Reference data: ../shared when present, else the staged copy (xz-compressed Dream unpacked to /tmp).
if [[ -d "$SHARED_SRC/reference" && -f "$SHARED_SRC/reference/tiny-llada-q4km.gguf" ]]; then
  export DLLM_SHARED="$SHARED_SRC"
elif [[ -d "$STAGE/shared/reference" ]]; then
  export DLLM_SHARED=/tmp/dllm-gpu-shared
  rm -rf "$DLLM_SHARED" && mkdir -p "$DLLM_SHARED" && cp -r "$STAGE/shared/reference" "$DLLM_SHARED/"
  if [[ -f "$DLLM_SHARED/reference/tiny-dream-q4km.gguf.xz" ]]; then
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
      "$DLLM_SHARED/reference/tiny-dream-q4km.gguf.xz" "$DLLM_SHARED/reference/tiny-dream-q4km.gguf"
  fi
else
  say "no reference data (../shared or .gpu-stage/shared): the reference-logits tests will fail"
fi

# Binaries: build here unless --prebuilt; fall back to the staged ones.
BIN=""
BUILD_S=0
if [[ "$PREBUILT" == 0 ]] && command -v nvcc >/dev/null && command -v cmake >/dev/null && command -v ninja >/dev/null; then
  start=$(date +%s)
  if build "$ROOT/build-gpu"; then BIN="$ROOT/build-gpu/bin"; fi
  BUILD_S=$(($(date +%s) - start))
fi
if [[ -z "$BIN" ]]; then
  [[ -d "$STAGE/bin" ]] || { echo "ERROR: no build and no .gpu-stage/bin (run 'scripts/gpu-check.sh stage' first)" >&2; exit 1; }
  BIN="$STAGE/bin"
  say "using the staged binaries in $BIN"
  if [[ -f "$STAGE/lib.tar.xz" ]]; then
    python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$STAGE/lib.tar.xz" /tmp/dllm-gpu-stage
    export LD_LIBRARY_PATH="/tmp/dllm-gpu-stage/lib:${LD_LIBRARY_PATH:-}"
  fi
fi
# cuBLAS from the CUDA toolkit or from pip's nvidia-cublas (the device image has both, maybe).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $(python3 -c 'import nvidia.cublas,os;print(os.path.join(nvidia.cublas.__path__[0],"lib"))' 2>/dev/null); do
  [[ -d "$d" ]] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done

# Tests. Each test binary writes its gtest JSON report next to the results.
declare -A TEST_RC
run_test() {  # run_test NAME FILTER: full log in $LOGDIR/NAME.log, figures and failures shown here
  local name="$1" filter="$2" rc=0
  [[ -x "$BIN/$name" ]] || { TEST_RC[$name]=missing; return; }
  timeout 300 "$BIN/$name" --gtest_filter="$filter" --gtest_output="json:$ROOT/build-gpu-logs/$name.json" >"$LOGDIR/$name.log" 2>&1 || rc=$?
  grep -E '^\[  FAILED  \]|^\[  PASSED  \]|^\[  SKIPPED \]|^\[figures\]|^\[note\]|Failure|Expected|Which is' "$LOGDIR/$name.log" | head -60 || true
  # Without a device every GPU test skips and the binary exits 0: that is not a pass here.
  if [[ $rc == 0 ]] && grep -q 'no CUDA device' "$LOGDIR/$name.log"; then rc=no-device; fi
  TEST_RC[$name]=$rc
}
if [[ "$PART" == 1 || "$PART" == all ]]; then
  run_test cuda_ops_test '*'
  run_test cuda_gemm_test '*'
  run_test cuda_gemm_frag_test '*'
  if [[ "$PART" == 1 ]]; then
    run_test cuda_forward_test '-*ReferenceLogits*dream*'
  else
    run_test cuda_forward_test '*'
  fi
fi
# --sanitize: compute-sanitizer (memcheck) over the kernel tests and one small forward, for
# out-of-bounds reads and writes that happen not to change a result (up to 7 minutes more). Part 1.
if [[ "$SANITIZE" == 1 && ("$PART" == 1 || "$PART" == all) ]] && command -v compute-sanitizer >/dev/null; then
  san_rc=0
  {
    timeout 120 compute-sanitizer --tool memcheck --error-exitcode 7 "$BIN/cuda_ops_test" || san_rc=$?
    timeout 120 compute-sanitizer --tool memcheck --error-exitcode 7 "$BIN/cuda_gemm_test" || san_rc=$?
    timeout 180 compute-sanitizer --tool memcheck --error-exitcode 7 "$BIN/cuda_forward_test" \
      --gtest_filter='*SyntheticGpuForward*q4km*' || san_rc=$?
  } >"$LOGDIR/compute-sanitizer.log" 2>&1
  grep -E 'ERROR SUMMARY|Invalid|out of bounds' "$LOGDIR/compute-sanitizer.log" | head -20 || true
  TEST_RC[compute-sanitizer]=$san_rc
fi
if [[ "$PART" == 2 ]]; then
  DLLM_GPU_LOGITS_OUT="$LOGDIR" run_test cuda_forward_test '*ReferenceLogits*dream*'
fi

# The user's commands on the GPU. `dllm logits --device gpu` (both GEMM paths) and `--device cpu` on the
# reference sequences whose model and llama.cpp logits are here, each compared with llama.cpp's logits
# and GPU with CPU at the CPU path's bounds (scripts/compare_logits.py); then `dllm run` on the tiny
# models with --device gpu, auto and cpu. One JSON line per check in $CHECKS, summed up in the results file.
CHECKS="$ROOT/build-gpu-logs/dllm-checks.jsonl"
: >"$CHECKS"
CHECK_FAIL=0
TMPL=/tmp/dllm-gpu-logits
mkdir -p "$TMPL"
REF="${DLLM_SHARED:-/nonexistent}/reference"
run_check() {  # run_check NAME CMD...: runs CMD (3 min at most); JSON line with rc, stdout head, stderr tail
  local name="$1" rc=0
  shift
  timeout 180 "$@" >"$TMPL/$name.out" 2>"$TMPL/$name.err" || rc=$?
  python3 -c '
import json, sys
name, rc, out, err, cmd = sys.argv[1:]
rd = lambda p: open(p, errors="replace").read()
print(json.dumps({"check": name, "rc": int(rc), "command": cmd, "stdout_head": rd(out)[:400],
                  "stderr_tail": rd(err)[-600:]}))' "$name" "$rc" "$TMPL/$name.out" "$TMPL/$name.err" "$*" >>"$CHECKS"
  [[ $rc == 0 ]] || CHECK_FAIL=1
  say "check $name: rc $rc"
}
compare() {  # compare NAME OURS REF VOCAB: one JSON line from scripts/compare_logits.py
  local rc=0
  local line
  line=$(python3 "$ROOT/scripts/compare_logits.py" "$2" "$3" --vocab "$4" --label "$1" 2>"$TMPL/compare.err") || rc=$?
  if [[ -n "$line" ]]; then
    echo "$line" >>"$CHECKS"
  else  # no comparison made (a logits file missing): the error as the check's line
    python3 -c 'import json,sys; print(json.dumps({"check": sys.argv[1], "rc": 2, "stderr_tail": open(sys.argv[2]).read()}))' \
      "compare $1" "$TMPL/compare.err" >>"$CHECKS"
  fi
  [[ $rc == 0 ]] || CHECK_FAIL=1
  tail -1 "$CHECKS" >&2
}
for seq in tiny-llada-a tiny-llada-c tiny-dream-a tiny-dream-c; do
  model="$REF/${seq%-*}-q4km.gguf" ref="$REF/logits/logits-$seq.f16" tok="$REF/logits/tokens-$seq.i32"
  [[ -f "$model" && -f "$ref" && -f "$tok" ]] || continue
  vocab=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_vocab"])' "$REF/logits/logits-$seq.json")
  run_check "logits-$seq-gpu" "$BIN/dllm" logits -m "$model" --tokens-file "$tok" -o "$TMPL/$seq-gpu.f32" --device gpu
  run_check "logits-$seq-gpu-cublas" "$BIN/dllm" logits -m "$model" --tokens-file "$tok" -o "$TMPL/$seq-cublas.f32" \
    --device gpu --gpu-gemm cublas
  run_check "logits-$seq-cpu" "$BIN/dllm" logits -m "$model" --tokens-file "$tok" -o "$TMPL/$seq-cpu.f32" --device cpu
  compare "$seq: gpu int8 vs llama.cpp" "$TMPL/$seq-gpu.f32" "$ref" "$vocab"
  compare "$seq: gpu cublas vs llama.cpp" "$TMPL/$seq-cublas.f32" "$ref" "$vocab"
  compare "$seq: cpu vs llama.cpp" "$TMPL/$seq-cpu.f32" "$ref" "$vocab"
  compare "$seq: gpu int8 vs cpu" "$TMPL/$seq-gpu.f32" "$TMPL/$seq-cpu.f32" "$vocab"
done
for model in "$ROOT/models/tiny-llada-fairytales-q4km.gguf" "$REF/tiny-llada-q4km.gguf" "$REF/tiny-dream-q4km.gguf"; do
  [[ -f "$model" ]] || continue
  m=$(basename "$model" .gguf)
  for dev in gpu auto cpu; do
    run_check "run-$m-$dev" "$BIN/dllm" run -m "$model" "Once upon a time" -n 32 --device "$dev" --json
  done
done

# `dllm serve --device gpu` on the demo model: two chat requests at once (the engine interleaves
# them on the GPU), answered on 127.0.0.1 at a port the script picks.
if [[ -f "$ROOT/models/tiny-llada-fairytales-q4km.gguf" ]] && command -v curl >/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$BIN/dllm" serve -m "$ROOT/models/tiny-llada-fairytales-q4km.gguf" --device gpu --host 127.0.0.1 \
    --port "$port" --parallel 2 >"$TMPL/serve.out" 2>"$TMPL/serve.err" &
  serve_pid=$!
  for _ in $(seq 100); do env -u LD_LIBRARY_PATH curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  body='{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":32}'
  pids=()
  for i in 1 2; do
    run_check "serve-gpu-chat-$i" env -u LD_LIBRARY_PATH curl -sf -m 60 "http://127.0.0.1:$port/v1/chat/completions" \
      -H 'Content-Type: application/json' -d "$body" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  # The subshells' CHECK_FAIL is lost: read their verdicts back.
  grep -q '"check": "serve-gpu-chat-[12]", "rc": [1-9]' "$CHECKS" && CHECK_FAIL=1
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  run_check "serve-gpu-log" tail -5 "$TMPL/serve.err"
fi

# Timings on the synthetic LLaDA-8B file (part 1 / all).
RESULTS="$ROOT/bench/results/gpu-check-$(date -u +%Y%m%dT%H%M%SZ).json"
BENCH_LINES=()
if [[ "$BENCH" == 1 && ( "$PART" == 1 || "$PART" == all ) ]]; then
  # DLLM_SYNTHETIC_LAYERS (default: the real 32) only makes a quick dry run of this script cheaper.
  SYN=/tmp/dllm-synthetic-llada-${DLLM_SYNTHETIC_LAYERS:-32}l.gguf
  [[ -f "$SYN" ]] || "$BIN/make_synthetic_gguf" --arch llada --out "$SYN" --layers "${DLLM_SYNTHETIC_LAYERS:-32}" >&2
  for canvas in 141 512; do
    for gemm in int8 cublas; do
      line=$("$BIN/dllm_gpu_bench" "$SYN" --canvas "$canvas" --rows 32 --gemm "$gemm" --steps 10 --warmup 2) ||
        line="{\"canvas\": $canvas, \"gemm\": \"$gemm\", \"error\": true}"
      BENCH_LINES+=("$line")
      echo "$line" >&2
    done
  done
  # A user's run on the 8B shape, then its denoising steps on the GPU interleaved with the CPU (all of
  # this machine's cores): ms per step and per forward pass, canvas 13 + 128 = 141.
  run_check "run-synthetic-llada-8b-gpu" "$BIN/dllm" run -m "$SYN" "Once upon a time" -n 32 --steps 4 --device gpu --json
  E2E_LOG="$ROOT/build-gpu-logs/e2e.log"
  if E2E=$(python3 "$ROOT/bench/e2e_bench.py" --bin "$BIN" --model "$SYN" --threads "$(nproc)" --steps 4 \
    --steps-long 8 --repeats 3 --device-b gpu --note "scripts/gpu-check.sh: CPU (A) and GPU (B) interleaved" 2>"$E2E_LOG"); then
    say "step times: $E2E"
    [[ -n "${OUT:-}" ]] && cp "$E2E" "$OUT/"
  else
    CHECK_FAIL=1
    E2E=""
    say "bench/e2e_bench.py failed:"
    tail -5 "$E2E_LOG" >&2
  fi
fi

# Results file: tests' exit codes, timings, build time.
{
  echo "{"
  echo "  \"when\": \"$(date -u +%FT%TZ)\", \"part\": \"$PART\", \"arch\": \"sm_$ARCH\", \"build_s\": $BUILD_S,"
  echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)\","
  echo "  \"cuda_driver\": \"$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)\","
  echo "  \"commit\": \"$(cat "$STAGE/commit" 2>/dev/null || git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)\","
  echo "  \"nvcc\": \"$(cat "$STAGE/nvcc" 2>/dev/null || nvcc --version 2>/dev/null | tail -1)\","
  echo "  \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\", \"cpus\": $(nproc),"
  echo "  \"binaries\": \"$BIN\","
  printf '  "tests": {'
  sep=""
  for k in "${!TEST_RC[@]}"; do printf '%s"%s": "%s"' "$sep" "$k" "${TEST_RC[$k]}"; sep=", "; done
  echo "},"
  echo "  \"bench\": ["
  sep=""
  for l in "${BENCH_LINES[@]}"; do printf '%s    %s' "$sep" "$l"; sep=$',\n'; done
  echo ""
  echo "  ],"
  echo "  \"e2e_results\": \"$(basename "${E2E:-none}")\","
  printf '  "dllm_checks": [\n'
  sed '$!s/$/,/' "$CHECKS" | sed 's/^/    /'
  echo "  ],"
  echo "  \"total_s\": $(($(date +%s) - T0))"
  echo "}"
} >"$RESULTS"
[[ -n "${OUT:-}" ]] && cp "$RESULTS" "$CHECKS" "$OUT/"

# The short table, last.
echo
echo "== GPU check ($(basename "$RESULTS"), $(($(date +%s) - T0)) s) =="
for k in "${!TEST_RC[@]}"; do
  case "${TEST_RC[$k]}" in
    0) s=PASS ;;
    missing) s=MISSING ;;
    no-device) s="NOT RUN (no CUDA device: the GPU tests skipped)" ;;
    *) s="FAIL (rc ${TEST_RC[$k]})" ;;
  esac
  printf '%-20s %s\n' "$k" "$s"
done
if [[ ${#BENCH_LINES[@]} -gt 0 ]]; then
  printf '%-8s %-8s %12s %18s\n' canvas gemm ms/step "ms/step (stats)"
  python3 - "${BENCH_LINES[@]}" <<'EOF'
import json, sys
for line in sys.argv[1:]:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    ms, st = r.get("ms_per_step_median"), r.get("ms_per_step_stats_median")
    fmt = lambda v: ("%.2f" % v) if v is not None else "error"
    print(f"{r.get('canvas', '?'):<8} {r.get('gemm', '?'):<8} {fmt(ms):>12} {fmt(st):>18}")
EOF
fi
python3 - "$CHECKS" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    if "check" in c:
        print(f"{c['check']:<48} {'ok' if c['rc'] == 0 else 'FAIL (rc %d)' % c['rc']}")
    else:
        print(f"{c['label']:<48} {'ok' if c['pass'] else 'FAIL'}  rel RMS max {c['rel_rms_max']:.4f} "
              f"median {c['rel_rms_median']:.4f}, argmax {c['argmax_agreement']:.3f}")
EOF
fail=$CHECK_FAIL
for k in "${!TEST_RC[@]}"; do [[ "${TEST_RC[$k]}" == 0 ]] || fail=1; done
exit $fail
