#!/usr/bin/env bash
# Tests of the ./dllm launcher: exit codes, closest-command suggestions (and none for a far word),
# help [COMMAND], apt-get's log, setup without a terminal, doctor, and pass-through to the built binary. Run by CTest with DLLM_SOURCE_DIR (the checkout),
# DLLM_BUILD_DIR (the build folder whose bin/dllm to use) and DLLM_SHARED_DEFAULT (../shared; the
# environment's DLLM_SHARED overrides it).
# Parts that would make the launcher rebuild (binary older than the sources) are skipped with a note.
set -uo pipefail

SRC="${DLLM_SOURCE_DIR:?}"
export DLLM_BUILD_DIR="${DLLM_BUILD_DIR:?}"
SHARED="${DLLM_SHARED:-${DLLM_SHARED_DEFAULT:-$SRC/../shared}}"  # $DLLM_SHARED wins, as in test_util.h
LLADA="$SHARED/reference/tiny-llada-q4km.gguf"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export HF_HUB_CACHE="$TMP/hf-cache"  # an empty cache: nothing is downloaded or found
export XDG_CACHE_HOME="$TMP/xdg"     # the verified-files memo stays out of the real home
unset HF_HUB_OFFLINE HF_ENDPOINT
failures=0

# expect CODE NEEDLE -- ARGS...: runs ./dllm ARGS with stdin from /dev/null; checks the exit code and
# that stderr+stdout contains NEEDLE.
expect() {
  local code="$1" needle="$2"
  shift 3
  local out rc
  out="$("$SRC/dllm" "$@" </dev/null 2>&1)"
  rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL: ./dllm $* -> exit $rc, expected $code"
    echo "$out" | tail -n 5
    failures=$((failures + 1))
  elif [[ -n "$needle" && "$out" != *"$needle"* ]]; then
    echo "FAIL: ./dllm $* -> output lacks '$needle':"
    echo "$out" | tail -n 5
    failures=$((failures + 1))
  else
    echo "ok: ./dllm $* -> $rc"
  fi
}

# expect_error CODE NEEDLE ABSENT -- ARGS...: the output is exactly one "ERROR: " line, containing
# NEEDLE and not ABSENT (when ABSENT is not empty), and the exit code is CODE.
expect_error() {
  local code="$1" needle="$2" absent="$3"
  shift 4
  local out rc
  out="$("$SRC/dllm" "$@" </dev/null 2>&1)"
  rc=$?
  if [[ $rc -ne $code || "$out" != "ERROR: "* || "$out" == *$'\n'* || "$out" != *"$needle"* ||
    (-n "$absent" && "$out" == *"$absent"*) ]]; then
    echo "FAIL: ./dllm $* -> exit $rc (expected $code), wanted one ERROR line with '$needle'${absent:+ and without '$absent'}:"
    echo "$out" | tail -n 5
    failures=$((failures + 1))
  else
    echo "ok: ./dllm $* -> $rc"
  fi
}

expect 2 "did you mean 'run'" -- rnu "Hi"
expect 2 "did you mean 'test'" -- tset
expect 2 "did you mean 'doctor'" -- doctr
expect 2 "did you mean 'setup'" -- setpu
expect 2 "did you mean 'inspect'" -- inspekt x.gguf
expect 2 "usage: ./dllm" --  # no command: usage on stderr, exit 2 (as git)
expect 0 "usage: ./dllm" -- --help
# Asked-for help goes to stdout (so `./dllm --help | less` works); the no-command usage to stderr.
if [[ "$("$SRC/dllm" --help 2>/dev/null)" != *"usage: ./dllm"* ]]; then
  echo "FAIL: ./dllm --help -> usage not on stdout"
  failures=$((failures + 1))
fi
if [[ -n "$("$SRC/dllm" 2>/dev/null)" ]]; then
  echo "FAIL: ./dllm (no command) -> usage on stdout, expected stderr"
  failures=$((failures + 1))
fi
expect 2 "--bogus" -- setup --bogus
# help [COMMAND]: the launcher's own commands answer without the binary.
expect 0 "usage: ./dllm setup" -- help setup
expect 0 "usage: ./dllm setup" -- setup --help
expect 0 "usage: ./dllm doctor" -- help doctor
expect 0 "usage: ./dllm test" -- help test
expect 0 "usage: ./dllm COMMAND" -- help help
expect_error 2 "unknown command 'bogus'" "" -- help bogus
expect_error 2 "did you mean 'setup'" "" -- help setpu
# A word far from every command gets the list, not a wild guess.
expect_error 2 "commands: run, tokenize" "did you mean" -- frobnicate
expect_error 2 "unknown command 'rm'" "did you mean" -- rm

