#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DDLLM_SANITIZE=ON: -fsanitize=address,undefined -fno-sanitize-recover=all, so any finding fails
# the test that hit it; leaks are findings too) in build-asan/ and runs the C++ tests with CTest.
# CPU code only (CUDA off, benchmarks off). The tests that call Python use build/venv when
# `./dllm test` made it.
#
# Left out by default (DLLM_ASAN_EXCLUDE, a CTest -E regex; set it empty to run everything): the
# Python harnesses of the bench scripts (bench_py_tests: whole generation runs of the binary, the
# slowest test of the suite, and no parser code the C++ tests miss), the README table check
# (bench_table_check: Python only) and the web page in a browser (server_py_webui_test: the page's
# JavaScript, which the sanitizers do not see; the server code it reaches runs sanitized in
# stream_test, bad_input_test and webui_routes_test).
# Usage: scripts/sanitize.sh [ctest arguments...]     e.g. scripts/sanitize.sh -R gguf_
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUILD="${DLLM_ASAN_BUILD_DIR:-$ROOT/build-asan}"
EXCLUDE="${DLLM_ASAN_EXCLUDE-^(bench_py_tests|bench_table_check|server_py_webui_test)$}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$ROOT")}"
# clang, as the fuzz build: GCC took several times longer to compile the suite with ASan + UBSan.
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "sanitize.sh: $tool not found: apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }
done
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLLM_SANITIZE=ON \
    -DDLLM_CUDA=OFF -DDLLM_BENCH=OFF >/dev/null
fi
ninja -C "$BUILD" -j"${DLLM_JOBS:-2}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [ -x "$ROOT/build/venv/bin/python3" ]; then export PATH="$ROOT/build/venv/bin:$PATH"; fi
exclude=()
[ -n "$EXCLUDE" ] && exclude=(-E "$EXCLUDE")
ctest --test-dir "$BUILD" --output-on-failure -j"${DLLM_JOBS:-2}" "${exclude[@]}" "$@"
