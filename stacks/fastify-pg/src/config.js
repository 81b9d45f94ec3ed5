// Settings from the environment contract (contract/API.md), read once at start-up.

function int(name, def, lo = 1) {
  const raw = process.env[name] ?? String(def);
  if (!/^[0-9]+$/.test(raw)) throw new Error(`${name}=${JSON.stringify(raw)}: want an integer`);
  const v = Number(raw);
  if (v < lo) throw new Error(`${name}=${v}: must be at least ${lo}`);
  return v;
}

export function load() {
  const workers = int('WORKERS', 1);
  const poolSize = int('DB_POOL_SIZE', 64);
  return {
    httpPort: int('HTTP_PORT', 8080),
    db: {
      host: process.env.DB_HOST ?? '127.0.0.1',
      port: int('DB_PORT', 5432),
      database: process.env.DB_NAME ?? 'bench',
      user: process.env.DB_USER ?? 'bench',
      password: process.env.DB_PASSWORD ?? '',
    },
    workers,
    // DB_POOL_SIZE is the stack's total: WORKERS processes each get ceil(total / WORKERS), so
    // PostgreSQL sees as many connections as from a one-process stack (source 004 gave every
    // PM2 worker 15, 60 in all against Go's 15).
    poolPerWorker: Math.max(1, Math.ceil(poolSize / workers)),
    queryTimeoutMs: int('QUERY_TIMEOUT_MS', 5000),
  };
}
