# Shared by the generator benchmarks (source it): one local nginx worker on core 0 serving a
# static JSON body on loopback, its request counter, and a way to time a tool on core 1.
# Both tools in a comparison are judged by the same counter (nginx's stub_status), never by
# their own reports.

bin=${CEILING_BIN:-target/release/ceiling}
tmp=$(mktemp -d)

# start_nginx PORT [TLS_PORT [http2]]: nginx (1 worker, core 0) on 127.0.0.1:PORT, and with
# TLS_PORT an https listener there too (a throwaway self-signed certificate for localhost, made
# here with openssl; TLS 1.3, sessions resumable as nginx's defaults allow), speaking HTTP/2 as
# well with `http2`; stopped (by PID) on exit.
start_nginx() {
  port=$1
  local tls=""
  if [ -n "${2:-}" ]; then
    tls_port=$2
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
      -subj /CN=localhost -addext subjectAltName=DNS:localhost \
      -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
    tls="server { listen 127.0.0.1:$tls_port ssl ${3:-} backlog=4096; keepalive_requests 100000000;
  http2_max_concurrent_streams 1024;
  ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem; ssl_protocols TLSv1.3;
  location / { default_type application/json; return 200 '{\"ok\":true,\"message\":\"OK\"}'; } }"
  fi
  cat >"$tmp/nginx.conf" <<NGX
worker_processes 1; daemon off; pid $tmp/nginx.pid; error_log $tmp/error.log;
events { worker_connections 16384; }
http { access_log off; server { listen 127.0.0.1:$port backlog=4096; keepalive_requests 100000000;
  location = /nginx_status { stub_status; }
  location / { default_type application/json; return 200 '{"ok":true,"message":"OK"}'; } }
  $tls }
NGX
  taskset -c 0 nginx -c "$tmp/nginx.conf" &
  ngx=$!
  trap 'kill $ngx 2>/dev/null; wait $ngx 2>/dev/null; rm -rf "$tmp"' EXIT
  sleep 0.5
}

# count: requests nginx has served so far.
count() { curl -s "http://127.0.0.1:$port/nginx_status" | awk 'NR==3{print $3}'; }

# measure NAME CMD...: runs CMD on core 1; prints "NAME cpu_s requests max_rss_kb" (requests as
# counted by nginx, minus the status request itself) and keeps CMD's stdout in $tmp/NAME.out.
measure() {
  local name=$1; shift; local a b u s rss
  a=$(count)
  /usr/bin/time -f "%U %S %M" -o "$tmp/$name.time" taskset -c 1 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || true
  b=$(count)
  read -r u s rss <"$tmp/$name.time"
  echo "$name $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $((b - a - 1)) $rss"
}

# require TOOL...: exits with a hint when a tool is missing.
require() {
  for t in "$@"; do
    command -v "$t" >/dev/null || [ -x "$t" ] || { echo "missing $t: run scripts/setup.sh bench and make build" >&2; exit 1; }
  done
}
