#!/usr/bin/env sh
# Configures and builds with CMake (CMakeLists.txt) into target/build; target/server is the binary.
set -eu
cmake -S . -B target/build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build target/build -j 2
cp target/build/server target/server
