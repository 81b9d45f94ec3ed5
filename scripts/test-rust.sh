#!/usr/bin/env bash
# Runs every Rust test of the workspace (what `cargo test --workspace` runs: each crate's unit
# tests, its integration-test binaries and its doc tests), but not one binary after another:
#
#   1. the binaries that do not measure — parsers, reports, the simulated searches on a virtual
#      clock, the doc tests — run side by side (JOBS at a time, default: the machine's cores);
#   2. then the binaries that measure — real sockets, a stand, timing, CPU or latency checks —
#      run one at a time, each alone on the machine (within one binary libtest still runs its
#      tests side by side, as `cargo test` does; files that must not overlap lock in-file).
#
# Both kinds take a machine-wide flock(1) on one file (shared for the first, exclusive for the
# second), so a measuring binary never runs beside anything heavy — not even beside a second
# checkout's `make test` on the same machine.
#
# Which binaries measure is decided here, in MEASURING below: a new test binary that is not named
# in NOT_MEASURING is treated as measuring (the safe side). Every binary's output goes to
# target/test-logs/; a failing binary's log is printed whole at the end, and every binary runs even
# when one fails (the exit status says whether all passed).
#
# Usage: scripts/test-rust.sh [cargo test options, e.g. --profile ci --locked]
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
JOBS=${JOBS:-$(nproc)}
LOCK=${CEILING_TEST_LOCK:-${TMPDIR:-/tmp}/ceiling-tests-$(id -u).lock}
LOGS=target/test-logs
rm -rf "$LOGS"; mkdir -p "$LOGS"

# "crate-dir:target" of the binaries that measure nothing and are safe beside each other.
NOT_MEASURING=(
  agent:ceiling_agent agent:bad_input
  analyze:ceiling_analyze analyze:recorded_probes
  compare:ceiling_compare compare:claims compare:compare compare:gates compare:published_files
  k8s:ceiling_k8s k8s:strict
  metrics:ceiling_metrics
  plan:ceiling_plan plan:bad_input plan:shipped_plans
  records:ceiling_records
  report:ceiling_report report:bad_input report:comparisons report:stored_search
  fmt:ceiling_fmt http:ceiling_http
  search:ceiling_search search:simulated_capacity search:simulated_models
  verify:ceiling_verify verify:contract
  supervise:ceiling_supervise stand:ceiling_stand pg:ceiling_pg load:ceiling_load
  cli:ceiling cli:errors
  testkit:ceiling_testkit
)

t0=$(date +%s)
# Build every test binary first (the build is not a test: it runs alone, on all cores).
if ! $CARGO test "$@" --workspace --no-run --message-format=json-render-diagnostics \
    > "$LOGS/build.json"; then
  echo "test-rust: the build failed" >&2
  exit 1
fi
python3 - "$LOGS/build.json" > "$LOGS/binaries.txt" <<'EOF'
import json, os, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        d = os.path.dirname(m["manifest_path"])
        print(d, os.path.basename(d) + ":" + m["target"]["name"], m["executable"])
EOF
echo "== test-rust: $(wc -l < "$LOGS/binaries.txt") test binaries built in $(( $(date +%s) - t0 )) s"

is_light() { local k; for k in "${NOT_MEASURING[@]}"; do [ "$k" = "$1" ] && return 0; done; return 1; }

# One binary: its log, its time, ok or FAILED. Called by xargs for the first group.
run_one() {
  local mode=$1 dir=$2 key=$3 exe=$4 log="$LOGS/${3//:/-}.log" t1 rc
  t1=$(date +%s)
  ( cd "$dir" && CARGO_MANIFEST_DIR="$dir" CEILING_REQUIRE_BROWSER=1 \
      flock "$mode" "$LOCK" "$exe" -q ) > "$log" 2>&1
  rc=$?
  local summary; summary=$(grep -E "^test result:" "$log" | tail -1 | sed -E 's/; [0-9]+ measured.*//')
  if [ $rc -eq 0 ]; then
    printf '%-34s ok    %4d s  %s\n' "$key" $(( $(date +%s) - t1 )) "${summary#test result: ok. }"
  else
    printf '%-34s FAILED %3d s  %s\n' "$key" $(( $(date +%s) - t1 )) "$summary"
    echo "$log" >> "$LOGS/failed.txt"
  fi
}
export -f run_one; export LOGS LOCK

light=(); measuring=()
while read -r dir key exe; do
  if is_light "$key"; then light+=("$dir $key $exe"); else measuring+=("$dir $key $exe"); fi
done < "$LOGS/binaries.txt"

t1=$(date +%s)
{
  printf '%s\n' "${light[@]}" | xargs -P "$JOBS" -L 1 bash -c 'run_one -s "$@"' _
  # The doc tests compile each example: CPU, no measuring.
  if flock -s "$LOCK" $CARGO test "$@" --workspace --doc -q > "$LOGS/doc-tests.log" 2>&1; then
    printf '%-34s ok\n' "doc tests"
  else
    printf '%-34s FAILED\n' "doc tests"; echo "$LOGS/doc-tests.log" >> "$LOGS/failed.txt"
  fi
} 
echo "== test-rust: ${#light[@]} binaries that do not measure (and the doc tests), $JOBS at a time: $(( $(date +%s) - t1 )) s"

t1=$(date +%s)
for m in "${measuring[@]}"; do
  # shellcheck disable=SC2086
  run_one -x $m
done
echo "== test-rust: ${#measuring[@]} binaries that measure, one at a time: $(( $(date +%s) - t1 )) s"

if [ -s "$LOGS/failed.txt" ]; then
  while read -r log; do echo; echo "==== $log"; cat "$log"; done < "$LOGS/failed.txt"
  echo; echo "test-rust: FAILED: $(tr '\n' ' ' < "$LOGS/failed.txt")"
  exit 1
fi
echo "== test-rust: every test passed in $(( $(date +%s) - t0 )) s (build included)"
