#!/usr/bin/env bash
# Regenerates docs/comparisons/: each results directory given (default: every one under results/
# whose plan names a source with a published-tables file) set beside its source's published
# tables, as Markdown — `ceiling compare RUN --source --markdown`.
# Usage: scripts/compare-sources.sh [RESULTS_DIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/ceiling
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
mkdir -p docs/comparisons
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
