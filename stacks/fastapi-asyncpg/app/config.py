"""Settings from the environment contract (contract/API.md), read once at start-up."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    http_port: int
    db_host: str
    db_port: int
    db_name: str
    db_user: str
    db_password: str
    # DB_POOL_SIZE is the stack's total: uvicorn runs WORKERS processes with a pool each, so each
    # gets ceil(DB_POOL_SIZE / WORKERS) and PostgreSQL sees the same number of connections as from
    # a one-process stack (source 004 gave every worker 15, 60 in all against Go's 15).
    pool_size: int
    workers: int
    query_timeout_s: float
    # DB_PREPARED: "on" (default) keeps asyncpg's statement cache (each statement prepared once per
    # connection, by name); "off" sets statement_cache_size=0 (unnamed statements only), which is
    # what PgBouncer's transaction pooling needs.
    prepared: bool = True

    @property
    def pool_per_worker(self) -> int:
        return max(1, math.ceil(self.pool_size / self.workers))


def _int(name: str, default: int, lo: int = 1) -> int:
    raw = os.environ.get(name, str(default))
    try:
        v = int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r}: want an integer") from None
    if v < lo:
        raise SystemExit(f"{name}={v}: must be at least {lo}")
    return v


def _on_off(name: str, default: str) -> bool:
    raw = os.environ.get(name, default)
    if raw not in ("on", "off"):
        raise SystemExit(f"{name}={raw!r}: want on or off")
    return raw == "on"


def load() -> Settings:
    return Settings(
        http_port=_int("HTTP_PORT", 8080),
        db_host=os.environ.get("DB_HOST", "127.0.0.1"),
        db_port=_int("DB_PORT", 5432),
        db_name=os.environ.get("DB_NAME", "bench"),
        db_user=os.environ.get("DB_USER", "bench"),
        db_password=os.environ.get("DB_PASSWORD", ""),
        pool_size=_int("DB_POOL_SIZE", 64),
        workers=_int("WORKERS", 1),
        query_timeout_s=_int("QUERY_TIMEOUT_MS", 5000) / 1000,
        prepared=_on_off("DB_PREPARED", "on"),
    )
