#!/usr/bin/env bash
# What the source-002 Spring stacks' [run] runs: `java ARGS...` on a JDK >= 21, the JDK helidon-nima
# runs on, so that every JVM stack of plan 002 runs on one JDK (source 002 ran all its services on
# openjdk:21). Order: $JAVA_HOME if it is a JDK >= 21, else the newest JDK >= 21 under /usr/lib/jvm
# (by the JAVA_VERSION of its `release` file): the same lookup as ../helidon-nima/jdk.sh, so both
# pick the same JDK. exec: the JVM keeps this script's PID, so the stand's SIGTERM reaches it.
# Run from the stack folder (paths in ARGS are relative to it).
set -euo pipefail
MIN_JAVA=21

# The feature version (17, 21, 25, ...) of the JDK at $1, from its `release` file; 0 if unknown.
jdk_feature_version() {
  local v
  [ -r "$1/release" ] && [ -x "$1/bin/java" ] || { echo 0; return; }
  v=$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$1/release" | head -1)
  v=${v#1.}          # 1.8.0 -> 8.0
  v=${v%%[^0-9]*}    # 25.0.3 -> 25, 21 -> 21
  case $v in ''|*[!0-9]*) echo 0 ;; *) echo "$v" ;; esac
}

jdk=""
if [ -n "${JAVA_HOME:-}" ] && [ "$(jdk_feature_version "$JAVA_HOME")" -ge "$MIN_JAVA" ]; then
  jdk=$JAVA_HOME
else
  best_v=0
  for d in /usr/lib/jvm/*; do
    [ -d "$d" ] || continue
    v=$(jdk_feature_version "$d")
    if [ "$v" -ge "$MIN_JAVA" ] && [ "$v" -gt "$best_v" ]; then
      jdk=$d
      best_v=$v
    fi
  done
fi
if [ -z "$jdk" ]; then
  echo "java21.sh: needs a JDK >= $MIN_JAVA (plan 002 runs every JVM stack on helidon-nima's JDK), found none:" \
    "JAVA_HOME=${JAVA_HOME:-<unset>} is not one, and /usr/lib/jvm/* holds none." \
    "Install one (e.g. apt-get install openjdk-21-jdk-headless, or Eclipse Temurin 21/25)" \
    "or point JAVA_HOME at it." >&2
  exit 1
fi
exec "$jdk/bin/java" "$@"
