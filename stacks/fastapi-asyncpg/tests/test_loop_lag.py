"""Truth test for the event-loop lag gauge: a stall of known length must read as that length.

Run from the stack's directory with its virtualenv: `.venv/bin/python -m unittest discover -s tests`
(`make test` does).
"""

from __future__ import annotations

import asyncio
import time
import unittest

from prometheus_client import REGISTRY

from app.loop_lag import LoopLagMonitor


def gauge() -> float:
    # the value /metrics prints for this gauge, read from the default registry
    return REGISTRY.get_sample_value("python_eventloop_lag_max_seconds")


class LoopLagTest(unittest.TestCase):
    def test_a_blocked_loop_reads_as_its_stall_then_clears(self) -> None:
        async def scenario() -> tuple[float, float, float]:
            m = LoopLagMonitor()
            m.start()
            await asyncio.sleep(0.3)  # a few samples of an idle loop
            m.publish()
            idle = gauge()
            time.sleep(0.3)  # a handler that blocks the loop for 300 ms
            await asyncio.sleep(0.12)  # the monitor wakes late and records it
            m.publish()
            stalled = gauge()
            await asyncio.sleep(1.2)  # the stall leaves the one-second window
            m.publish()
            after = gauge()
            await m.stop()
            return idle, stalled, after

        idle, stalled, after = asyncio.run(scenario())
        self.assertLess(idle, 0.05, "an idle loop shows no lag")
        # the timer was due at most 50 ms into the 300-ms stall: it fired 250–300 ms late
        self.assertGreaterEqual(stalled, 0.24)
        self.assertLess(stalled, 0.40)
        self.assertLess(after, 0.05, "the window forgets a stall after a second")

    def test_a_stall_still_in_progress_at_the_scrape_counts(self) -> None:
        async def scenario() -> float:
            m = LoopLagMonitor()
            m.start()
            await asyncio.sleep(0.2)
            time.sleep(0.3)
            # published before the monitor's late wake-up is processed
            m.publish()
            v = gauge()
            await m.stop()
            return v

        self.assertGreaterEqual(asyncio.run(scenario()), 0.2)


if __name__ == "__main__":
    unittest.main()
