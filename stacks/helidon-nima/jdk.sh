# Sourced by build.sh and run.sh: sets JAVA_HOME to a JDK >= 21 (Helidon 4 needs Java 21+; the
# machine's default java may be older). Order: $JAVA_HOME if it is a JDK >= 21, else the newest JDK
# >= 21 under /usr/lib/jvm (by the JAVA_VERSION of its `release` file). Fails with a clear message.
HELIDON_MIN_JAVA=21

# The feature version (17, 21, 25, ...) of the JDK at $1, from its `release` file; 0 if unknown.
jdk_feature_version() {
  local v
  [ -r "$1/release" ] && [ -x "$1/bin/java" ] && [ -x "$1/bin/javac" ] || { echo 0; return; }
  v=$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$1/release" | head -1)
  v=${v#1.}          # 1.8.0 -> 8.0
  v=${v%%[^0-9]*}    # 25.0.3 -> 25, 21 -> 21
  case $v in ''|*[!0-9]*) echo 0 ;; *) echo "$v" ;; esac
}

find_helidon_jdk() {
  local d v best="" best_v=0
  if [ -n "${JAVA_HOME:-}" ] && [ "$(jdk_feature_version "$JAVA_HOME")" -ge "$HELIDON_MIN_JAVA" ]; then
    return 0
  fi
  for d in /usr/lib/jvm/*; do
    [ -d "$d" ] || continue
    v=$(jdk_feature_version "$d")
    if [ "$v" -ge "$HELIDON_MIN_JAVA" ] && [ "$v" -gt "$best_v" ]; then
      best=$d
      best_v=$v
    fi
  done
  if [ -z "$best" ]; then
    echo "helidon-nima: needs a JDK >= $HELIDON_MIN_JAVA (Helidon 4 requires Java 21+), found none:" \
      "JAVA_HOME=${JAVA_HOME:-<unset>} is not one, and /usr/lib/jvm/* holds none." \
      "Install one (e.g. apt-get install openjdk-21-jdk-headless, or Eclipse Temurin 21/25)" \
      "or point JAVA_HOME at it." >&2
    return 1
  fi
  JAVA_HOME=$best
}

find_helidon_jdk || exit 1
export JAVA_HOME
