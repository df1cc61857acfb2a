#!/usr/bin/env bash
# Without the reference data (a fresh clone has no ../shared), the tests that read it skip, naming what
# is missing and how to provide it, and the test programs still exit 0: `./dllm test` then passes on
# what it could run. Runs a test program of each kind of reference reader (the tokenizer fixture, the
# reference forward helper, the binary's tests, the hub's fake server, a plain reference() call) with
# DLLM_SHARED pointing at an empty folder, filtered to tests that read the data. Run by CTest with
# DLLM_BUILD_DIR.
set -uo pipefail

BIN_DIR="${DLLM_BUILD_DIR:?}/bin"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0

# check PROGRAM FILTER: every selected test skips with the reason, and the program exits 0.
check() {
  local program="$BIN_DIR/$1" filter="$2" out rc
  if [[ ! -x "$program" ]]; then
    echo "SKIP: $1 is not built"
    return
  fi
  out="$(DLLM_SHARED="$TMP/none" "$program" --gtest_filter="$filter" 2>&1)"
  rc=$?
  local ran skipped
  ran="$(grep -c '^\[ RUN      \]' <<<"$out")"
  skipped="$(grep -c '^\[  SKIPPED \] [A-Za-z].* ms)$' <<<"$out")"
  if [[ $rc -ne 0 || $ran -eq 0 || $skipped -ne $ran || "$out" != *"DLLM_SHARED=/path/to/shared"* ]]; then
    echo "FAIL: $1 --gtest_filter=$filter without reference data: exit $rc, $ran ran, $skipped skipped"
    grep -E 'FAILED|Failure|error' <<<"$out" | head -n 5
    failures=$((failures + 1))
  else
    echo "ok: $1 ($filter): $skipped skipped, exit 0"
  fi
}

check tokenizer_golden_test '*'
check cpu_reference_logits_test '*'
check cli_run_test 'Run.BothReferenceModelsPrintText:Run.JsonObjectHasTheFields'
check cli_tools_test 'Inspect.ListsMetadataTypesAndTensors:Tokenize.*:Logits.*'
check hub_hub_test 'Hub.*:HubLocal.PathsAreReturnedAsIsOrNamedWhenMissing'
check gguf_reference_test '*'

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all no-reference-data checks passed"
