#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU backend's check on a machine with an NVIDIA GPU (issue 7), in one go:
# build for the GPU, run the GPU tests (kernels vs CPU functions, mma fragments, GPU forward vs f64
# references, llama.cpp's logits and the CPU forward), time ms/step on the synthetic LLaDA-8B file at
# canvas 141 and 512 for both GEMM paths, write JSON under bench/results/, print a short table last.
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
TARGETS=(cuda_ops_test cuda_gemm_test cuda_gemm_frag_test cuda_forward_test dllm_gpu_bench make_synthetic_gguf)
say() { printf 'gpu-check: %s\n' "$*" >&2; }
SHARED_SRC="${DLLM_SHARED:-$ROOT/../shared}"

build() {  # build DIR: configure for sm_$ARCH and build the GPU targets
  local dir="$1"
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLLM_CUDA=ON -DDLLM_BENCH=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >"$dir.configure.log" 2>&1 || {
    say "configure failed (last lines of $dir.configure.log):"
    tail -5 "$dir.configure.log" >&2
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
  for t in "${TARGETS[@]}"; do cp "$ROOT/build-gpu-stage/bin/$t" "$STAGE/bin/"; done
  ref="$SHARED_SRC/reference"
  cp "$ref"/logits/tokens-*.i32 "$ref"/logits/*.json "$STAGE/shared/reference/logits/"
  if [[ "$PART" == 1 ]]; then
    cp "$ref/tiny-llada-q4km.gguf" "$STAGE/shared/reference/"
    cp "$ref"/logits/logits-tiny-llada-*.f16 "$STAGE/shared/reference/logits/"
  elif [[ "$PART" == 2 ]]; then
    # The Dream file compressed (python3's lzma is on every image), tiny-dream-c's logits only.
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(open(sys.argv[1],'rb'), lzma.open(sys.argv[2],'wb',preset=6))" \
      "$ref/tiny-dream-q4km.gguf" "$STAGE/shared/reference/tiny-dream-q4km.gguf.xz"
    cp "$ref"/logits/logits-tiny-dream-c.f16 "$STAGE/shared/reference/logits/"
    rm -f "$STAGE/bin/cuda_ops_test" "$STAGE/bin/cuda_gemm_test" "$STAGE/bin/cuda_gemm_frag_test" "$STAGE/bin/dllm_gpu_bench" \
      "$STAGE/bin/make_synthetic_gguf"
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
  "$BIN/$name" --gtest_filter="$filter" --gtest_output="json:$ROOT/build-gpu-logs/$name.json" >"$LOGDIR/$name.log" 2>&1 || rc=$?
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
fi

# Results file: tests' exit codes, timings, build time.
{
  echo "{"
  echo "  \"when\": \"$(date -u +%FT%TZ)\", \"part\": \"$PART\", \"arch\": \"sm_$ARCH\", \"build_s\": $BUILD_S,"
  echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)\","
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
  echo "  \"total_s\": $(($(date +%s) - T0))"
  echo "}"
} >"$RESULTS"
[[ -n "${OUT:-}" ]] && cp "$RESULTS" "$OUT/"

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
fail=0
for k in "${!TEST_RC[@]}"; do [[ "${TEST_RC[$k]}" == 0 ]] || fail=1; done
exit $fail
