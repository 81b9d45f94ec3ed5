#!/bin/sh
# nginx returning source 004's static JSON: the baseline "what a server that does no work costs".
# The config is written from the environment contract (HTTP_PORT, WORKERS) into a private prefix
# directory, then nginx runs in the foreground (the stand tracks and stops it by its PID/group).
set -eu
prefix=$(mktemp -d "${TMPDIR:-/tmp}/ceiling-nginx-static.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
mkdir -p "$prefix/logs"
sed -e "s/@HTTP_PORT@/${HTTP_PORT:?}/" -e "s/@WORKERS@/${WORKERS:-1}/" nginx.conf.in > "$prefix/nginx.conf"
nginx -p "$prefix" -c "$prefix/nginx.conf" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; rm -rf "$prefix"' TERM INT
wait $pid
