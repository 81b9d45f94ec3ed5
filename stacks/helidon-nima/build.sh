#!/usr/bin/env bash
# What stack.toml's [build] runs: Maven with JAVA_HOME set to a JDK >= 21 (jdk.sh).
# Output: target/helidon-nima.jar + target/libs/ (Helidon's usual layout: a thin jar whose manifest
# Class-Path lists the dependency jars copied to target/libs).
set -euo pipefail
cd "$(dirname "$0")"
. ./jdk.sh
echo "helidon-nima: building with $("$JAVA_HOME/bin/java" -version 2>&1 | head -1) ($JAVA_HOME)" >&2
exec mvn -B -q -DskipTests package "$@"
