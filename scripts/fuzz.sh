#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/*.cpp; clang, ASan + UBSan, -DDLLM_FUZZ=ON) in build-fuzz/
# and runs each one, one at a time:
#   1. replay: every input of fuzz/corpus/<harness>/ (seeds, the minimised corpus, each crash
#      reproducer) must pass;
#   2. SECONDS of new inputs (libFuzzer -max_total_time), starting from that corpus plus the inputs
#      earlier runs found (build-fuzz/fuzz-work/<harness>/, kept between runs, not in git).
# Writes bench/results/fuzz-<UTC time>.json: per harness executions, seconds, coverage (libFuzzer's
# cov: edges and ft: features), corpus size, crashes and their reproducer paths; the CPU, the
# commit, the compiler. Exits 1 when any harness crashed, leaked, hung (-timeout) or ran out of
# memory (-rss_limit_mb / -malloc_limit_mb); the reproducer is under build-fuzz/fuzz-artifacts/.
#
# Usage: scripts/fuzz.sh [SECONDS] [--harness NAME]... [--minimize] [--no-results]
#   SECONDS      new-input time per harness (default 60)
#   --harness    run only these (default: every fuzz/*_fuzz.cpp)
#   --minimize   afterwards, replace fuzz/corpus/<harness>/ by the minimised union of it and the
#                inputs found (libFuzzer -merge=1 -use_counters=0: the same edges, fewest inputs);
#                crash-* reproducers are always kept
#   --no-results do not write the results file
# Run long sessions politely on a shared machine: nice -n 19 scripts/fuzz.sh 900 --harness gguf_fuzz
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

seconds=60
harnesses=()
minimize=0
results=1
while [ $# -gt 0 ]; do
  case "$1" in
    --harness) harnesses+=("$2"); shift 2 ;;
    --minimize) minimize=1; shift ;;
    --no-results) results=0; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *[!0-9]*|'') echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    *) seconds="$1"; shift ;;
  esac