# apt-get's own output goes to build/apt.log, one line per step on the terminal: with stand-ins first on
# PATH (dpkg-query: nothing is installed; apt-get: chatty; cmake: fails, so nothing is built) in a fresh
# build folder, `./dllm run` says what it installs and where the log is, then stops at the configure.
if [[ "$(id -u)" == 0 ]]; then
  fake="$TMP/fakebin"
  mkdir -p "$fake"
  printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"
  printf '#!/bin/sh\necho "Reading package lists... (stand-in apt-get $1)"\n' >"$fake/apt-get"
  printf '#!/bin/sh\necho "stand-in cmake fails"\nexit 1\n' >"$fake/cmake"
  chmod +x "$fake"/*
  out="$(PATH="$fake:$PATH" DLLM_BUILD_DIR="$TMP/fresh" "$SRC/dllm" run "Hi" </dev/null 2>&1)"
  rc=$?
  launcher_lines="$(grep -c '^dllm: ' <<<"$out")"
  if [[ $rc -ne 1 || "$out" == *"Reading package lists"* || "$out" != *"(apt-get log: "* ||
    "$(grep -c 'Reading package lists' "$TMP/fresh/apt.log" 2>/dev/null)" != 2 || $launcher_lines -gt 2 ]]; then
    echo "FAIL: ./dllm run with missing packages -> exit $rc, apt-get's output not in build/apt.log only:"
    echo "$out" | tail -n 8
    failures=$((failures + 1))
  else
    echo "ok: ./dllm run with missing packages -> apt-get output in apt.log, $launcher_lines launcher lines"
  fi
else
  echo "SKIP: apt-get log check: needs root (the launcher installs packages as root)"
fi

BIN="$DLLM_BUILD_DIR/bin/dllm"
stale="$(find "$SRC/src" "$SRC/cmake" "$SRC/CMakeLists.txt" "$SRC/tests/CMakeLists.txt" -newer "$BIN" \( -name '*.cpp' \
  -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cmake' -o -name 'CMakeLists.txt' \) -print -quit 2>/dev/null)"
if [[ ! -x "$BIN" || -n "$stale" ]]; then
  echo "SKIP: pass-through, setup and doctor checks: $BIN is missing or older than the sources ($stale)"
else
  # The binary decides: the version, the default model (the demo model: the cache is empty), doctor's
  # report and setup's closing hint, a prompt that suits the model it set up.
  expect 0 "dllm 0.1.0 (commit " -- --version
  out="$("$SRC/dllm" run "Once upon a time" -n 8 </dev/null 2>&1 >/dev/null)"
  if [[ "$out" != "note: no --model given and "*"models/tiny-llada-fairytales-q4km.gguf"* || "$out" == *$'\n'* ]]; then
    echo "FAIL: ./dllm run without --model -> stderr is not the binary's one note line: $out"
    failures=$((failures + 1))
  else
    echo "ok: ./dllm run without --model -> one note line"
  fi
  expect 0 "dllm run" -- run --help
  expect 1 "model file not found" -- run --model "$TMP/missing.gguf" "Hi"
  expect 0 "dllm logits" -- help logits
  expect 0 "dllm serve" -- serve --help
  expect 0 "dllm serve" -- help serve
  expect 0 "dllm run" -- help run
  expect 0 "dllm: local inference" -- help
  # No terminal, no --yes: setup downloads nothing, exits 3 and prints the command that finishes.
  expect 3 "./dllm setup --yes" -- setup
  expect 0 "binary is newer than the sources" -- setup --no-model
  # doctor explains the missing model (empty cache) and the GPU line, naming the fix.
  expect 0 "fix: ./dllm pull" -- doctor
  expect 0 "gpu:" -- doctor
  expect 0 "build: dllm 0.1.0" -- doctor
  expect 0 'try: ./dllm run "Once upon a time"' -- setup --no-model
fi
if [[ ! -d "$SHARED/reference" ]]; then
  echo "SKIP: the checks with the reference models: no reference data at $SHARED/reference (put the shared/ folder next to the checkout, or set DLLM_SHARED)"
elif [[ -x "$BIN" && -z "$stale" ]]; then
  expect 0 "blk.0.attn_q.weight" -- inspect "$LLADA"
  expect 0 "" -- run --model "$LLADA" "Hi" --max-tokens 8
  expect 2 "--bogus" -- run --model "$LLADA" --bogus "Hi"
  expect 0 "50257" -- tokenize --model "$LLADA" --prompt "Hi"

  # Against the fake hub (tests/hub/fake_hub.py, 127.0.0.1): setup --yes downloads and checks, pull and
  # run by repo spec, then run again from the cache with the server stopped.
  python3 "$SRC/tests/hub/fake_hub.py" --port 0 --ready-file "$TMP/port" --shared "$SHARED" \
    >"$TMP/hub.log" 2>&1 &
  hub_pid=$!
  for _ in $(seq 100); do [[ -s "$TMP/port" ]] && break; sleep 0.1; done
  if [[ ! -s "$TMP/port" ]]; then
    echo "FAIL: the fake hub did not start: $(tail -n 3 "$TMP/hub.log")"
    failures=$((failures + 1))
  else
    export HF_ENDPOINT="http://127.0.0.1:$(cat "$TMP/port")"
    expect 3 "./dllm setup --yes --model org/tiny" -- setup --model org/tiny
    expect 0 "check: generated 16 tokens" -- setup --yes --model org/tiny
    expect 0 'try: ./dllm run --model org/tiny "What is 2+2?"' -- setup --yes --model org/tiny
    expect 0 "models--org--tiny" -- pull org/tiny
    expect 0 "" -- run -m org/tiny "Hi" --max-tokens 8
    kill "$hub_pid" 2>/dev/null
    wait "$hub_pid" 2>/dev/null
    expect 0 "" -- run -m org/tiny "Hi" --max-tokens 8
    expect 0 "models--org--tiny" -- doctor
    expect 1 "./dllm pull org/tiny-dream" -- run -m org/tiny-dream --offline "Hi"
  fi
  kill "$hub_pid" 2>/dev/null || true
fi

# A first build for `run` (stub cmake and ninja on PATH, a fresh build folder): ninja's [n/N] progress
# reaches the terminal's stderr, and without an NVIDIA driver the CUDA backend is left out; `test` then
# puts CMake's default (CUDA whenever nvcc is there) back.
stub="$TMP/stub"
mkdir -p "$stub"
cat >"$stub/cmake" <<'STUB'
#!/usr/bin/env bash
echo "$*" >>"$STUB_LOG"
for ((i = 1; i <= $#; i++)); do [[ "${!i}" == "-B" ]] && { j=$((i + 1)); touch "${!j}/build.ninja"; }; done
exit 0
STUB
cat >"$stub/ninja" <<'STUB'
#!/usr/bin/env bash
echo "ninja $*" >>"$STUB_LOG"
for n in 1 2 3 4 5 6 7 8 9 10; do echo "[$n/10] Building CXX object step$n.o"; done
mkdir -p "$2/bin" && printf '#!/bin/sh\necho stub-binary "$@"\n' >"$2/bin/dllm" && chmod +x "$2/bin/dllm"
STUB
chmod +x "$stub/cmake" "$stub/ninja"
fresh="$TMP/fresh-build"
out="$(STUB_LOG="$TMP/stub.log" PATH="$stub:$PATH" DLLM_BUILD_DIR="$fresh" "$SRC/dllm" run "Hi" </dev/null 2>&1)"
if [[ "$out" != *"building [10/10]"* || "$out" != *"stub-binary run Hi"* ]]; then
  echo "FAIL: a first build shows no [n/N] progress (or did not run the binary):"
  echo "$out" | tail -n 8
  failures=$((failures + 1))
else
  echo "ok: ./dllm run on a fresh build folder shows [n/N] progress"
fi
if [[ ! -e /proc/driver/nvidia/version ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  if grep -q -- '-DDLLM_CUDA=OFF' "$TMP/stub.log" && [[ -e "$fresh/cuda-skipped" ]]; then
    echo "ok: no NVIDIA driver: the first build for run leaves CUDA out"
  else
    echo "FAIL: no NVIDIA driver, yet the first build for run was configured with CUDA: $(cat "$TMP/stub.log")"
    failures=$((failures + 1))
  fi
fi

if ((failures > 0)); then
  echo "$failures launcher check(s) failed"
  exit 1
fi
echo "all launcher checks passed"
