"""Event-loop lag of this worker: how late a 50-ms timer fires, the worst over the last second.

The Python counterpart of prom-client's `nodejs_eventloop_lag_max_seconds` (Node) and of the GC
pause figures the Go and JVM exporters publish: a handler that blocks the loop (CPU work, a
synchronous call, a GC pass over a large heap) delays every request of this worker, and this is
where it shows. prometheus_client publishes no such figure, so it is measured here, the usual
way (a periodic sleep that notes how late it woke), and read by ceiling's signal sampler.

The figure is the worst lag in the last second, not since the previous scrape: uvicorn's workers
do not share a registry, so a scrape reaches one worker, and a window on the clock keeps that
worker's figure aligned with the second it is sampled in.
"""

from __future__ import annotations

import asyncio
import collections
import time

from prometheus_client import Gauge

INTERVAL_S = 0.05
WINDOW_S = 1.0

LAG_MAX = Gauge(
    "python_eventloop_lag_max_seconds",
    "Worst event-loop lag of this worker in the last second (a 50-ms timer's lateness)",
)


class LoopLagMonitor:
    """Samples the running loop's lag until `stop` is called."""

    def __init__(self) -> None:
        # (when, lag) of the last second's samples; 20 a second at most, so a deque is enough
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(INTERVAL_S)
            now = time.monotonic()
            self._samples.append((now, max(0.0, now - before - INTERVAL_S)))
            self._forget(now)

    def _forget(self, now: float) -> None:
        while self._samples and self._samples[0][0] < now - WINDOW_S:
            self._samples.popleft()

    def publish(self) -> None:
        """Sets the gauge from the last second (called on each scrape). A loop blocked right
        now has not appended its late sample yet, so the time since the last sample counts too."""
        now = time.monotonic()
        self._forget(now)
        worst = max((lag for _, lag in self._samples), default=0.0)
        if self._samples:
            pending = now - self._samples[-1][0] - INTERVAL_S
            worst = max(worst, pending)
        LAG_MAX.set(worst)
