#!/usr/bin/env bash
# The 16-core placement check (issue 35 item 3): the search of plan 000 on go-pgx with the lab's
# parts on disjoint cores, on a machine that has them but no Go, no PostgreSQL and no network
# (the device machine lent to some sessions; docs/benchmarks/search.md §39 says which figures came from it).
#
#   bench/device-placement.sh pack      # here: builds nothing, bundles what the machine lacks
#                                       # into .devcarry/ (ceiling, go-pgx's binary and its build
#                                       # stamp, PostgreSQL 16's bundle, psql with its libraries)
#   bench/device-placement.sh run OUT   # there: unpacks, checks, searches; results to OUT
#
# `run` copies the tree to /tmp (PostgreSQL runs as `nobody` under root and must reach its data
# directory) and puts a `go` on PATH that only refuses: the stand's build check wants Go on PATH
# before it sees that the carried build is current; if it ever tried to build, the run fails
# saying so instead of measuring something else.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
carry="$here/.devcarry"
PG_VER=16.4.0

# xz, or Python's lzma where the machine has no xz
unxz_to() {
  if command -v xz >/dev/null; then xz -dc "$1"; else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  fi
}

pack() {
  cd "$here"
  grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >>.git/info/exclude
  rm -rf "$carry" && mkdir -p "$carry"
  test -x target/release/ceiling || { echo "build first: cargo build --release -p ceiling-cli" >&2; exit 1; }
  test -x stacks/go-pgx/target/server || { echo "build go-pgx first (ceiling verify go-pgx)" >&2; exit 1; }
  test -d ".ceiling/pg-bin/$PG_VER/bin" || { echo "fetch PostgreSQL $PG_VER first (a plan 000 run does)" >&2; exit 1; }
  strip -o "$carry/ceiling" target/release/ceiling && xz -T0 "$carry/ceiling"
  cp stacks/go-pgx/target/server "$carry/server" && xz -T0 "$carry/server"
  cp .ceiling/builds/go-pgx.hash "$carry/go-pgx.hash"
  # psql from this machine's PostgreSQL 15 with every library it needs but libc's own
  local stage; stage="$(mktemp -d)"
  mkdir -p "$stage/psqllib"
  cp /usr/lib/postgresql/15/bin/psql "$stage/psqllib/psql.real"
  ldd /usr/lib/postgresql/15/bin/psql | awk '/=> \//{print $3}' |
    grep -Ev '/(libc|libm|libresolv|libpthread|libdl|librt)\.so' |
    while read -r l; do cp -L "$l" "$stage/psqllib/"; done
  cp -a ".ceiling/pg-bin/$PG_VER" "$stage/pg"
  tar -C "$stage" -cJf "$carry/pg.tar.xz" pg psqllib
  rm -rf "$stage"
  du -sh "$carry"/*
}

run() {
  local out="$1"
  mkdir -p "$out"
  echo "== machine"; nproc; uname -r; cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || true
  grep -c ^processor /proc/cpuinfo; free -g | head -2
  local w=/tmp/ceil
  rm -rf "$w" && mkdir -p "$w" && cp -a "$here/." "$w/" && cd "$w"
  chmod 755 /tmp "$w"
  mkdir -p target/release stacks/go-pgx/target .ceiling/builds .ceiling/pg-bin /tmp/devbin
  unxz_to "$carry/ceiling.xz" >target/release/ceiling
  unxz_to "$carry/server.xz" >stacks/go-pgx/target/server
  chmod 755 target/release/ceiling stacks/go-pgx/target/server
  cp "$carry/go-pgx.hash" .ceiling/builds/go-pgx.hash
  local un; un="$(mktemp -d)"
  unxz_to "$carry/pg.tar.xz" | tar -C "$un" -x
  rm -rf ".ceiling/pg-bin/$PG_VER" /opt/psqllib
  mv "$un/pg" ".ceiling/pg-bin/$PG_VER"
  mv "$un/psqllib" /opt/psqllib
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/psqllib exec /opt/psqllib/psql.real "$@"\n' \
    >".ceiling/pg-bin/$PG_VER/bin/psql"
  chmod 755 ".ceiling/pg-bin/$PG_VER/bin/psql" /opt/psqllib /opt/psqllib/*
  printf '#!/bin/sh\necho "no Go on this machine: the carried go-pgx build should have been current" >&2\nexit 1\n' >/tmp/devbin/go
  chmod 755 /tmp/devbin/go
  export PATH="/tmp/devbin:$PATH"
  chmod -R a+rX "$w"
  echo "== checks"
  ./target/release/ceiling --version
  ".ceiling/pg-bin/$PG_VER/bin/psql" --version
  ".ceiling/pg-bin/$PG_VER/bin/postgres" --version
  echo "== search"
  local rc=0
  # The issue's own 16-core settings (20-s probes, 5-s trim) so the two can be read together,
  # with a short confirming shelf inside the budget.
  # START_RATE, MAX_TIME, CONFIRM and REPEAT shorten it where the device time left is short.
  local extra=()
  [ -n "${REPEAT:-}" ] && extra+=(--repeat "$REPEAT")
  timeout "${SEARCH_TIMEOUT:-530}" ./target/release/ceiling search plans/000-status-mixed.toml \
    --stacks go-pgx --start-rate "${START_RATE:-2000}" --max-time "${MAX_TIME:-6m}" --probe 20s \
    --probe-trim 5s --confirm "${CONFIRM:-40s}" --threads 4 "${extra[@]}" --results "$w/results" \
    2>&1 | tee "$out/search.log" || rc=$?
  echo "search exit: $rc"
  tar -C "$w" -czf "$out/results.tgz" results .ceiling/logs 2>/dev/null || true
  return 0
}

case "${1:-}" in
  pack) pack ;;
  run) run "${2:?OUT folder}" ;;
  *) echo "usage: $0 pack | run OUT" >&2; exit 2 ;;
esac
