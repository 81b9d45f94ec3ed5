#!/usr/bin/env bash
# Generator efficiency over TLS, side by side in one run: ceiling load vs wrk against one local
# nginx worker serving a static JSON body over https (TLS 1.3, a throwaway self-signed
# certificate; ceiling with --insecure, as wrk does not check certificates either). nginx gets
# core 0, each generator core 1 (taskset), one at a time. CPU per request = the generator's
# user+sys CPU seconds / requests nginx counted (stub_status). Issue 37's target: ceiling's CPU
# per request over TLS ≤ 1.2× wrk's. Usage: bench/generator-tls-vs-wrk.sh [seconds] [conns]
set -euo pipefail
secs=${1:-10}; conns=${2:-64}
. "$(dirname "$0")/lib.sh"
require nginx wrk openssl taskset curl "$bin"
start_nginx "${PORT:-18299}" "${TLS_PORT:-18443}"
url="https://localhost:$tls_port/"
echo "# generator-tls-vs-wrk: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), nginx $(nginx -v 2>&1 | cut -d/ -f2), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
read -r _ wcpu wreq wrss < <(measure wrk wrk -t1 -c"$conns" -d"${secs}s" "$url")
read -r _ ccpu creq crss < <(measure ceiling_closed "$bin" load --url "$url" --insecure --connections "$conns" --duration "${secs}s" --json -q)
rate=$(awk -v r="$wreq" -v s="$secs" 'BEGIN{printf "%d", r/s/2}')
read -r _ ocpu oreq orss < <(measure ceiling_open "$bin" load --url "$url" --insecure --rate "$rate" --duration "${secs}s" --max-connections "$conns" --json -q)
python3 - "$secs" "$conns" "$rate" "$wcpu" "$wreq" "$wrss" "$ccpu" "$creq" "$crss" "$ocpu" "$oreq" "$orss" "$tmp/ceiling_closed.out" "$tmp/ceiling_open.out" <<'PY'
import json, sys
secs, conns, rate = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
wcpu, wreq, wrss, ccpu, creq, crss, ocpu, oreq, orss = map(float, sys.argv[4:13])
closed, o = json.load(open(sys.argv[13])), json.load(open(sys.argv[14]))
us = lambda c, n: c / n * 1e6 if n else float("nan")
w, c, op = us(wcpu, wreq), us(ccpu, creq), us(ocpu, oreq)
print(f"| run (https, TLS 1.3) | requests/s | CPU µs/request | max RSS MB | ratio to wrk |")
print(f"|---|---|---|---|---|")
print(f"| wrk -t1 -c{conns} {secs:.0f}s | {wreq/secs:,.0f} | {w:.2f} | {wrss/1024:.1f} | 1.00 |")
print(f"| ceiling load -c {conns} {secs:.0f}s (closed) | {creq/secs:,.0f} | {c:.2f} | {crss/1024:.1f} | CPU {c/w:.2f}, RPS {creq/wreq:.2f} |")
print(f"| ceiling load --rate {rate} (open, ½ wrk max) | {oreq/secs:,.0f} | {op:.2f} | {orss/1024:.1f} | CPU {op/w:.2f} |")
t = closed.get("tls") or {}
print()
print(f"closed run's handshakes: {t.get('handshakes')} ({t.get('resumed')} resumed), p50 {t.get('handshake_p50_ms')} ms, {t.get('version')}")
ach = o["completed"] / o["offered"] if o["offered"] else 0
print(f"open model: offered {o['offered']}, completed {o['completed']} ({ach*100:.2f}%), schedule lag p99 {o['schedule_lag']['p99_ms']:.3f} ms; verdict: {o['generator_verdict']}")
ok = [c <= 1.2 * w, ach >= 0.99]
names = ["closed CPU/req over TLS ≤ 1.2× wrk", "open achieved ≥ 99%"]
print("targets: " + ", ".join(f"{n}: {'PASS' if k else 'FAIL'}" for n, k in zip(names, ok)))
PY
