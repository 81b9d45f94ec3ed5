"""Truth test for the GC pause gauges: a collection of known length must read as that length.

Run from the stack's directory with its virtualenv: `.venv/bin/python -m unittest discover -s tests`
(`make test` does).
"""

from __future__ import annotations

import gc
import time
import unittest

from prometheus_client import REGISTRY

from app.gc_pauses import GcPauseMonitor


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name)


class Node:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.other = self


class GcPauseTest(unittest.TestCase):
    def test_a_collection_reads_as_its_duration_then_clears(self) -> None:
        m = GcPauseMonitor()
        gc.disable()  # no collection of our own garbage before we ask for one
        try:
            m.install()
            m.publish()
            self.assertEqual(sample("python_gc_pause_window_seconds"), 0.0)
            garbage = [Node() for _ in range(400_000)]
            del garbage
            t0 = time.perf_counter()
            freed = gc.collect()
            took = time.perf_counter() - t0
            m.publish()
            total = sample("python_gc_pause_window_seconds")
            longest = sample("python_gc_pause_max_window_seconds")
        finally:
            m.uninstall()
            gc.enable()
        self.assertGreaterEqual(freed, 400_000, "the cycles were garbage")
        self.assertGreater(took, 0.005, "the collection took a measurable time")
        # the gauge is the collection's own time: inside the call, and most of it
        self.assertLessEqual(total, took)
        self.assertGreaterEqual(total, 0.7 * took)
        self.assertEqual(longest, total, "one collection: its sum is its longest")
        time.sleep(1.1)
        m.publish()
        self.assertEqual(sample("python_gc_pause_window_seconds"), 0.0, "the window forgets it")

    def test_uninstalled_it_times_nothing(self) -> None:
        m = GcPauseMonitor()
        m.install()
        m.uninstall()
        gc.collect()
        m.publish()
        self.assertEqual(sample("python_gc_pause_window_seconds"), 0.0)


if __name__ == "__main__":
    unittest.main()
