//! The `fairness` group: what a stack declares about its database pool and its keep-alive policy
//! (its `stack.toml` `[fairness]` table), measured on the running stack instead of trusted.
//!
//! - `pool-open-at-start`: the stack's backends in `pg_stat_activity` right after start-up, before
//!   any other case, against what it declares it opens up front (a fixed HikariCP pool opens all
//!   of them; node-postgres opens none until asked).
//! - `pool-bounded`: twice the pool's size in concurrent `GET /db/ping` (or `/orders` where a
//!   partial-contract stack serves only that) for a second and a half while
//!   `pg_stat_activity` is read every 20 ms; never more backends than the pool size the stand
//!   started it with (`DB_POOL_SIZE`, split across workers by the stack).
//! - `keep-alive-limit`: `GET /health` on one keep-alive connection until the server closes it; the
//!   count must be the declared limit (Tomcat's default closes after 100), or none in 300.
//!
//! Backends are counted on the stack's database, excluding ceiling's own sessions (application
//! names `ceiling…`) and `psql`. With PgBouncer between the stack and PostgreSQL the stack's pool
//! is not visible there, so the pool cases do not run (the caller leaves `pool` out).

use crate::cases::{Ctx, Outcome};
use crate::http::{Conn, Request};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the stack declares, as the caller resolved it for this start (the effective pool size).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FairnessExpect {
    /// The pool; `None`: not visible to the verifier (PgBouncer in between) or no pool at all (a
    /// connection per request) — not checked.
    pub pool: Option<PoolExpect>,
    /// Requests one keep-alive connection serves before the server closes it; 0 = no limit.
    pub keep_alive_max_requests: u32,
}

/// The database pool the stack was started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolExpect {
    /// Connections in all (`DB_POOL_SIZE`: the stack's total over its workers).
    pub size: u32,
    /// Connections the stack declares it opens at start-up, before any request needs them.
    pub open_at_start: u32,
}

/// Requests sent on one connection when the declared limit is "none".
const UNLIMITED_PROBE: u32 = 300;

/// How long a pre-opened pool may take to fill (HikariCP and r2dbc-pool fill in the background).
const FILL_WAIT: Duration = Duration::from_secs(10);

/// (backends open, of them active) on the stack's database, excluding ceiling's sessions.
async fn backends(c: &Ctx) -> Result<(u32, u32), String> {
    let row = c
        .q1(
            "select count(*)::int8, count(*) filter (where state = 'active')::int8 \
             from pg_stat_activity \
             where datname = current_database() and backend_type = 'client backend' \
               and pid <> pg_backend_pid() \
               and coalesce(application_name, '') not like 'ceiling%' \
               and coalesce(application_name, '') <> 'psql'",
            &[],
        )
        .await?;
    Ok((row.get::<_, i64>(0) as u32, row.get::<_, i64>(1) as u32))
}

fn expect(c: &Ctx) -> Result<&FairnessExpect, String> {
    c.cfg
        .fairness
        .as_ref()
        .ok_or_else(|| "the stack declares no [fairness]".to_string())
}

fn pool(c: &Ctx) -> Result<&PoolExpect, String> {
    expect(c)?
        .pool
        .as_ref()
        .ok_or_else(|| "no pool to check (PgBouncer in between, or none declared)".to_string())
}

/// `fairness/pool-open-at-start`.
pub(crate) async fn pool_open_at_start(c: &Ctx) -> Outcome {
    let p = pool(c)?;
    let t0 = Instant::now();
    let mut seen = backends(c).await?.0;
    while seen < p.open_at_start && t0.elapsed() < FILL_WAIT {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = backends(c).await?.0;
    }
    if seen < p.open_at_start {
        return Err(format!(
            "{seen} connections open {:.0} s after start-up; the stack declares {} opened up front (pool {})",
            FILL_WAIT.as_secs_f64(),
            p.open_at_start,
            p.size
        ));
    }
    if seen > p.size {
        return Err(format!(
            "{seen} connections open at start-up, more than the pool's {}",
            p.size
        ));
    }
    Ok(format!(
        "{seen} connections open at start-up (declared {} up front, pool {}; filled in {:.1} s)",
        p.open_at_start,
        p.size,
        t0.elapsed().as_secs_f64()
    ))
}