done
if [ ${#harnesses[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cpp; do harnesses+=("$(basename "$f" .cpp)"); done
fi

BUILD="$ROOT/build-fuzz"
say() { printf 'fuzz.sh: %s\n' "$*" >&2; }
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { say "$tool not found: apt-get install -y clang libclang-rt-14-dev"; exit 1; }
done
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$ROOT")}"
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLLM_FUZZ=ON \
    -DDLLM_CUDA=OFF -DDLLM_TESTS=OFF -DDLLM_BENCH=OFF >/dev/null
fi
ninja -C "$BUILD" -j"${DLLM_JOBS:-2}" "${harnesses[@]}" >&2

# Sanitizer settings: stop at the first finding, with a stack trace.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LIBFUZZER_FLAGS=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -print_final_stats=1)

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
# The code fuzzed is the checkout as it is now (later commits during a long run do not count).
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no -- src fuzz ':!fuzz/corpus' CMakeLists.txt 2>/dev/null)" ]; then
  commit="$commit-dirty"
fi
report="$BUILD/fuzz-report-$stamp.jsonl"
: >"$report"
failed=0
for h in "${harnesses[@]}"; do
  corpus="$ROOT/fuzz/corpus/$h"
  work="$BUILD/fuzz-work/$h"
  artifacts="$BUILD/fuzz-artifacts/$h/"
  mkdir -p "$corpus" "$work" "$artifacts"
  dict=()
  [ -f "$ROOT/fuzz/dict/$h.dict" ] && dict=(-dict="$ROOT/fuzz/dict/$h.dict")
  log="$BUILD/fuzz-$h-$stamp.log"
  marker="$BUILD/fuzz-artifacts/.start-$h"
  touch "$marker"

  say "$h: replaying $(ls "$corpus" | wc -l) corpus inputs"
  t0=$(date +%s.%N)
  replay_rc=0
  "$BUILD/bin/$h" "${LIBFUZZER_FLAGS[@]}" -runs=0 -artifact_prefix="$artifacts" "$corpus" >"$log.replay" 2>&1 \
    || replay_rc=$?
  t1=$(date +%s.%N)
  run_rc=0
  if [ "$replay_rc" -eq 0 ]; then
    say "$h: fuzzing for $seconds s"
    "$BUILD/bin/$h" "${LIBFUZZER_FLAGS[@]}" "${dict[@]}" -max_total_time="$seconds" \
      -artifact_prefix="$artifacts" "$work" "$corpus" >"$log" 2>&1 || run_rc=$?
  else
    cp "$log.replay" "$log"
  fi
  t2=$(date +%s.%N)
  new_artifacts="$(find "$artifacts" -type f -newer "$marker" | sort | tr '\n' ' ')"
  if [ "$replay_rc" -ne 0 ] || [ "$run_rc" -ne 0 ]; then
    failed=1
    say "$h: FAILED (replay exit $replay_rc, fuzz exit $run_rc); log $log; reproducer: ${new_artifacts:-none}"
    grep -E "ERROR:|FUZZ_CHECK|runtime error|SUMMARY" "$log" | head -5 >&2 || true
  fi
  python3 - "$h" "$log" "$log.replay" "$replay_rc" "$run_rc" "$t0" "$t1" "$t2" "$seconds" "$corpus" "$work" \
    "$new_artifacts" >>"$report" <<'EOF'
import json, os, re, sys
h, log, replay_log, replay_rc, run_rc, t0, t1, t2, seconds, corpus, work, artifacts = sys.argv[1:]
text = open(log, errors="replace").read()
def last(pattern, cast=int):
    m = re.findall(pattern, text)
    return cast(m[-1]) if m else None
status = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", text, re.M)
kinds = [os.path.basename(a).split("-")[0] for a in artifacts.split()]
print(json.dumps({
    "harness": h,
    "replayed_inputs": len(os.listdir(corpus)),
    "replay_s": round(float(t1) - float(t0), 2),
    "requested_s": int(seconds),
    "seconds": round(float(t2) - float(t1), 2),
    "executions": last(r"stat::number_of_executed_units: (\d+)"),
    "exec_per_s": last(r"stat::average_exec_per_sec: (\d+)"),
    "cov": int(status[-1][1]) if status else None,
    "ft": int(status[-1][2]) if status else None,
    "corpus_inputs": int(status[-1][3]) if status else None,
    "peak_rss_mb": last(r"stat::peak_rss_mb: (\d+)"),
    "crashes": len([k for k in kinds if k in ("crash", "leak", "timeout", "oom")]),
    "artifacts": artifacts.split(),
    "exit_codes": {"replay": int(replay_rc), "fuzz": int(run_rc)},
}))
EOF
  if [ "$minimize" -eq 1 ] && [ "$replay_rc" -eq 0 ] && [ "$run_rc" -eq 0 ]; then
    merged="$BUILD/fuzz-merge/$h"
    rm -rf "$merged"; mkdir -p "$merged"
    # -use_counters=0: keep an input for a new edge, not for a new hit count of a known edge (that
    # keeps every edge with a few hundred inputs instead of thousands).
    "$BUILD/bin/$h" -merge=1 -use_counters=0 "${LIBFUZZER_FLAGS[@]}" "$merged" "$corpus" "$work" \
      >"$log.merge" 2>&1
    find "$corpus" -maxdepth 1 -type f ! -name 'crash-*' -delete
    cp "$merged"/* "$corpus"/
    say "$h: corpus minimised to $(ls "$corpus" | wc -l) inputs ($(du -sk "$corpus" | cut -f1) KiB)"
  fi
done

if [ "$results" -eq 1 ]; then
  mkdir -p bench/results
  out="bench/results/fuzz-$stamp.json"
  python3 - "$report" "$out" "$seconds" "$commit" <<'EOF'
import json, os, platform, subprocess, sys
report, out, seconds, commit = sys.argv[1:]
def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return ""
model, flags = "", []
for line in open("/proc/cpuinfo"):
    if line.startswith("model name") and not model:
        model = line.split(":", 1)[1].strip()
    if line.startswith("flags") and not flags:
        flags = line.split(":", 1)[1].split()
harnesses = [json.loads(l) for l in open(report) if l.strip()]
doc = {
    "kind": "fuzz",
    "date_utc": os.path.basename(out)[5:-5],
    "commit": commit,
    "machine": {"cpu": model, "logical_cpus": os.cpu_count(), "cpu_flags": flags, "kernel": platform.release(),
                "loadavg": open("/proc/loadavg").read().split()[:3], "nice": os.nice(0)},
    "compiler": sh("clang++", "--version").splitlines()[0] if sh("clang++", "--version") else "",
    "sanitizers": "address,undefined (-fno-sanitize-recover=all), libFuzzer",
    "libfuzzer_flags": "-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10",
    "requested_s_per_harness": int(seconds),
    "harnesses": harnesses,
    "total_seconds": round(sum(h["seconds"] for h in harnesses), 1),
    "total_executions": sum(h["executions"] or 0 for h in harnesses),
    "total_crashes": sum(h["crashes"] for h in harnesses),
}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(out)
EOF
fi
exit "$failed"
