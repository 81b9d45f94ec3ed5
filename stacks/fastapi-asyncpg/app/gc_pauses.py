"""Garbage-collection pauses of this worker: how long CPython's cyclic collector held the
interpreter, summed over the last second, and its longest pass.

The Go, JVM and Node exporters publish their GC pauses; prometheus_client publishes only how many
collections ran (`python_gc_collections_total`), not how long they took. CPython calls every
function in `gc.callbacks` at the start and the end of each collection, so the pause is timed
there — the documented hook, nothing patched. A pause also shows as event-loop lag
(loop_lag.py), but lag has many causes; this names GC when it is GC.

As with the loop lag, the figure is a window on the clock (the last second), not a counter:
uvicorn's workers do not share a registry, a scrape reaches one worker, and a cumulative counter's
difference between two scrapes of two different workers would mean nothing.
"""

from __future__ import annotations

import collections
import gc
import time

from prometheus_client import Gauge

WINDOW_S = 1.0

PAUSE_SUM = Gauge(
    "python_gc_pause_window_seconds",
    "Time this worker spent in garbage collection in the last second (gc.callbacks)",
)
PAUSE_MAX = Gauge(
    "python_gc_pause_max_window_seconds",
    "Longest single garbage collection of this worker in the last second (gc.callbacks)",
)


class GcPauseMonitor:
    """Times every collection while installed."""

    def __init__(self) -> None:
        # (when it ended, how long it took) for the last second's collections
        self._pauses: collections.deque[tuple[float, float]] = collections.deque()
        self._started: float | None = None

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, _info: dict) -> None:
        # runs inside the collection: keep it to a clock read and an append
        now = time.perf_counter()
        if phase == "start":
            self._started = now
        elif phase == "stop" and self._started is not None:
            self._pauses.append((now, now - self._started))
            self._started = None

    def _forget(self, now: float) -> None:
        while self._pauses and self._pauses[0][0] < now - WINDOW_S:
            self._pauses.popleft()

    def publish(self) -> None:
        """Sets the gauges from the last second (called on each scrape)."""
        now = time.perf_counter()
        self._forget(now)
        PAUSE_SUM.set(sum(p for _, p in self._pauses))
        PAUSE_MAX.set(max((p for _, p in self._pauses), default=0.0))
