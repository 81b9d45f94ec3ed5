"""Starts uvicorn the way source 004 did (uvloop + httptools, WORKERS processes), from the
environment contract. `python serve.py` is the stack's run command."""

import uvicorn

from app.config import load

if __name__ == "__main__":
    s = load()
    uvicorn.run(
        "app.main:app",
        host="127.0.0.1",
        port=s.http_port,
        workers=s.workers,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        # Keep-alive connections from a load generator idle between requests at low rates.
        timeout_keep_alive=75,
        backlog=4096,
    )
