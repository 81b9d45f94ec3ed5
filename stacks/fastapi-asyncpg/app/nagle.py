"""An experiment switch, off by default: TCP_NODELAY=0 turns Nagle's algorithm back on for every
connection this worker accepts.

Source 004 measured this stack's ancestor at a flat ~41 ms per request on /ping (c=100, keep-alive
on) and blamed the GIL; the project's reading is Nagle's algorithm meeting the client's delayed ACK
(uvicorn writes a response's head and body in two writes; with Nagle on, the second waits for the
ACK of the first, which the client delays up to 40 ms). uvloop sets TCP_NODELAY on every accepted
connection, so this stack never shows it; `plans/004-ping-python-nagle.toml` sets TCP_NODELAY=0
through `[stand.env]` to test the explanation. Applied at import, in each worker process (uvicorn's
workers import the app themselves).
"""

from __future__ import annotations

import os
import socket


def apply_from_env() -> bool:
    """Re-enables Nagle when TCP_NODELAY=0; returns whether it did."""
    if os.environ.get("TCP_NODELAY", "1") != "0":
        return False
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    made = HttpToolsProtocol.connection_made

    def connection_made(self, transport):  # type: ignore[no-untyped-def]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        made(self, transport)

    HttpToolsProtocol.connection_made = connection_made  # type: ignore[method-assign]
    return True
