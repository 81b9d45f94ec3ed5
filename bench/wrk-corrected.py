#!/usr/bin/env python3
"""What wrk would print for the latencies ceiling recorded.

wrk (and source 004, which used it) does not print the latencies it measured: before printing,
it "corrects" them for coordinated omission with the mean interval of a connection,
`interval = runtime / (requests / connections)`: every recorded latency v >= 2*interval adds
synthetic samples at v - interval, v - 2*interval, ... while above the interval (wrk.c, `stats_correct`
in stats.c). In a closed model this inflates the percentiles of a run with stalls far above what
any request took.

This script reads a `ceiling load --out DIR` latency log (DIR/latency.hlog, HdrHistogram's
compressed V2 intervals), merges it, prints its percentiles as recorded (with Little's law as a
check: mean latency = connections / throughput in a closed model), then the same histogram with
wrk's correction applied, to set beside wrk's `--latency` output from the same load.

Usage: bench/wrk-corrected.py DIR/latency.hlog CONNECTIONS SECONDS
"""
import base64
import collections
import math
import struct
import sys
import zlib


def zigzag_varints(b):
    """HdrHistogram's counts payload: ZigZag LEB128 (at most 9 bytes each)."""
    i, out = 0, []
    while i < len(b):
        v, shift = 0, 0
        while True:
            c = b[i]
            i += 1
            if shift == 56:
                v |= c << 56
                break
            v |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                break
        out.append((v >> 1) ^ -(v & 1))
    return out


def decode(text):
    """One compressed V2 histogram (base64) -> Counter {value: count}."""
    raw = base64.b64decode(text)
    _cookie, length = struct.unpack(">ii", raw[:8])
    d = zlib.decompress(raw[8 : 8 + length])
    _cookie2, plen, _norm, sig, lowest, _highest, _ratio = struct.unpack(">iiiiqqd", d[:40])
    sub_bucket_count_mag = math.ceil(math.log2(2 * 10**sig))
    half_mag = max(sub_bucket_count_mag, 1) - 1
    half = 2**half_mag
    unit = int(math.floor(math.log2(lowest)))
    h, idx = collections.Counter(), 0
    for c in zigzag_varints(d[40 : 40 + plen]):
        if c < 0:  # a run of empty buckets
            idx += -c
            continue
        if c > 0:
            bucket = (idx >> half_mag) - 1
            sub = (idx & (half - 1)) + half
            if bucket < 0:
                sub -= half
                bucket = 0
            h[sub << (bucket + unit)] += c
        idx += 1
    return h


def pct(h, p):
    n, acc = sum(h.values()), 0
    for v in sorted(h):
        acc += h[v]
        if acc >= p / 100 * n:
            return v


def mean(h):
    return sum(v * c for v, c in h.items()) / sum(h.values())


def line(h):
    return "mean {:.3f} ms, p50 {:.3f}, p75 {:.3f}, p90 {:.3f}, p99 {:.3f} ms ({} samples)".format(
        mean(h) / 1000, *(pct(h, p) / 1000 for p in (50, 75, 90, 99)), sum(h.values())
    )


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    path, conns, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    h = collections.Counter()
    for row in open(path):
        if row.startswith("Tag=") or row[:1].isdigit():
            h.update(decode(row.strip().split(",")[-1]))
    n = sum(h.values())
    rps = n / secs
    print(f"as recorded:         {line(h)}")
    print(f"  Little's law: {conns} connections / {rps:,.0f} RPS = {conns / rps * 1000:.3f} ms mean")
    interval = int(secs * 1e6 / (n // conns))
    corrected = collections.Counter(h)
    for v, c in sorted(h.items()):
        m = v - interval
        if v < 2 * interval:
            continue
        while m > interval:
            corrected[m] += c
            m -= interval
    print(f"wrk's correction ({interval} us): {line(corrected)}")


if __name__ == "__main__":
    main()
