#!/usr/bin/env bash
# Regenerates docs/comparisons/: each results directory given (default: every one under results/
# whose plan names a source with a published-tables file) set beside its source's published
# tables, as Markdown — `ceiling compare RUN --source --markdown`.
# With --together, the runs given are set beside their source's tables in one comparison (a
# summary table of two plans, e.g. source 004's keep-alive impact, needs a run of each), written
# to docs/comparisons/<run>+<run>….md.
# Usage: scripts/compare-sources.sh [RESULTS_DIR...]
#        scripts/compare-sources.sh --together RESULTS_DIR RESULTS_DIR...
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/ceiling
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
mkdir -p docs/comparisons
if [ "${1:-}" = "--together" ]; then
  shift
  [ $# -ge 2 ] || { echo "--together needs two results directories or more" >&2; exit 2; }
  name=""
  for d in "$@"; do name="${name:+$name+}$(basename "$d")"; done
  out="docs/comparisons/$name.md"
  "$bin" compare "$@" --source --markdown > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "wrote $out"
  exit 0
fi
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  for d in results/*/; do [ -f "$d/run.json" ] && dirs+=("${d%/}"); done
fi
for d in "${dirs[@]}"; do
  out="docs/comparisons/$(basename "$d").md"
  if "$bin" compare "$d" --source --markdown > "$out.tmp" 2> "$out.err"; then
    mv "$out.tmp" "$out"; rm -f "$out.err"
    echo "wrote $out"
  else
    echo "skipped $d: $(tail -1 "$out.err")"; rm -f "$out.tmp" "$out.err"
  fi
done