/// `fairness/pool-bounded`.
pub(crate) async fn pool_bounded(c: &Ctx) -> Outcome {
    let p = pool(c)?;
    let conns = (2 * p.size as usize).clamp(2, 256);
    let stop = Arc::new(AtomicBool::new(false));
    // a database endpoint every stack serves: /db/ping (source 004's), else /orders (002/003's)
    let path = match c.send(&Request::get("/db/ping")).await {
        Ok(r) if r.status == 200 => "/db/ping",
        _ => "/orders",
    }
    .to_string();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let (base, stop, req) = (c.base.clone(), stop.clone(), Request::get(path.clone()));
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut other) = (0u64, 0u64);
            let mut conn: Option<Conn> = None;
            while !stop.load(Ordering::Relaxed) {
                if conn.as_ref().is_none_or(|k| k.is_closed()) {
                    conn = Conn::connect(&base).await.ok();
                }
                let Some(k) = conn.as_mut() else {
                    other += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                match tokio::time::timeout(Duration::from_secs(10), k.send(&base, &req)).await {
                    Ok(Ok(r)) if r.status == 200 => ok += 1,
                    _ => {
                        other += 1;
                        conn = None;
                    }
                }
            }
            (ok, other)
        }));
    }
    let t0 = Instant::now();
    let (mut max_open, mut max_active, mut samples) = (0u32, 0u32, 0u32);
    while t0.elapsed() < Duration::from_millis(1500) {
        let (open, active) = backends(c).await?;
        max_open = max_open.max(open);
        max_active = max_active.max(active);
        samples += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut other) = (0, 0);
    for t in tasks {
        let (a, b) = t.await.map_err(|e| format!("a burst task panicked: {e}"))?;
        ok += a;
        other += b;
    }
    let what = format!(
        "at most {max_open} connections open ({max_active} active) in {samples} samples under {conns} concurrent connections ({ok} answered 200, {other} not)"
    );
    if ok == 0 {
        return Err(format!("{what}: the burst got no answer"));
    }
    if max_open > p.size {
        return Err(format!(
            "{what}: more than the pool size {} the stack was started with",
            p.size
        ));
    }
    Ok(format!("{what}; pool size {}", p.size))
}

/// `fairness/keep-alive-limit`.
pub(crate) async fn keep_alive_limit(c: &Ctx) -> Outcome {
    let declared = expect(c)?.keep_alive_max_requests;
    let n = if declared == 0 {
        UNLIMITED_PROBE
    } else {
        declared + 1
    };
    // /health: the one path every stack serves
    let req = Request::get("/health");
    let mut conn = Conn::connect(&c.base)
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", c.base))?;
    let mut served = 0u32;
    let mut closed = None;
    for i in 1..=n {
        match tokio::time::timeout(c.cfg.request_timeout, conn.send(&c.base, &req)).await {
            Ok(Ok(r)) if r.status == 200 => served = i,
            Ok(Ok(r)) => {
                return Err(format!(
                    "request {i} on one connection: status {}",
                    r.status
                ))
            }
            // a server that closes without saying so: the previous response was the last
            Ok(Err(_)) if i > 1 => {
                closed = Some(i - 1);
                break;
            }
            Ok(Err(e)) => return Err(format!("the first request failed: {e}")),
            Err(_) => return Err(format!("request {i} on one connection: no answer")),
        }
        if conn.is_closed() {
            closed = Some(i);
            break;
        }
    }
    let said = if declared == 0 {
        "no limit".to_string()
    } else {
        format!("a limit of {declared}")
    };
    match (declared, closed) {
        (0, None) => Ok(format!(
            "{served} requests on one connection, never closed (declared {said})"
        )),
        (d, Some(k)) if d == k => Ok(format!(
            "the server closed the connection after {k} requests (declared {said})"
        )),
        (_, Some(k)) => Err(format!(
            "the server closed the connection after {k} requests; the stack declares {said}"
        )),
        (_, None) => Err(format!(
            "{served} requests on one connection, never closed; the stack declares {said}"
        )),
    }
}
