#!/usr/bin/env bash
# Does a freshly started stand need load at the probes' scale before it holds go-pgx's knee?
# (issue 35; docs/benchmarks/search.md §67 saw a fresh stand fail its first four 8,000-RPS probes
# and pass seven of the next eight.) Arms, in ORDER (default "C W W C", so drift falls on both):
#
#   C (cold): a fresh `ceiling up go-pgx` (a fresh copy of the seed data), then the probes;
#   W (warm): a fresh `ceiling up go-pgx`, WARM (default 3m) at WARM_RATE (default 4000 RPS) —
#             about half the knee, what a search's first rounds probe anyway — then the probes.
#
# A probe is what a search's probe is: a new engine with its own connections, 5 s at 150 RPS
# (warm-up, not judged), then 35 s at RATE (default 8000), judged on that stage after a 10-s trim
# against plan 000's SLO (p99 ≤ 350 ms, errors < 1%); each run its own seed (POST ids that never
# collide). PROBES (default 4) per arm. FLAGS (default "--tick 2ms --realtime") go to every run.
# One line per probe: arm, block, probe, minutes since the stack was up, p99, errors, verdict.
#
# Usage: bench/warm-start.sh            (≈ 4 × 5–8 min; the machine otherwise idle)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CEILING_BIN:-target/release/ceiling}
ORDER=${ORDER:-"C W W C"}
RATE=${RATE:-8000}
WARM_RATE=${WARM_RATE:-4000}
WARM=${WARM:-3m}
PROBES=${PROBES:-4}
FLAGS=${FLAGS:---tick 2ms --realtime}
tmp=$(mktemp -d)
up_pid=""
cleanup() {
  if [ -n "$up_pid" ]; then kill -INT "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; fi
  [ -n "${KEEP:-}" ] && echo "kept: $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# plan NAME SEED STAGES: plan 000's data, requests and SLO (taken from its file) with these
# stages and a 10-s trim, into $tmp/NAME.toml
plan() {
  {
    printf 'name = "%s"\ndescription = "bench/warm-start.sh: plan 000'"'"'s mix"\n' "$1"
    printf '[load]\narrivals = "uniform"\nkeep_alive = true\nmax_connections = 2000\ntimeout = "10s"\nseed = %s\n' "$2"
    printf '%s\n' "$3"
    sed -n '/^\[data\.status_ids\]/,/^\[analysis\]/p' plans/000-status-mixed.toml | sed '$d'
    printf '[analysis]\ntrim_head = "10s"\ntrim_tail = "0s"\nmin_window = "20s"\nstability = 0.05\n'
  } >"$tmp/$1.toml"
}

# run PLAN: `ceiling run` against the stack; prints "p99_ms error_rate verdict" of its last shelf
run() {
  local res="$tmp/results-$1"
  # shellcheck disable=SC2086
  "$bin" run "$tmp/$1.toml" --url "$url" --data-dir "$ids" $FLAGS -q --results "$res" >"$tmp/$1.out" 2>"$tmp/$1.err" || true
  python3 - "$res" <<'EOF'
import json, os, sys
d = sys.argv[1]
runs = [os.path.join(d, x, "run.json") for x in os.listdir(d)] if os.path.isdir(d) else []
runs = [r for r in runs if os.path.exists(r)]
if not runs:
    print("- - no-run.json (see the run's stderr)"); sys.exit()
s = json.load(open(runs[0]))["stacks"][0]["shelves"][-1]
print(f'{s["latency"]["p99_ms"]:.0f} {100 * s["error_rate"]:.2f}% {s["verdict"]}')
EOF
}

echo "# warm-start: $(date -u +%FT%TZ), $(nproc) cores, commit $(git rev-parse --short HEAD), ORDER=\"$ORDER\" RATE=$RATE WARM=$WARM@$WARM_RATE PROBES=$PROBES FLAGS=\"$FLAGS\""
printf '%-4s %-5s %-5s %-7s %-8s %-7s %s\n' arm block probe min_up p99_ms errors verdict
seed=100
block=0
for arm in $ORDER; do
  block=$((block + 1))
  "$bin" up go-pgx --for 30m >"$tmp/up.out" 2>"$tmp/up.err" &
  up_pid=$!
  for _ in $(seq 1 600); do
    grep -q " is up at " "$tmp/up.out" 2>/dev/null && break
    kill -0 "$up_pid" 2>/dev/null || { cat "$tmp/up.err"; exit 1; }
    sleep 0.5
  done
  url=$(sed -n 's/.* is up at \(http[^ ]*\).*/\1/p' "$tmp/up.out" | head -1)
  [ -n "$url" ] || { echo "warm-start: ceiling up printed no URL"; cat "$tmp/up.err"; exit 1; }
  ids=$(sed -n 's/.*ids for requests: \([^ ]*\).*/\1/p' "$tmp/up.out" | head -1)
  t_up=$(date +%s)
  if [ "$arm" = W ]; then
    seed=$((seed + 1))
    plan warm $seed "[[stages]]
hold = $WARM_RATE
duration = \"$WARM\""
    printf '%-4s %-5s %-5s %-7s %s\n' W "$block" warm "0.0" "$(run warm) (at $WARM_RATE RPS)"
  fi
  for p in $(seq 1 "$PROBES"); do
    seed=$((seed + 1))
    plan "probe-$seed" $seed "[[warmup]]
hold = 150
duration = \"5s\"
[[stages]]
hold = $RATE
duration = \"35s\""
    m=$(awk -v a="$(date +%s)" -v b="$t_up" 'BEGIN{printf "%.1f", (a-b)/60}')
    printf '%-4s %-5s %-5s %-7s %s\n' "$arm" "$block" "$p" "$m" "$(run "probe-$seed")"
  done
  kill -INT "$up_pid"; wait "$up_pid" 2>/dev/null || true; up_pid=""
done
