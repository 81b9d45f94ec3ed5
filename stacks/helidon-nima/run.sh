#!/usr/bin/env bash
# What stack.toml's [run] runs: the server on a JDK >= 21 (jdk.sh), with the same JVM flags as the
# other JVM stacks. exec: the JVM keeps this script's PID, so the stand's SIGTERM reaches it.
# WORKERS -> the virtual-thread scheduler's parallelism (its carrier threads; the JDK's default is
# the CPU count, set explicitly so it does not depend on CPU detection).
set -euo pipefail
cd "$(dirname "$0")"
. ./jdk.sh
exec "$JAVA_HOME/bin/java" \
  -XX:+UseG1GC -XX:MaxRAMPercentage=75 \
  -Djdk.virtualThreadScheduler.parallelism="${WORKERS:-2}" \
  -jar target/helidon-nima.jar
