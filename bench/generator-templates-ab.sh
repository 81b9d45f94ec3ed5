#!/usr/bin/env bash
# What a templated request mix costs the generator, two ceiling binaries A/B in one run (e.g. a
# change to request rendering against the commit before it). The plan is plan 000's shape: 90% GET
# /status/${ids.id} from a CSV, 10% PUT with a JSON body holding ${int:0:10}, sent to one local
# nginx worker (core 0) that answers everything with a static body; each binary runs on core 1, the
# two alternating A B A B … so drift falls on both. CPU per request = the binary's user+sys CPU /
# the requests nginx counted (stub_status), never the tool's own report.
# RATE=R sends an open-model R requests/s instead (--max-connections conns): CPU per request at a
# rate the generator keeps, rather than at saturation, where it spins and the rate is nginx's.
# Usage: [RATE=R] bench/generator-templates-ab.sh BIN_A BIN_B [rounds] [seconds] [conns]
set -euo pipefail
a_bin=$1; b_bin=$2; rounds=${3:-4}; secs=${4:-8}; conns=${5:-64}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl "$a_bin" "$b_bin"
start_nginx "${PORT:-18298}"
seq 1 10000 | sed '1i id' > "$tmp/ids.csv"
cat > "$tmp/plan.toml" <<EOF
name = "templates"
description = "plan 000's request shapes against a static nginx"
[load]
seed = 1
[data.ids]
csv = "ids.csv"
[[requests]]
name = "get_by_id"
weight = 90
path = "/status/\${ids.id}"
expect = [200]
[[requests]]
name = "put"
weight = 10
method = "PUT"
path = "/status/\${ids.id}"
headers = { "Content-Type" = "application/json" }
body = '{"status":\${int:0:10}}'
expect = [200]
[[stages]]
hold = 1
duration = "1s"
EOF
echo "# generator-templates-ab: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), ${RATE:+open model $RATE/s, }closed model unless a rate: $conns connections, ${secs}s x $rounds rounds each"
echo "# A = $a_bin ($("$a_bin" --version 2>/dev/null || echo '?'))"
echo "# B = $b_bin ($("$b_bin" --version 2>/dev/null || echo '?'))"
echo "round tool cpu_s requests us_per_request"
for r in $(seq 1 "$rounds"); do
  for t in A B; do
    b=$a_bin; [ "$t" = B ] && b=$b_bin
    if [ -n "${RATE:-}" ]; then load=(--rate "$RATE" --max-connections "$conns"); else load=(--connections "$conns"); fi
    read -r _ cpu req _ < <(measure "$t$r" "$b" load "$tmp/plan.toml" --url "http://127.0.0.1:$port" \
      "${load[@]}" --duration "${secs}s" -q)
    echo "$r $t $cpu $req $(awk -v c="$cpu" -v n="$req" 'BEGIN{printf "%.2f", 1e6*c/n}')"
  done
done
