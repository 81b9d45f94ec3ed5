"""The asyncpg pool, one per uvicorn worker process. SQL is exactly the contract's (contract/API.md);
asyncpg prepares each statement once per connection and caches it (its default; DB_PREPARED=off
turns the cache off)."""

from __future__ import annotations

import asyncpg

from .config import Settings

SQL_STATUS_GET = "SELECT id, status, updated_at FROM status WHERE id = $1"
SQL_STATUS_GET_MANY = "SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id"
SQL_STATUS_INSERT = (
    "INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at"
)
SQL_STATUS_UPDATE = "UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at"

SQL_CLIENT_INSERT = "INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance"
SQL_CLIENT_BALANCE = "SELECT id, balance FROM clients WHERE id = $1"
SQL_TRANSFER_LOCK = "SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE"
SQL_TRANSFER_MOVE = (
    "UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)"
)
SQL_TRANSFER_LOG = "INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)"

SQL_ORDERS = "SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1"

SQL_DB_PING = "SELECT json_build_object('ok', true, 'message', 'OK')::text"
SQL_DB_TIME = "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text"


async def create_pool(s: Settings) -> asyncpg.Pool:
    size = s.pool_per_worker
    return await asyncpg.create_pool(
        host=s.db_host,
        port=s.db_port,
        database=s.db_name,
        user=s.db_user,
        password=s.db_password,
        # Source 004: min 5 / max 15 per worker; here max = this worker's share of DB_POOL_SIZE.
        min_size=min(5, size),
        max_size=size,
        # Bounds every query (QUERY_TIMEOUT_MS, 5 s as in the other stacks): a timeout → 503.
        command_timeout=s.query_timeout_s,
        # DB_PREPARED=off: no statement cache, so no named prepared statements outlive a
        # transaction (PgBouncer's transaction pooling); asyncpg's default is 100.
        **({} if s.prepared else {"statement_cache_size": 0}),
    )
