#!/usr/bin/env bash
# Generator efficiency over HTTP/2 (TLS 1.3, ALPN h2), side by side in one run: ceiling load
# --http2 vs h2load (nghttp2's HTTP/2 benchmarking tool) against one local nginx worker serving a
# static JSON body. nginx gets core 0, each generator core 1 (taskset), one at a time. Both keep
# CONNS connections with STREAMS requests in flight on each (h2load -c CONNS -m STREAMS; ceiling
# closed model with CONNS×STREAMS slots, --streams STREAMS). CPU per request = the generator's
# user+sys CPU seconds / requests nginx counted (stub_status).
# Usage: bench/generator-h2-vs-h2load.sh [seconds] [conns] [streams]
set -euo pipefail
secs=${1:-10}; conns=${2:-4}; streams=${3:-16}
. "$(dirname "$0")/lib.sh"
require nginx h2load openssl taskset curl "$bin"
start_nginx "${PORT:-18299}" "${TLS_PORT:-18443}" http2
url="https://localhost:$tls_port/"
slots=$((conns * streams))
echo "# generator-h2-vs-h2load: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), nginx $(nginx -v 2>&1 | cut -d/ -f2), $(h2load --version | head -1)"
read -r _ hcpu hreq hrss < <(measure h2load h2load -t1 -c"$conns" -m"$streams" -D"$secs" "$url")
read -r _ ccpu creq crss < <(measure ceiling "$bin" load --url "$url" --insecure --http2 --streams "$streams" --connections "$slots" --duration "${secs}s" --json -q)
python3 - "$secs" "$conns" "$streams" "$hcpu" "$hreq" "$hrss" "$ccpu" "$creq" "$crss" "$tmp/ceiling.out" <<'PY'
import json, sys
secs, conns, streams = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
hcpu, hreq, hrss, ccpu, creq, crss = map(float, sys.argv[4:10])
o = json.load(open(sys.argv[10]))
us = lambda c, n: c / n * 1e6 if n else float("nan")
h, c = us(hcpu, hreq), us(ccpu, creq)
print(f"| run (HTTP/2 over TLS) | requests/s | CPU µs/request | max RSS MB | ratio to h2load |")
print(f"|---|---|---|---|---|")
print(f"| h2load -t1 -c{conns} -m{streams} {secs:.0f}s | {hreq/secs:,.0f} | {h:.2f} | {hrss/1024:.1f} | 1.00 |")
print(f"| ceiling load --http2 --streams {streams} -c {conns*streams} {secs:.0f}s | {creq/secs:,.0f} | {c:.2f} | {crss/1024:.1f} | CPU {c/h:.2f}, RPS {creq/hreq:.2f} |")
t, h2 = o.get("tls") or {}, o.get("http2") or {}
print()
print(f"ceiling: {h2.get('connections')} HTTP/2 connections, at most {h2.get('max_streams_in_use')} streams on one; "
      f"{t.get('handshakes')} handshakes, ALPN {t.get('alpn')}, {t.get('version')}; errors {o.get('error_rate')}")
PY
