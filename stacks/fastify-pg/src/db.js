// node-postgres pool and the contract's SQL (contract/API.md), one pool per worker process.

import pg from 'pg';

// int8 → BigInt (balances go up to 2^62, past JavaScript's 2^53 safe integers);
// timestamptz → its text, turned into RFC 3339 by rfc3339() (a Date would drop the microseconds).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => BigInt(v));
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => v);

/** PostgreSQL's ISO text in UTC ("2025-01-03 03:47:41.123456+00") → "2025-01-03T03:47:41.123456Z". */
export function rfc3339(pgText) {
  return pgText.replace(' ', 'T').replace(/\+00(:00)?$/, 'Z');
}

export const SQL = {
  statusGet: 'SELECT id, status, updated_at FROM status WHERE id = $1',
  statusGetMany: 'SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id',
  statusInsert:
    'INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at',
  statusUpdate: 'UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at',
  clientInsert: 'INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance',
  clientBalance: 'SELECT id, balance FROM clients WHERE id = $1',
  transferLock: 'SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE',
  transferMove:
    'UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)',
  transferLog: 'INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)',
  orders: 'SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1',
  dbPing: "SELECT json_build_object('ok', true, 'message', 'OK')::text",
  dbTime: "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text",
};

export function createPool(cfg) {
  return new pg.Pool({
    ...cfg.db,
    max: cfg.poolPerWorker,
    // timestamps come back in UTC, in ISO style, whatever the server's defaults
    options: '-c TimeZone=UTC -c DateStyle=ISO',
    // bounds every query (QUERY_TIMEOUT_MS, 5 s as in the other stacks): a timeout → 503
    query_timeout: cfg.queryTimeoutMs,
    connectionTimeoutMillis: cfg.queryTimeoutMs,
  });
}
