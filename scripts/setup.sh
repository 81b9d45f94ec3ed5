#!/usr/bin/env bash
# Installs what ceiling needs on a fresh machine of this kind, idempotently: a step whose tool is
# already present is skipped. Usage: scripts/setup.sh [core|bench|jvm|all]
#   core  — PostgreSQL server binaries (for the embedded stand), PgBouncer (plans with
#           [stand.pgbouncer]), Chromium (report.html is tested in a real headless browser),
#           Rust/Go toolchains checked
#   bench — wrk, h2load, nginx, openssl, perf, a C compiler and k6 (the generator benchmarks)
#   jvm   — Maven and a JDK (the JVM reference stacks)
#   stacks — Python 3 with venv, Node.js with npm, nginx, g++/CMake with libpq-dev and
#           libhttp-parser-dev (source 004's stacks and baseline)
set -euo pipefail
what=${1:-core}
need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

case $what in core|all)
  [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] || need_apt+=(postgresql postgresql-contrib)
  have psql || need_apt+=(postgresql-client)
  # Debian's pgbouncer lives in /usr/sbin (not on every user's PATH); the stand starts its own
  have pgbouncer || [ -x /usr/sbin/pgbouncer ] || need_apt+=(pgbouncer)
  have chromium || have chromium-browser || have google-chrome || need_apt+=(chromium)
;; esac
case $what in bench|all)
  have wrk || need_apt+=(wrk)
  have h2load || need_apt+=(nghttp2-client)
  have openssl || need_apt+=(openssl)
  have nginx || need_apt+=(nginx-light)
  # generator-profile.sh and sender-floor.sh count CPU, wake-ups and syscalls with perf;
  # sender-floor.sh compiles its C floor sender
  have perf || need_apt+=(linux-perf)
  have cc || need_apt+=(gcc)
;; esac
case $what in stacks|all)
  python3 -c "import venv, ensurepip" 2>/dev/null || need_apt+=(python3-venv)
  have node || need_apt+=(nodejs)
  have npm || need_apt+=(npm)
  have nginx || need_apt+=(nginx-light)
  # cpp-epoll-libpq (source 004's C++ server): a C++ compiler and libpq's headers
  have g++ || need_apt+=(g++)
  have cmake || need_apt+=(cmake)
  have pkg-config || need_apt+=(pkg-config)
  [ -f /usr/include/postgresql/libpq-fe.h ] || need_apt+=(libpq-dev)
  [ -f /usr/include/http_parser.h ] || need_apt+=(libhttp-parser-dev)
;; esac
case $what in jvm|all)
  have mvn || need_apt+=(maven)
  have java || need_apt+=(openjdk-17-jdk-headless)
;; esac

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

missing=()
have cargo || missing+=("cargo (Rust: https://rustup.rs)")
have go || missing+=("go (the Go stack builds with it)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing toolchains: ${missing[*]}" >&2
  exit 1
fi
# `make test` lints with rustfmt and clippy: add them when rustup manages the toolchain.
if have rustup; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi
# k6 is a Go program: built from the Go module proxy at a pinned version into $(go env GOPATH)/bin.
K6_VERSION=v1.8.1
case $what in bench|all)
  if ! have k6 && [ ! -x "$(go env GOPATH)/bin/k6" ]; then
    echo "setup: building k6 $K6_VERSION with go install (a minute or two)"
    go install "go.k6.io/k6@$K6_VERSION"
  fi
;; esac
echo "setup ($what): ok"
