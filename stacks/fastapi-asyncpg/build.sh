#!/bin/sh
# Builds the stack's virtualenv from requirements.lock (every package pinned, from PyPI).
set -eu
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements.lock
.venv/bin/python -c "import fastapi, uvicorn, uvloop, httptools, asyncpg, orjson, prometheus_client"
