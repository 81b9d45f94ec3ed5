//! The cases. Each one is an `async fn(&Ctx) -> Check<String>`: `Ok(what was checked)` or
//! `Err(what was wrong)`. They are independent of each other (each creates the rows it writes),
//! read the truth from the database after the request, and never modify seeded rows.

use crate::check::*;
use crate::http::{self, BaseUrl, Conn, Request, Response};
use crate::sql::{self, Shape, StatementSeen};
use crate::{CaseResult, VerifyConfig, VerifyError, VerifyReport};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_postgres::types::ToSql;

/// Largest balance the contract allows: 2^62.
const MAX_BALANCE: i64 = 1 << 62;
/// A body just over the contract's 64 KiB limit.
const OVERSIZED: usize = 70_000;

pub(crate) struct Ctx {
    pub(crate) cfg: VerifyConfig,
    pub(crate) base: BaseUrl,
    db: tokio_postgres::Client,
    seen: Mutex<Vec<StatementSeen>>,
    /// 60 seeded status ids (lower-case, ascending).
    pub(crate) ids: Vec<String>,
    /// A seeded client.
    client_id: i64,
}

pub(crate) type Outcome = Check<String>;

fn micros(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_micros() as i64,
        Err(e) => -(e.duration().as_micros() as i64),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct StatusRow {
    id: String,
    status: i64,
    updated_us: i64,
}

impl Ctx {
    pub(crate) async fn send(&self, req: &Request) -> Check<Response> {
        http::request(&self.base, req, self.cfg.request_timeout).await
    }

    async fn q(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Check<Vec<tokio_postgres::Row>> {
        self.db
            .query(sql, params)
            .await
            .map_err(|e| format!("database: {} (running {sql})", sql::db_error(&e)))
    }

    pub(crate) async fn q1(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Check<tokio_postgres::Row> {
        let mut rows = self.q(sql, params).await?;
        if rows.len() != 1 {
            return Err(format!("database: {} rows from {sql}, want 1", rows.len()));
        }
        Ok(rows.remove(0))
    }

    /// The database's clock, µs since the epoch.
    async fn db_now(&self) -> Check<i64> {
        Ok(micros(self.q1("select now()", &[]).await?.get(0)))
    }

    async fn new_uuid(&self) -> Check<String> {
        // md5 → uuid works on every PostgreSQL version (gen_random_uuid needs 13+)
        Ok(self
            .q1(
                "select md5(random()::text || clock_timestamp()::text)::uuid::text",
                &[],
            )
            .await?
            .get(0))
    }

    /// The status rows with these ids, ascending by id.
    async fn status_rows(&self, ids: &[String]) -> Check<Vec<StatusRow>> {
        let rows = self
            .q("select id::text, status::int8, updated_at from status where id = any($1::text[]::uuid[]) order by id", &[&ids])
            .await?;
        Ok(rows
            .iter()
            .map(|r| StatusRow {
                id: r.get(0),
                status: r.get(1),
                updated_us: micros(r.get(2)),
            })
            .collect())
    }

    async fn status_row(&self, id: &str) -> Check<Option<StatusRow>> {
        Ok(self.status_rows(&[id.to_string()]).await?.pop())
    }

    /// Inserts a status row directly (for PUT cases), `updated_at` an hour ago.
    async fn insert_status(&self, status: i16) -> Check<StatusRow> {
        let id = self.new_uuid().await?;
        self.q("insert into status (id, status, updated_at) values ($1::text::uuid, $2, now() - interval '1 hour')", &[&id, &status])
            .await?;
        self.status_row(&id)
            .await?
            .ok_or_else(|| "database: inserted status row vanished".to_string())
    }

    /// Inserts clients directly with these balances; returns their ids in the same order.
    async fn insert_clients(&self, balances: &[i64]) -> Check<Vec<i64>> {
        let mut ids = Vec::new();
        for b in balances {
            ids.push(
                self.q1(
                    "insert into clients (balance) values ($1) returning id",
                    &[b],
                )
                .await?
                .get(0),
            );
        }
        Ok(ids)
    }

    async fn balances(&self, ids: &[i64]) -> Check<Vec<i64>> {
        let mut out = Vec::new();
        for id in ids {
            out.push(
                self.q1("select balance from clients where id = $1", &[id])
                    .await?
                    .get(0),
            );
        }
        Ok(out)
    }

    async fn transfers_touching(&self, ids: &[i64]) -> Check<Vec<(i64, i64, i64)>> {
        let rows = self
            .q("select from_id, to_id, amount from transfers where from_id = any($1) or to_id = any($1) order by id", &[&ids])
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    async fn unknown_client(&self) -> Check<i64> {
        Ok(self
            .q1("select coalesce(max(id), 0) + 1000000000 from clients", &[])
            .await?
            .get(0))
    }

    /// Sends `req` between two `pg_stat_statements` snapshots and checks that exactly `expected`
    /// counted statements ran (nothing else touching the benchmark tables). The statements seen
    /// go into the case result.
    async fn with_statements(
        &self,
        req: &Request,
        want_status: u16,
        expected: &[(Shape, u64)],
    ) -> Outcome {
        let before = sql::snapshot(&self.db).await?;
        let r = self.send(req).await?;
        expect_status(req, &r, want_status)?;
        let want: BTreeMap<Shape, u64> = expected.iter().copied().collect();
        // pg_stat_statements records a statement when it finishes; a driver may answer the
        // request a moment before the server has stored it, so look again briefly on a shortfall.
        let mut seen = Vec::new();
        for attempt in 0..20 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            let after = sql::snapshot(&self.db).await?;
            seen = sql::delta(&before, &after);
            let got = sql::counts(&seen);
            if want
                .iter()
                .all(|(s, n)| got.get(s).copied().unwrap_or(0) >= *n)
            {
                break;
            }
        }
        let got = sql::counts(&seen);
        let hidden = seen
            .iter()
            .any(|s| s.query.contains("insufficient privilege"));
        *self.seen.lock().unwrap() = seen;
        if hidden {
            return Err(format!(
                "{}: pg_stat_statements hides other roles' statements from role {:?}: verify as a superuser or a member of pg_read_all_stats",
                req.describe(),
                self.cfg.db.user
            ));
        }
        let fmt = |m: &BTreeMap<Shape, u64>| {
            if m.is_empty() {
                "none".to_string()
            } else {
                m.iter()
                    .map(|(s, n)| format!("{n} × {s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        if got != want {
            return Err(format!(
                "{}: want {}, saw {}",
                req.describe(),
                fmt(&want),
                fmt(&got)
            ));
        }
        // API.md's text, modulo what it allows (whitespace, $n vs ?, constants): reported, not failed
        let differs: Vec<String> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| {
                s.shape
                    .contract_sql()
                    .is_some_and(|c| sql::spelling(c) != sql::spelling(&s.query))
            })
            .map(|s| s.shape.label().to_string())
            .collect();
        let spelling = if want.is_empty() {
            String::new()
        } else if differs.is_empty() {
            "; text as in the contract".to_string()
        } else {
            format!(
                "; spelled differently from the contract: {}",
                differs.join(", ")
            )
        };
        Ok(format!(
            "{}: {} → {} statement(s): {}{spelling}",
            req.describe(),
            r.status,
            want.values().sum::<u64>(),
            fmt(&want)
        ))
    }
}

/// Sends each request and expects the contract's error status and body for it.
async fn expect_errors(c: &Ctx, reqs: &[Request], want: u16) -> Outcome {
    let mut bad = Vec::new();
    for req in reqs {
        match c.send(req).await {
            Ok(r) => {
                if let Err(e) = expect_error(req, &r, want) {
                    bad.push(e);
                }
            }
            Err(e) => bad.push(e),
        }
    }
    if bad.is_empty() {
        Ok(format!(
            "{} request(s) → {want} {}",
            reqs.len(),
            error_code_for(want)
        ))
    } else {
        Err(format!(
            "{} of {} request(s) wrong: {}",
            bad.len(),
            reqs.len(),
            bad.join("\n")
        ))
    }
}

fn check_status_dto(v: &Value, want: &StatusRow, what: &str) -> Check {
    let o = object_with_keys(v, &["id", "status", "updatedAt"], what)?;
    let id = str_field(o, "id", what)?;
    if id != want.id {
        return Err(format!("{what}: id {id:?}, want {:?}", want.id));
    }
    let st = int_field(o, "status", what)?;
    if st != want.status {
        return Err(format!("{what}: status {st}, database has {}", want.status));
    }
    let ts = time_field(o, "updatedAt", what)?;
    if ts != want.updated_us {
        return Err(format!(
            "{what}: updatedAt {}, database has {}",
            format_micros(ts),
            format_micros(want.updated_us)
        ));
    }
    Ok(())
}

fn check_status_list(v: &Value, want: &[StatusRow], what: &str) -> Check {
    let arr = v
        .as_array()
        .ok_or_else(|| format!("{what}: not a JSON array: {v}"))?;
    if arr.len() != want.len() {
        let got: Vec<&str> = arr
            .iter()
            .filter_map(|x| x.get("id").and_then(Value::as_str))
            .collect();
        return Err(format!(
            "{what}: {} item(s) {got:?}, want {} (ids ascending, unknown ones omitted, each once)",
            arr.len(),
            want.len()
        ));
    }
    for (i, (item, row)) in arr.iter().zip(want).enumerate() {
        check_status_dto(item, row, &format!("{what}[{i}]"))?;
    }
    Ok(())
}

fn check_client(v: &Value, id: Option<i64>, balance: i64, what: &str) -> Check<i64> {
    let o = object_with_keys(v, &["id", "balance"], what)?;
    let got_id = int_field(o, "id", what)?;
    if let Some(want) = id {
        if got_id != want {
            return Err(format!("{what}: id {got_id}, want {want}"));
        }
    }
    let b = int_field(o, "balance", what)?;
    if b != balance {
        return Err(format!("{what}: balance {b}, want {balance}"));
    }
    Ok(got_id)
}

fn status_body(id: &str, status: i64) -> String {
    format!(r#"{{"id":"{id}","status":{status}}}"#)
}

fn oversized(json: &str) -> Vec<u8> {
    let mut b = vec![b' '; OVERSIZED];
    b.extend_from_slice(json.as_bytes());
    b
}

// ---------------------------------------------------------------- ops

async fn health(c: &Ctx) -> Outcome {
    let req = Request::get("/health");
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    if v != serde_json::json!({"status": "UP"}) {
        return Err(format!(
            "body {}, want {{\"status\":\"UP\"}}",
            r.snippet(200)
        ));
    }
    Ok(format!("GET /health → 200 {}", r.text()))
}

/// Prometheus text format: every sample line is `name[{labels}] value [timestamp]`.
fn parse_prometheus(text: &str) -> Check<Vec<String>> {
    let mut names = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| format!("line {}: no value: {line:?}", i + 1))?;
        let name = &line[..name_end];
        let valid = !name.is_empty()
            && name.chars().enumerate().all(|(j, ch)| {
                ch.is_ascii_alphabetic() || ch == '_' || ch == ':' || (j > 0 && ch.is_ascii_digit())
            });
        if !valid {
            return Err(format!("line {}: bad metric name {name:?}", i + 1));
        }
        let rest = if line[name_end..].starts_with('{') {
            let close = line
                .rfind('}')
                .ok_or_else(|| format!("line {}: unclosed labels", i + 1))?;
            &line[close + 1..]
        } else {
            &line[name_end..]
        };
        let value = rest
            .split_whitespace()
            .next()
            .ok_or_else(|| format!("line {}: no value", i + 1))?;
        let ok = value.parse::<f64>().is_ok() || matches!(value, "+Inf" | "-Inf" | "NaN");
        if !ok {
            return Err(format!("line {}: value {value:?} is not a number", i + 1));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

async fn metrics(c: &Ctx) -> Outcome {
    let req = Request::get("/metrics");
    let r = c.send(&req).await?;
    expect_status(&req, &r, 200)?;
    let ct = r.header("content-type").unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "text/plain" && mime != "application/openmetrics-text" {
        return Err(format!(
            "Content-Type {ct:?}, want text/plain (Prometheus text format)"
        ));
    }
    let names = parse_prometheus(&r.text())?;
    if names.is_empty() {
        return Err("no samples".into());
    }
    let cpu = names.iter().find(|n| n.starts_with("process_cpu"));
    let mem = names.iter().find(|n| {
        ["memory", "resident", "working_set", "rss"]
            .iter()
            .any(|m| n.contains(m))
    });
    match (cpu, mem) {
        (Some(cpu), Some(mem)) => Ok(format!(
            "200 {ct}, {} samples, process CPU ({cpu}) and memory ({mem})",
            names.len()
        )),
        (None, _) => Err(format!(
            "{} samples but no process CPU metric (process_cpu_*)",
            names.len()
        )),
        (_, None) => Err(format!(
            "{} samples but no memory metric (*memory*)",
            names.len()
        )),
    }
}

// ---------------------------------------------------------------- ping

async fn ping(c: &Ctx) -> Outcome {
    let req = Request::get("/ping");
    let r = c.send(&req).await?;
    expect_status(&req, &r, 200)?;
    expect_json_type(&req, &r)?;
    let want = br#"{"ok":true,"message":"OK"}"#;
    if r.body != want {
        return Err(format!(
            "body {:?}, want exactly {:?}",
            r.text(),
            String::from_utf8_lossy(want)
        ));
    }
    Ok(format!("200 {}", r.text()))
}

/// `prefix<digits>suffix` → the number.
fn framed_int(body: &str, prefix: &str, suffix: &str) -> Option<i64> {
    let digits = body.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

async fn check_clock(c: &Ctx, secs: i64, what: &str) -> Check<i64> {
    let now = c.db_now().await? / 1_000_000;
    let tol = c.cfg.clock_tolerance.as_secs() as i64;
    if (secs - now).abs() > tol {
        return Err(format!(
            "{what} {secs} is {} s from the database's now() {now} (tolerance {tol} s)",
            secs - now
        ));
    }
    Ok(secs - now)
}

async fn time(c: &Ctx) -> Outcome {
    let req = Request::get("/time");
    let r = c.send(&req).await?;
    expect_status(&req, &r, 200)?;
    expect_json_type(&req, &r)?;
    let secs = framed_int(&r.text(), r#"{"serverTime":"#, "}").ok_or_else(|| {
        format!(
            "body {:?}, want exactly {{\"serverTime\":<unix seconds>}}",
            r.snippet(200)
        )
    })?;
    let off = check_clock(c, secs, "serverTime").await?;
    Ok(format!(
        "200 {} ({off:+} s from the database's clock)",
        r.text()
    ))
}

const SQL_DB_PING: &str = "SELECT json_build_object('ok', true, 'message', 'OK')::text";
const SQL_DB_TIME: &str =
    "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text";

async fn db_ping(c: &Ctx) -> Outcome {
    let req = Request::get("/db/ping");
    let r = c.send(&req).await?;
    expect_status(&req, &r, 200)?;
    expect_json_type(&req, &r)?;
    let want: String = c.q1(SQL_DB_PING, &[]).await?.get(0);
    if r.body != want.as_bytes() {
        return Err(format!(
            "body {:?}, want exactly what the query returns: {want:?}",
            r.text()
        ));
    }
    Ok(format!(
        "200 {} (the query's text, byte for byte)",
        r.text()
    ))
}

async fn db_time(c: &Ctx) -> Outcome {
    let req = Request::get("/db/time");
    let r = c.send(&req).await?;
    expect_status(&req, &r, 200)?;
    expect_json_type(&req, &r)?;
    let truth: String = c.q1(SQL_DB_TIME, &[]).await?.get(0);
    let cut = truth
        .find(|ch: char| ch.is_ascii_digit())
        .unwrap_or(truth.len());
    let end = truth
        .rfind(|ch: char| ch.is_ascii_digit())
        .map(|i| i + 1)
        .unwrap_or(truth.len());
    let (prefix, suffix) = (&truth[..cut], &truth[end..]);
    let secs = framed_int(&r.text(), prefix, suffix).ok_or_else(|| {
        format!(
            "body {:?}, want the query's text verbatim, like {truth:?}",
            r.snippet(200)
        )
    })?;
    let off = check_clock(c, secs, "serverTime").await?;
    Ok(format!(
        "200 {} (the query's text; {off:+} s from now())",
        r.text()
    ))
}

// ---------------------------------------------------------------- status

async fn status_get(c: &Ctx) -> Outcome {
    let id = &c.ids[0];
    let req = Request::get(format!("/status/{id}"));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let row = c.status_row(id).await?.ok_or("seeded row vanished")?;
    check_status_dto(&v, &row, "body")?;
    Ok(format!("200 {} = the database's row", r.text()))
}

async fn status_get_uppercase(c: &Ctx) -> Outcome {
    let id = &c.ids[1];
    let req = Request::get(format!("/status/{}", id.to_ascii_uppercase()));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let row = c.status_row(id).await?.ok_or("seeded row vanished")?;
    check_status_dto(&v, &row, "body")?;
    Ok(format!(
        "upper-case id → 200 with the lower-case id {}",
        r.text()
    ))
}

async fn status_get_unknown(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    expect_errors(c, &[Request::get(format!("/status/{id}"))], 404).await
}

fn bad_uuids(good: &str) -> Vec<String> {
    vec![
        "not-a-uuid".to_string(),
        good.replace('-', ""),                                     // no dashes
        format!("%7B{good}%7D"),                                   // {braces}
        format!("{good}0"),                                        // one char too many
        good[..35].to_string(),                                    // one too few
        format!("g{}", &good[1..]),                                // not hex
        format!("{}{}-{}", &good[..8], &good[9..10], &good[10..]), // a dash misplaced
        "12345".to_string(),
    ]
}

async fn status_get_bad_uuid(c: &Ctx) -> Outcome {
    let reqs: Vec<Request> = bad_uuids(&c.ids[0])
        .into_iter()
        .map(|b| Request::get(format!("/status/{b}")))
        .collect();
    expect_errors(c, &reqs, 400).await
}

async fn batch(c: &Ctx, query_ids: &[String], want_ids: &[String], what: &str) -> Outcome {
    let req = Request::get(format!("/status?ids={}", query_ids.join(",")));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let rows = c.status_rows(want_ids).await?;
    check_status_list(&v, &rows, "body")?;
    Ok(format!(
        "{what} → 200 with {} row(s) = the database's, ascending by id",
        rows.len()
    ))
}

async fn status_batch(c: &Ctx) -> Outcome {
    let mut q: Vec<String> = c.ids[2..12].to_vec();
    q.reverse();
    batch(c, &q, &c.ids[2..12], "10 ids in descending order").await
}

async fn status_batch_dedup_order(c: &Ctx) -> Outcome {
    let (a, b) = (&c.ids[12], &c.ids[13]);
    let unknown = c.new_uuid().await?;
    let q = vec![b.clone(), a.clone(), a.to_ascii_uppercase(), unknown];
    batch(c, &q, &[a.clone(), b.clone()], "[b, a, A, unknown]").await
}

async fn status_batch_none_found(c: &Ctx) -> Outcome {
    let unknown = c.new_uuid().await?;
    let req = Request::get(format!("/status?ids={unknown}"));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    if v != Value::Array(vec![]) {
        return Err(format!("body {}, want []", r.snippet(200)));
    }
    Ok("one unknown id → 200 []".into())
}

async fn status_batch_50(c: &Ctx) -> Outcome {
    batch(c, &c.ids[..50], &c.ids[..50], "50 ids").await
}

async fn status_batch_no_ids(c: &Ctx) -> Outcome {
    expect_errors(
        c,
        &[Request::get("/status"), Request::get("/status?ids=")],
        400,
    )
    .await
}

async fn status_batch_51(c: &Ctx) -> Outcome {
    expect_errors(
        c,
        &[Request::get(format!(
            "/status?ids={}",
            c.ids[..51].join(",")
        ))],
        400,
    )
    .await
}

async fn status_batch_bad_id(c: &Ctx) -> Outcome {
    let (a, b) = (&c.ids[0], &c.ids[1]);
    let reqs = vec![
        Request::get(format!("/status?ids={a},not-a-uuid")),
        Request::get(format!("/status?ids={a},{b},{}", &b[..35])),
        Request::get(format!("/status?ids={a},")),
        Request::get(format!("/status?ids={a},,{b}")),
    ];
    expect_errors(c, &reqs, 400).await
}

/// POSTs `{"id","status"}` and checks the 201 DTO against the row it created.
async fn post_status(c: &Ctx, sent_id: &str, status: i64, ct: Option<&str>) -> Check<String> {
    let id = sent_id.to_ascii_lowercase();
    let req = Request::post("/status", status_body(sent_id, status)).content_type(ct);
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 201)?;
    let row = c
        .status_row(&id)
        .await?
        .ok_or_else(|| format!("{}: 201 but no row {id} in the database", req.describe()))?;
    if row.status != status {
        return Err(format!(
            "{}: the database has status {}",
            req.describe(),
            row.status
        ));
    }
    check_status_dto(&v, &row, "body")?;
    let now = c.db_now().await?;
    let age = (now - row.updated_us) as f64 / 1e6;
    if age < -1.0 || age > c.cfg.clock_tolerance.as_secs_f64() + 5.0 {
        return Err(format!(
            "updatedAt {} is not the insert's now() ({age:.1} s before the database's now)",
            format_micros(row.updated_us)
        ));
    }
    Ok(r.text())
}

async fn status_post(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    let body = post_status(c, &id, 7, Some(http::JSON)).await?;
    Ok(format!(
        "201 {body} = the new row (updatedAt = the database's now())"
    ))
}

async fn status_post_bounds(c: &Ctx) -> Outcome {
    for st in [-32768, 32767, 0] {
        let id = c.new_uuid().await?.to_ascii_uppercase();
        post_status(c, &id, st, Some(http::JSON)).await?;
    }
    Ok("status -32768, 32767, 0 with upper-case ids → 201, lower-case ids, rows as sent".into())
}

async fn status_post_charset(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    post_status(c, &id, 3, Some("application/json; charset=utf-8")).await?;
    Ok("Content-Type: application/json; charset=utf-8 → 201".into())
}

async fn status_post_duplicate(c: &Ctx) -> Outcome {
    let id = &c.ids[14];
    let before = c.status_row(id).await?.ok_or("seeded row vanished")?;
    let other = if before.status == 5 { 6 } else { 5 };
    let out = expect_errors(c, &[Request::post("/status", status_body(id, other))], 409).await?;
    let after = c.status_row(id).await?;
    if after.as_ref() != Some(&before) {
        return Err(format!("the existing row changed: {before:?} → {after:?}"));
    }
    Ok(format!("{out}; the existing row is unchanged"))
}

/// Bad POST /status bodies, each with a fresh id that must not be created.
async fn status_post_rejected(
    c: &Ctx,
    make: &dyn Fn(&str) -> Request,
    want: u16,
    n: usize,
) -> Outcome {
    let mut reqs = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..n {
        let id = c.new_uuid().await?;
        reqs.push(make(&id));
        ids.push(id);
    }
    status_rejected(c, &reqs, &ids, want).await
}

async fn status_rejected(c: &Ctx, reqs: &[Request], ids: &[String], want: u16) -> Outcome {
    let out = expect_errors(c, reqs, want).await?;
    let created = c.status_rows(ids).await?;
    if !created.is_empty() {
        return Err(format!(
            "{out}, but rows were created: {:?}",
            created.iter().map(|r| &r.id).collect::<Vec<_>>()
        ));
    }
    Ok(format!("{out}; nothing written"))
}

async fn status_post_out_of_range(c: &Ctx) -> Outcome {
    let mut reqs = Vec::new();
    let mut ids = Vec::new();
    for st in ["32768", "-32769", "99999999999999999999", "-2147483649"] {
        let id = c.new_uuid().await?;
        reqs.push(Request::post(
            "/status",
            format!(r#"{{"id":"{id}","status":{st}}}"#),
        ));
        ids.push(id);
    }
    status_rejected(c, &reqs, &ids, 400).await
}

async fn status_post_missing_field(c: &Ctx) -> Outcome {
    let mut reqs = vec![
        Request::post("/status", r#"{"status":1}"#),
        Request::post("/status", "{}"),
    ];
    let mut ids = Vec::new();
    for body in [
        r#"{"id":"ID"}"#,
        r#"{"id":"ID","status":null}"#,
        r#"{"id":null,"status":1}"#,
    ] {
        let id = c.new_uuid().await?;
        reqs.push(Request::post("/status", body.replace("ID", &id)));
        ids.push(id);
    }
    status_rejected(c, &reqs, &ids, 400).await
}

async fn status_post_wrong_type(c: &Ctx) -> Outcome {
    let mut reqs = vec![
        Request::post("/status", r#"{"id":5,"status":1}"#),
        Request::post("/status", r#"{"id":"not-a-uuid","status":1}"#),
        Request::post("/status", "[1,2]"),
        Request::post("/status", r#""a string""#),
    ];
    let mut ids = Vec::new();
    for st in [r#""1""#, "1.5", "true", "[1]", r#"{"v":1}"#] {
        let id = c.new_uuid().await?;
        reqs.push(Request::post(
            "/status",
            format!(r#"{{"id":"{id}","status":{st}}}"#),
        ));
        ids.push(id);
    }
    status_rejected(c, &reqs, &ids, 400).await
}

async fn status_post_malformed_json(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    let reqs = vec![
        Request::post("/status", format!(r#"{{"id":"{id}","status":1"#)),
        Request::post("/status", format!(r#"{{"id":"{id}" "status":1}}"#)),
        Request::post("/status", "not json"),
        Request::post("/status", ""),
    ];
    status_rejected(c, &reqs, &[id], 400).await
}

async fn status_post_wrong_content_type(c: &Ctx) -> Outcome {
    let mut reqs = Vec::new();
    let mut ids = Vec::new();
    for ct in [
        Some("text/plain"),
        None,
        Some("application/x-www-form-urlencoded"),
    ] {
        let id = c.new_uuid().await?;
        reqs.push(Request::post("/status", status_body(&id, 1)).content_type(ct));
        ids.push(id);
    }
    let out = status_rejected(c, &reqs, &ids, 415).await?;
    Ok(format!("text/plain, none, form-urlencoded: {out}"))
}

async fn status_post_too_large(c: &Ctx) -> Outcome {
    status_post_rejected(
        c,
        &|id| Request::post("/status", oversized(&status_body(id, 1))),
        413,
        1,
    )
    .await
}

async fn status_put(c: &Ctx) -> Outcome {
    let old = c.insert_status(3).await?;
    let req = Request::put(format!("/status/{}", old.id), r#"{"status":-5}"#);
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let row = c.status_row(&old.id).await?.ok_or("row vanished")?;
    if row.status != -5 {
        return Err(format!(
            "the database has status {} after the PUT, want -5",
            row.status
        ));
    }
    if row.updated_us <= old.updated_us {
        return Err(format!(
            "updated_at did not move: {} → {}",
            format_micros(old.updated_us),
            format_micros(row.updated_us)
        ));
    }
    check_status_dto(&v, &row, "body")?;
    Ok(format!(
        "200 {} = the updated row (updatedAt moved on from {})",
        r.text(),
        format_micros(old.updated_us)
    ))
}

async fn status_put_unknown(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    status_rejected(
        c,
        &[Request::put(format!("/status/{id}"), r#"{"status":1}"#)],
        &[id],
        404,
    )
    .await
}

async fn status_put_bad_uuid(c: &Ctx) -> Outcome {
    let reqs: Vec<Request> = bad_uuids(&c.ids[0])
        .into_iter()
        .take(4)
        .map(|b| Request::put(format!("/status/{b}"), r#"{"status":1}"#))
        .collect();
    expect_errors(c, &reqs, 400).await
}

/// Bad PUT bodies against a row that must stay as it was.
async fn status_put_rejected(c: &Ctx, bodies: Vec<(Vec<u8>, Option<&str>)>, want: u16) -> Outcome {
    let row = c.insert_status(4).await?;
    let reqs: Vec<Request> = bodies
        .into_iter()
        .map(|(b, ct)| Request::put(format!("/status/{}", row.id), b).content_type(ct))
        .collect();
    let out = expect_errors(c, &reqs, want).await?;
    let after = c.status_row(&row.id).await?;
    if after.as_ref() != Some(&row) {
        return Err(format!("{out}, but the row changed: {row:?} → {after:?}"));
    }
    Ok(format!("{out}; the row is unchanged"))
}

async fn status_put_bad_body(c: &Ctx) -> Outcome {
    let j = Some(http::JSON);
    let bodies = [
        r#"{"status":32768}"#,
        r#"{"status":-32769}"#,
        "{}",
        r#"{"status":null}"#,
        r#"{"status":"1"}"#,
        r#"{"status":1.5}"#,
        r#"{"status":true}"#,
        r#"{"status":1"#,
        "not json",
    ];
    status_put_rejected(
        c,
        bodies.iter().map(|b| (b.as_bytes().to_vec(), j)).collect(),
        400,
    )
    .await
}

async fn status_put_wrong_content_type(c: &Ctx) -> Outcome {
    let b = br#"{"status":1}"#.to_vec();
    status_put_rejected(
        c,
        vec![
            (b.clone(), Some("text/plain")),
            (b.clone(), Some("text/json")),
            (b, None),
        ],
        415,
    )
    .await
}

async fn status_put_too_large(c: &Ctx) -> Outcome {
    status_put_rejected(
        c,
        vec![(oversized(r#"{"status":1}"#), Some(http::JSON))],
        413,
    )
    .await
}

// ---------------------------------------------------------------- bank

async fn create_client(c: &Ctx, balance: i64) -> Check<i64> {
    let req = Request::post("/clients", format!(r#"{{"balance":{balance}}}"#));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 201)?;
    let id = check_client(&v, None, balance, "body")?;
    let got = c
        .balances(&[id])
        .await
        .map_err(|e| format!("{}: 201 {} but {e}", req.describe(), r.text()))?;
    if got[0] != balance {
        return Err(format!(
            "{}: the database has balance {} for client {id}",
            req.describe(),
            got[0]
        ));
    }
    Ok(id)
}

async fn client_create(c: &Ctx) -> Outcome {
    let id = create_client(c, 500).await?;
    Ok(format!("201 {{\"id\":{id},\"balance\":500}} = the new row"))
}

async fn client_create_bounds(c: &Ctx) -> Outcome {
    create_client(c, 0).await?;
    create_client(c, MAX_BALANCE).await?;
    Ok("balance 0 and 2^62 → 201, rows as sent".into())
}

async fn max_client(c: &Ctx) -> Check<i64> {
    Ok(c.q1("select coalesce(max(id), 0) from clients", &[])
        .await?
        .get(0))
}

async fn clients_rejected(c: &Ctx, reqs: &[Request], want: u16) -> Outcome {
    let before = max_client(c).await?;
    let out = expect_errors(c, reqs, want).await?;
    let after = max_client(c).await?;
    if after != before {
        return Err(format!(
            "{out}, but clients were created (max id {before} → {after})"
        ));
    }
    Ok(format!("{out}; nothing written"))
}

async fn client_create_bad_body(c: &Ctx) -> Outcome {
    let bodies = [
        "{\"balance\":-1}".to_string(),
        format!("{{\"balance\":{}}}", MAX_BALANCE as i128 + 1),
        "{\"balance\":99999999999999999999}".into(),
        "{}".into(),
        "{\"balance\":null}".into(),
        "{\"balance\":\"5\"}".into(),
        "{\"balance\":1.5}".into(),
        "{\"balance\":".into(),
        "[]".into(),
    ];
    let reqs: Vec<Request> = bodies
        .iter()
        .map(|b| Request::post("/clients", b.clone()))
        .collect();
    clients_rejected(c, &reqs, 400).await
}

async fn client_create_wrong_content_type(c: &Ctx) -> Outcome {
    let reqs = [
        Request::post("/clients", r#"{"balance":1}"#).content_type(Some("text/plain")),
        Request::post("/clients", r#"{"balance":1}"#).content_type(None),
    ];
    clients_rejected(c, &reqs, 415).await
}

async fn client_create_too_large(c: &Ctx) -> Outcome {
    clients_rejected(
        c,
        &[Request::post("/clients", oversized(r#"{"balance":1}"#))],
        413,
    )
    .await
}

async fn client_balance(c: &Ctx) -> Outcome {
    let id = c.client_id;
    let req = Request::get(format!("/clients/{id}/balance"));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let b = c.balances(&[id]).await?[0];
    check_client(&v, Some(id), b, "body")?;
    Ok(format!("200 {} = the database's row", r.text()))
}

async fn client_balance_unknown(c: &Ctx) -> Outcome {
    let id = c.unknown_client().await?;
    expect_errors(c, &[Request::get(format!("/clients/{id}/balance"))], 404).await
}

async fn client_balance_bad_id(c: &Ctx) -> Outcome {
    let reqs: Vec<Request> = ["abc", "1.5", "99999999999999999999", "1e3", "0x10"]
        .iter()
        .map(|b| Request::get(format!("/clients/{b}/balance")))
        .collect();
    expect_errors(c, &reqs, 400).await
}

fn transfer_body(from: i64, to: i64, amount: i64) -> String {
    format!(r#"{{"from":{from},"to":{to},"amount":{amount}}}"#)
}

async fn transfer(c: &Ctx) -> Outcome {
    let ids = c.insert_clients(&[1000, 1000]).await?;
    let (a, b) = (ids[0], ids[1]);
    let req = Request::post("/transfers", transfer_body(a, b, 100));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let o = object_with_keys(&v, &["from", "to", "amount"], "body")?;
    let got = (
        int_field(o, "from", "body")?,
        int_field(o, "to", "body")?,
        int_field(o, "amount", "body")?,
    );
    if got != (a, b, 100) {
        return Err(format!(
            "body {}, want {}",
            r.text(),
            transfer_body(a, b, 100)
        ));
    }
    let bal = c.balances(&ids).await?;
    if bal != [900, 1100] {
        return Err(format!(
            "balances {bal:?} after moving 100 from {a} to {b}, want [900, 1100]"
        ));
    }
    let log = c.transfers_touching(&ids).await?;
    if log != [(a, b, 100)] {
        return Err(format!(
            "transfers table has {log:?}, want [({a}, {b}, 100)]"
        ));
    }
    // One transaction: both new balance rows and the transfers row carry the same xmin (the
    // id of the transaction that wrote them), whatever the driver shows pg_stat_statements.
    let mut xmins: Vec<String> = Vec::new();
    for row in c
        .q(
            "select xmin::text from clients where id = any($1) order by id",
            &[&ids],
        )
        .await?
    {
        xmins.push(row.get(0));
    }
    xmins.push(
        c.q1(
            "select xmin::text from transfers where from_id = $1 and to_id = $2",
            &[&a, &b],
        )
        .await?
        .get(0),
    );
    if xmins.iter().any(|x| *x != xmins[0]) {
        return Err(format!(
            "not one transaction: the payer, payee and transfers rows were written by transactions {xmins:?} (want one BEGIN … COMMIT)"
        ));
    }
    Ok(format!(
        "200 {}; balances 1000/1000 → 900/1100; one transfers row; all written by one transaction",
        r.text()
    ))
}

/// Transfer requests that must be refused with `want`, leaving balances and the log as they were.
async fn transfers_rejected(
    c: &Ctx,
    make: &dyn Fn(i64, i64, i64) -> Vec<Request>,
    want: u16,
) -> Outcome {
    let ids = c.insert_clients(&[1000, 0]).await?;
    let unknown = c.unknown_client().await?;
    let reqs = make(ids[0], ids[1], unknown);
    let out = expect_errors(c, &reqs, want).await?;
    let bal = c.balances(&ids).await?;
    let log = c.transfers_touching(&ids).await?;
    if bal != [1000, 0] || !log.is_empty() {
        return Err(format!(
            "{out}, but money moved: balances 1000/0 → {bal:?}, transfers {log:?}"
        ));
    }
    Ok(format!("{out}; balances and transfers unchanged"))
}

async fn transfer_insufficient_funds(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, b, _| {
            vec![
                Request::post("/transfers", transfer_body(a, b, 1001)),
                Request::post("/transfers", transfer_body(b, a, 1)),
                Request::post("/transfers", transfer_body(a, b, i64::MAX)),
            ]
        },
        409,
    )
    .await
}

async fn transfer_unknown_client(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, _, u| {
            vec![
                Request::post("/transfers", transfer_body(a, u, 1)),
                Request::post("/transfers", transfer_body(u, a, 1)),
            ]
        },
        404,
    )
    .await
}

async fn transfer_to_self(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, _, _| vec![Request::post("/transfers", transfer_body(a, a, 1))],
        400,
    )
    .await
}

async fn transfer_non_positive_amount(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, b, _| {
            vec![
                Request::post("/transfers", transfer_body(a, b, 0)),
                Request::post("/transfers", transfer_body(a, b, -1)),
            ]
        },
        400,
    )
    .await
}

async fn transfer_bad_body(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, b, _| {
            [
                format!(r#"{{"from":{a},"to":{b}}}"#),
                format!(r#"{{"to":{b},"amount":1}}"#),
                format!(r#"{{"from":{a},"amount":1}}"#),
                format!(r#"{{"from":"{a}","to":{b},"amount":1}}"#),
                format!(r#"{{"from":{a},"to":{b},"amount":1.5}}"#),
                format!(r#"{{"from":{a},"to":{b},"amount":null}}"#),
                format!(r#"{{"from":{a},"to":{b},"amount":1"#),
                "not json".to_string(),
            ]
            .into_iter()
            .map(|b| Request::post("/transfers", b))
            .collect()
        },
        400,
    )
    .await
}

async fn transfer_wrong_content_type(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, b, _| {
            vec![
                Request::post("/transfers", transfer_body(a, b, 1))
                    .content_type(Some("text/plain")),
                Request::post("/transfers", transfer_body(a, b, 1)).content_type(None),
            ]
        },
        415,
    )
    .await
}

async fn transfer_too_large(c: &Ctx) -> Outcome {
    transfers_rejected(
        c,
        &|a, b, _| {
            vec![Request::post(
                "/transfers",
                oversized(&transfer_body(a, b, 1)),
            )]
        },
        413,
    )
    .await
}

// ---------------------------------------------------------------- rows

async fn orders(c: &Ctx, query: &str, n: i64) -> Check<String> {
    let req = Request::get(format!("/orders{query}"));
    let r = c.send(&req).await?;
    let v = expect_json(&req, &r, 200)?;
    let rows = c
        .q("select id, customer, item, quantity::int8, price_cents, created_at from orders order by id limit $1", &[&n])
        .await?;
    let arr = v
        .as_array()
        .ok_or_else(|| format!("{}: not a JSON array", req.describe()))?;
    if arr.len() != rows.len() {
        return Err(format!(
            "{}: {} rows, want {} (the database's first {n} by id)",
            req.describe(),
            arr.len(),
            rows.len()
        ));
    }
    let keys = [
        "id",
        "customer",
        "item",
        "quantity",
        "priceCents",
        "createdAt",
    ];
    for (i, (item, row)) in arr.iter().zip(&rows).enumerate() {
        let what = format!("{}: row {i}", req.describe());
        let o = object_with_keys(item, &keys, &what)?;
        let want_id: i64 = row.get(0);
        let got = (
            int_field(o, "id", &what)?,
            str_field(o, "customer", &what)?.to_string(),
            str_field(o, "item", &what)?.to_string(),
            int_field(o, "quantity", &what)?,
            int_field(o, "priceCents", &what)?,
            time_field(o, "createdAt", &what)?,
        );
        let want = (
            want_id,
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, i64>(3),
            row.get::<_, i64>(4),
            micros(row.get(5)),
        );
        if got != want {
            return Err(format!("{what}: {item}, the database has {want:?}"));
        }
    }
    Ok(format!(
        "{} rows = the database's first {n} by id",
        rows.len()
    ))
}

async fn orders_default(c: &Ctx) -> Outcome {
    Ok(format!(
        "GET /orders (no limit): {}",
        orders(c, "", 10).await?
    ))
}

async fn orders_limit(c: &Ctx) -> Outcome {
    let mut out = Vec::new();
    for n in [1, 100, 1000] {
        out.push(format!(
            "limit={n}: {}",
            orders(c, &format!("?limit={n}"), n).await?
        ));
    }
    Ok(out.join("; "))
}

async fn orders_bad_limit(c: &Ctx) -> Outcome {
    let reqs: Vec<Request> = [
        "0",
        "1001",
        "-1",
        "abc",
        "",
        "1e2",
        "1.5",
        "99999999999999999999",
    ]
    .iter()
    .map(|l| Request::get(format!("/orders?limit={l}")))
    .collect();
    expect_errors(c, &reqs, 400).await
}

// ---------------------------------------------------------------- sql (pg_stat_statements)

async fn sql_ping(c: &Ctx) -> Outcome {
    c.with_statements(&Request::get("/ping"), 200, &[]).await
}
async fn sql_time(c: &Ctx) -> Outcome {
    c.with_statements(&Request::get("/time"), 200, &[]).await
}
async fn sql_db_ping(c: &Ctx) -> Outcome {
    c.with_statements(&Request::get("/db/ping"), 200, &[(Shape::DbPing, 1)])
        .await
}
async fn sql_db_time(c: &Ctx) -> Outcome {
    c.with_statements(&Request::get("/db/time"), 200, &[(Shape::DbTime, 1)])
        .await
}
async fn sql_status_get(c: &Ctx) -> Outcome {
    c.with_statements(
        &Request::get(format!("/status/{}", c.ids[20])),
        200,
        &[(Shape::StatusGetOne, 1)],
    )
    .await
}
async fn sql_status_get_repeat(c: &Ctx) -> Outcome {
    let out = c
        .with_statements(
            &Request::get(format!("/status/{}", c.ids[20])),
            200,
            &[(Shape::StatusGetOne, 1)],
        )
        .await?;
    Ok(format!(
        "the same GET again still reaches the database: {out}"
    ))
}
fn batch_of_10(c: &Ctx) -> Request {
    Request::get(format!("/status?ids={}", c.ids[21..31].join(",")))
}
async fn sql_status_batch(c: &Ctx) -> Outcome {
    c.with_statements(&batch_of_10(c), 200, &[(Shape::StatusGetMany, 1)])
        .await
}
async fn sql_status_batch_repeat(c: &Ctx) -> Outcome {
    let out = c
        .with_statements(&batch_of_10(c), 200, &[(Shape::StatusGetMany, 1)])
        .await?;
    Ok(format!(
        "the same batch again still reaches the database: {out}"
    ))
}
async fn sql_status_post(c: &Ctx) -> Outcome {
    let id = c.new_uuid().await?;
    c.with_statements(
        &Request::post("/status", status_body(&id, 1)),
        201,
        &[(Shape::StatusInsert, 1)],
    )
    .await
}
async fn sql_status_put(c: &Ctx) -> Outcome {
    let row = c.insert_status(1).await?;
    c.with_statements(
        &Request::put(format!("/status/{}", row.id), r#"{"status":2}"#),
        200,
        &[(Shape::StatusUpdate, 1)],
    )
    .await
}
async fn sql_client_create(c: &Ctx) -> Outcome {
    c.with_statements(
        &Request::post("/clients", r#"{"balance":1}"#),
        201,
        &[(Shape::ClientInsert, 1)],
    )
    .await
}
async fn sql_client_balance(c: &Ctx) -> Outcome {
    c.with_statements(
        &Request::get(format!("/clients/{}/balance", c.client_id)),
        200,
        &[(Shape::ClientBalance, 1)],
    )
    .await
}
async fn sql_client_balance_repeat(c: &Ctx) -> Outcome {
    let out = c
        .with_statements(
            &Request::get(format!("/clients/{}/balance", c.client_id)),
            200,
            &[(Shape::ClientBalance, 1)],
        )
        .await?;
    Ok(format!(
        "the same GET again still reaches the database: {out}"
    ))
}
async fn sql_transfer(c: &Ctx) -> Outcome {
    let ids = c.insert_clients(&[1000, 1000]).await?;
    let want = [
        (Shape::TransferLock, 1),
        (Shape::TransferMove, 1),
        (Shape::TransferLog, 1),
    ];
    c.with_statements(
        &Request::post("/transfers", transfer_body(ids[0], ids[1], 100)),
        200,
        &want,
    )
    .await
}
async fn sql_orders(c: &Ctx) -> Outcome {
    c.with_statements(
        &Request::get("/orders?limit=10"),
        200,
        &[(Shape::Orders, 1)],
    )
    .await
}
async fn sql_orders_repeat(c: &Ctx) -> Outcome {
    let out = c
        .with_statements(
            &Request::get("/orders?limit=10"),
            200,
            &[(Shape::Orders, 1)],
        )
        .await?;
    Ok(format!(
        "the same GET again still reaches the database: {out}"
    ))
}

// ---------------------------------------------------------------- concurrency

/// xorshift64*: a deterministic generator for the burst's plan.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Default)]
struct WorkerResult {
    ok: Vec<(i64, i64, i64)>,
    insufficient: usize,
    problems: Vec<String>,
    problem_count: usize,
}

async fn burst_worker(
    base: BaseUrl,
    timeout: Duration,
    plan: Vec<(i64, i64, i64)>,
    start: Arc<tokio::sync::Barrier>,
) -> WorkerResult {
    let mut res = WorkerResult::default();
    let mut conn = Conn::connect(&base).await.map_err(|e| e.to_string());
    start.wait().await;
    for (from, to, amount) in plan {
        let req = Request::post("/transfers", transfer_body(from, to, amount));
        if conn.as_ref().map_or(true, Conn::is_closed) {
            conn = Conn::connect(&base).await.map_err(|e| e.to_string());
        }
        let outcome = match &mut conn {
            Ok(cn) => match tokio::time::timeout(timeout, cn.send(&base, &req)).await {
                Ok(Ok(r)) => Ok(r),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no response within {timeout:?}")),
            },
            Err(e) => Err(format!("cannot connect: {e}")),
        };
        let problem = match outcome {
            Ok(r) if r.status == 200 => match expect_json(&req, &r, 200) {
                Ok(v) if v == serde_json::json!({"from": from, "to": to, "amount": amount}) => {
                    res.ok.push((from, to, amount));
                    None
                }
                Ok(_) => {
                    // answered 200 with the wrong body: count it as done (the table will tell)
                    res.ok.push((from, to, amount));
                    Some(format!(
                        "{}: 200 with body {}",
                        req.describe(),
                        r.snippet(120)
                    ))
                }
                Err(e) => Some(e),
            },
            Ok(r) if r.status == 409 => {
                res.insufficient += 1;
                expect_error(&req, &r, 409).err()
            }
            Ok(r) => Some(format!(
                "{}: {} {}",
                req.describe(),
                r.status,
                r.snippet(160)
            )),
            Err(e) => {
                conn = Err(e.clone());
                Some(format!("{}: {e}", req.describe()))
            }
        };
        if let Some(p) = problem {
            res.problem_count += 1;
            if res.problems.len() < 3 {
                res.problems.push(p);
            }
        }
    }
    res
}

async fn transfer_burst(c: &Ctx) -> Outcome {
    const OPENING: i64 = 10_000;
    let n_clients = c.cfg.burst_clients.max(2);
    let conns = c.cfg.concurrency.max(1);
    let per = c.cfg.transfers_per_connection.max(1);
    let ids = c.insert_clients(&vec![OPENING; n_clients]).await?;
    let start = Arc::new(tokio::sync::Barrier::new(conns));
    let mut tasks = Vec::new();
    for w in 0..conns {
        let mut rng =
            Rng(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let plan: Vec<(i64, i64, i64)> = (0..per)
            .map(|_| {
                let f = rng.below(n_clients as u64) as usize;
                let t = (f + 1 + rng.below(n_clients as u64 - 1) as usize) % n_clients;
                (ids[f], ids[t], 1 + rng.below(3000) as i64)
            })
            .collect();
        tasks.push(tokio::spawn(burst_worker(
            c.base.clone(),
            c.cfg.request_timeout,
            plan,
            start.clone(),
        )));
    }
    let t0 = Instant::now();
    let mut ok = Vec::new();
    let (mut insufficient, mut problem_count, mut problems) = (0, 0, Vec::new());
    for t in tasks {
        let r = t.await.map_err(|e| format!("burst worker panicked: {e}"))?;
        ok.extend(r.ok);
        insufficient += r.insufficient;
        problem_count += r.problem_count;
        problems.extend(r.problems);
    }
    let secs = t0.elapsed().as_secs_f64();
    let total = conns * per;
    let mut errs = Vec::new();
    if problem_count > 0 {
        problems.truncate(5);
        errs.push(format!("{problem_count} of {total} transfers answered wrongly (not 200/409 as the contract says): {}", problems.join("\n")));
    }
    if ok.is_empty() {
        errs.push("no transfer succeeded".into());
    }
    // the database's truth
    let balances = c.balances(&ids).await?;
    let sum: i64 = balances.iter().sum();
    let want_sum = OPENING * n_clients as i64;
    if sum != want_sum {
        errs.push(format!(
            "money not conserved: the {n_clients} clients hold {sum}, opened with {want_sum}"
        ));
    }
    let mut log = c.transfers_touching(&ids).await?;
    let mut answered = ok.clone();
    log.sort_unstable();
    answered.sort_unstable();
    if log != answered {
        let extra = log.iter().filter(|t| !answered.contains(t)).count();
        let missing = answered.iter().filter(|t| !log.contains(t)).count();
        errs.push(format!(
            "the transfers table has {} rows, {} transfers were answered 200 ({missing} answered but not logged, {extra} logged but not answered)",
            log.len(),
            answered.len()
        ));
    }
    let idx: BTreeMap<i64, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut by_answers = vec![OPENING; n_clients];
    let mut by_log = vec![OPENING; n_clients];
    for (f, t, a) in &answered {
        by_answers[idx[f]] -= a;
        by_answers[idx[t]] += a;
    }
    for (f, t, a) in &log {
        by_log[idx[f]] -= a;
        by_log[idx[t]] += a;
    }
    let off_answers = (0..n_clients)
        .filter(|&i| balances[i] != by_answers[i])
        .count();
    let off_log = (0..n_clients).filter(|&i| balances[i] != by_log[i]).count();
    if off_answers > 0 || off_log > 0 {
        errs.push(format!(
            "balance ≠ opening + in − out for {off_answers} client(s) by the 200 answers and {off_log} by the transfers table (a half-applied or phantom transfer)"
        ));
    }
    if let Some(neg) = balances.iter().find(|b| **b < 0) {
        errs.push(format!("a negative balance: {neg}"));
    }
    let summary = format!(
        "{total} transfers from {conns} connections among {n_clients} clients in {secs:.2} s: {} done, {insufficient} insufficient funds; sum {sum} = {want_sum}",
        ok.len()
    );
    if errs.is_empty() {
        Ok(format!(
            "{summary}; {} transfers rows = the 200 answers; every balance = opening + in − out",
            log.len()
        ))
    } else {
        Err(format!("{}\n{summary}", errs.join("\n")))
    }
}

// ---------------------------------------------------------------- runner

/// Whether an `--only` entry selects case `name` of `group`: the group, the case name, or
/// `group/name` exactly as the report prints it (`ping/ping` is one case, `ping` the group).
fn selects(only: &str, group: &str, name: &str) -> bool {
    only == group
        || only == name
        || only
            .split_once('/')
            .is_some_and(|(g, n)| g == group && n == name)
}

async fn setup(cfg: &VerifyConfig) -> Result<Ctx, VerifyError> {
    let base = BaseUrl::parse(&cfg.base_url).map_err(VerifyError::Config)?;
    if let Some(o) = cfg
        .only
        .iter()
        .find(|o| !CASES.iter().any(|(g, n)| selects(o, g, n)))
    {
        return Err(VerifyError::Config(format!("no case or group named {o:?}")));
    }
    let (db, conn) = cfg
        .db
        .pg_config()
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| VerifyError::Db {
            url: cfg.db.display_url(),
            message: sql::db_error(&e),
        })?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    if let Err(e) = Conn::connect(&base).await {
        return Err(VerifyError::Unreachable {
            url: base.to_string(),
            message: e.to_string(),
        });
    }
    let data = |e: tokio_postgres::Error| VerifyError::Data(sql::db_error(&e));
    // seeded rows, read through the primary key from the middle of the table
    let ids: Vec<String> = db
        .query("select id::text from status where id >= '10000000-0000-0000-0000-000000000000' order by id limit 60", &[])
        .await
        .map_err(data)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if ids.len() < 60 {
        return Err(VerifyError::Data(format!(
            "status has {} rows above 1000…, want the seed (contract/seed.sql)",
            ids.len()
        )));
    }
    let client = db
        .query("select id from clients order by id limit 1", &[])
        .await
        .map_err(data)?;
    let client_id: i64 = client
        .first()
        .map(|r| r.get(0))
        .ok_or_else(|| VerifyError::Data("clients is empty: seed the database".into()))?;
    let orders: i64 = db
        .query_one("select count(*) from orders", &[])
        .await
        .map_err(data)?
        .get(0);
    if orders == 0 {
        return Err(VerifyError::Data(
            "orders is empty: seed the database".into(),
        ));
    }
    Ok(Ctx {
        cfg: cfg.clone(),
        base,
        db,
        seen: Mutex::new(Vec::new()),
        ids,
        client_id,
    })
}

/// Every case, in run order: (group, name, function).
macro_rules! cases {
    ($( $group:literal $name:literal $f:ident ),* $(,)?) => {
        /// Names and groups of every case, in run order.
        pub(crate) const CASES: &[(&str, &str)] = &[$( ($group, $name) ),*];

        async fn run_one(c: &Ctx, name: &str) -> Outcome {
            match name {
                $( $name => $f(c).await, )*
                _ => Err(format!("no case {name}")),
            }
        }
    };
}

cases! {
    // first: what the pool holds before any other case has used it
    "fairness" "pool-open-at-start" pool_open_at_start,
    "ops" "health" health,
    "ops" "metrics" metrics,
    "ping" "ping" ping,
    "ping" "time" time,
    "ping" "db-ping" db_ping,
    "ping" "db-time" db_time,
    "status" "status-get" status_get,
    "status" "status-get-uppercase" status_get_uppercase,
    "status" "status-get-unknown" status_get_unknown,
    "status" "status-get-bad-uuid" status_get_bad_uuid,
    "status" "status-batch" status_batch,
    "status" "status-batch-dedup-order" status_batch_dedup_order,
    "status" "status-batch-none-found" status_batch_none_found,
    "status" "status-batch-50" status_batch_50,
    "status" "status-batch-no-ids" status_batch_no_ids,
    "status" "status-batch-51-ids" status_batch_51,
    "status" "status-batch-bad-id" status_batch_bad_id,
    "status" "status-post" status_post,
    "status" "status-post-smallint-bounds" status_post_bounds,
    "status" "status-post-charset" status_post_charset,
    "status" "status-post-duplicate" status_post_duplicate,
    "status" "status-post-out-of-range" status_post_out_of_range,
    "status" "status-post-missing-field" status_post_missing_field,
    "status" "status-post-wrong-type" status_post_wrong_type,
    "status" "status-post-malformed-json" status_post_malformed_json,
    "status" "status-post-wrong-content-type" status_post_wrong_content_type,
    "status" "status-post-too-large" status_post_too_large,
    "status" "status-put" status_put,
    "status" "status-put-unknown" status_put_unknown,
    "status" "status-put-bad-uuid" status_put_bad_uuid,
    "status" "status-put-bad-body" status_put_bad_body,
    "status" "status-put-wrong-content-type" status_put_wrong_content_type,
    "status" "status-put-too-large" status_put_too_large,
    "bank" "client-create" client_create,
    "bank" "client-create-bounds" client_create_bounds,
    "bank" "client-create-bad-body" client_create_bad_body,
    "bank" "client-create-wrong-content-type" client_create_wrong_content_type,
    "bank" "client-create-too-large" client_create_too_large,
    "bank" "client-balance" client_balance,
    "bank" "client-balance-unknown" client_balance_unknown,
    "bank" "client-balance-bad-id" client_balance_bad_id,
    "bank" "transfer" transfer,
    "bank" "transfer-insufficient-funds" transfer_insufficient_funds,
    "bank" "transfer-unknown-client" transfer_unknown_client,
    "bank" "transfer-to-self" transfer_to_self,
    "bank" "transfer-non-positive-amount" transfer_non_positive_amount,
    "bank" "transfer-bad-body" transfer_bad_body,
    "bank" "transfer-wrong-content-type" transfer_wrong_content_type,
    "bank" "transfer-too-large" transfer_too_large,
    "rows" "orders-default" orders_default,
    "rows" "orders-limit" orders_limit,
    "rows" "orders-bad-limit" orders_bad_limit,
    "sql" "sql-ping" sql_ping,
    "sql" "sql-time" sql_time,
    "sql" "sql-db-ping" sql_db_ping,
    "sql" "sql-db-time" sql_db_time,
    "sql" "sql-status-get" sql_status_get,
    "sql" "sql-status-get-repeat" sql_status_get_repeat,
    "sql" "sql-status-batch" sql_status_batch,
    "sql" "sql-status-batch-repeat" sql_status_batch_repeat,
    "sql" "sql-status-post" sql_status_post,
    "sql" "sql-status-put" sql_status_put,
    "sql" "sql-client-create" sql_client_create,
    "sql" "sql-client-balance" sql_client_balance,
    "sql" "sql-client-balance-repeat" sql_client_balance_repeat,
    "sql" "sql-transfer" sql_transfer,
    "sql" "sql-orders" sql_orders,
    "sql" "sql-orders-repeat" sql_orders_repeat,
    "concurrency" "transfer-burst" transfer_burst,
    "fairness" "pool-bounded" pool_bounded,
    "fairness" "keep-alive-limit" keep_alive_limit,
}

use crate::fairness::{keep_alive_limit, pool_bounded, pool_open_at_start};

/// Whether a case applies to this configuration: the `sql` group needs statement counting; the
/// `fairness` group needs the stack's declaration (and the pool cases a visible pool).
fn applies(cfg: &VerifyConfig, group: &str, name: &str) -> bool {
    match group {
        "sql" => cfg.check_statements,
        "fairness" => match &cfg.fairness {
            None => false,
            Some(f) => f.pool.is_some() || !name.starts_with("pool-"),
        },
        _ => true,
    }
}

/// Names and groups of every case the suite has, in run order.
pub fn case_names() -> &'static [(&'static str, &'static str)] {
    CASES
}

pub(crate) async fn run(cfg: &VerifyConfig) -> Result<VerifyReport, VerifyError> {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let ctx = setup(cfg).await?;
    let mut cases = Vec::new();
    for (group, name) in CASES {
        if !cfg.only.is_empty() && !cfg.only.iter().any(|o| selects(o, group, name)) {
            continue;
        }
        if !applies(cfg, group, name) {
            continue;
        }
        let t = Instant::now();
        ctx.seen.lock().unwrap().clear();
        let limit = cfg.request_timeout * 6 + Duration::from_secs(30);
        let out = match tokio::time::timeout(limit, run_one(&ctx, name)).await {
            Ok(o) => o,
            Err(_) => Err(format!("the case did not finish within {limit:?}")),
        };
        let statements_seen = std::mem::take(&mut *ctx.seen.lock().unwrap());
        cases.push(CaseResult {
            name: name.to_string(),
            group: group.to_string(),
            passed: out.is_ok(),
            detail: out.unwrap_or_else(|e| e),
            statements_seen,
            duration_ms: t.elapsed().as_millis() as u64,
        });
    }
    Ok(VerifyReport {
        base_url: ctx.base.to_string(),
        database: cfg.db.display_url(),
        started_at: format_micros(micros(started)),
        duration_ms: t0.elapsed().as_millis() as u64,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names_are_unique_and_kebab() {
        let mut seen = std::collections::HashSet::new();
        for (g, n) in CASES {
            assert!(seen.insert(*n), "duplicate case {n}");
            assert!(
                n.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'),
                "{n}"
            );
            assert!(
                [
                    "ops",
                    "ping",
                    "status",
                    "bank",
                    "rows",
                    "sql",
                    "concurrency",
                    "fairness"
                ]
                .contains(g),
                "{g}"
            );
        }
        assert!(CASES.len() >= 60);
    }

    #[test]
    fn only_takes_groups_names_and_group_slash_name() {
        assert!(selects("ping/ping", "ping", "ping"));
        assert!(!selects("ping/ping", "ping", "db-ping"));
        assert!(selects("ping", "ping", "db-ping"));
        assert!(selects("db-ping", "ping", "db-ping"));
        assert!(!selects("status/ping", "ping", "ping"));
    }

    #[test]
    fn config_errors_come_before_connecting() {
        let db = crate::DbConfig {
            host: "127.0.0.1".into(),
            port: 1,
            user: "u".into(),
            password: String::new(),
            dbname: "d".into(),
        };
        let mut cfg = VerifyConfig::new("http://127.0.0.1:1", db);
        cfg.only = vec!["sql".into(), "no-such-case".into()];
        let e = crate::verify(&cfg).unwrap_err().to_string();
        assert!(e.contains("no-such-case"), "{e}");
        cfg.only.clear();
        cfg.base_url = "https://x".into();
        assert!(matches!(crate::verify(&cfg), Err(VerifyError::Config(_))));
        cfg.base_url = "http://127.0.0.1:1".into();
        assert!(matches!(crate::verify(&cfg), Err(VerifyError::Db { .. })));
    }

    #[test]
    fn prometheus_text() {
        let t = "# HELP x y\n# TYPE x counter\nprocess_cpu_seconds_total 1.5\nfoo{a=\"b c\",d=\"}\"} 2 1700000000\nbar +Inf\n\n";
        assert_eq!(
            parse_prometheus(t).unwrap(),
            vec!["process_cpu_seconds_total", "foo", "bar"]
        );
        assert!(parse_prometheus("9bad 1\n").is_err());
        assert!(parse_prometheus("x y\n").is_err());
        assert!(parse_prometheus("<html>\n").is_err());
    }

    #[test]
    fn framed_ints_and_bad_uuids() {
        assert_eq!(
            framed_int(r#"{"serverTime":17}"#, r#"{"serverTime":"#, "}"),
            Some(17)
        );
        assert_eq!(
            framed_int(r#"{"serverTime": 17}"#, r#"{"serverTime":"#, "}"),
            None
        );
        assert_eq!(
            framed_int(r#"{"serverTime":-1}"#, r#"{"serverTime":"#, "}"),
            None
        );
        let good = "000016a5-3c0e-4307-4168-ff8fc74bd819";
        for b in bad_uuids(good) {
            assert_ne!(b, good);
            assert_ne!(b.to_ascii_lowercase(), good);
        }
        assert!(bad_uuids(good).contains(&"000016a53-c0e-4307-4168-ff8fc74bd819".to_string()));
    }

    #[test]
    fn burst_plans_never_self_transfer() {
        let mut rng = Rng(42);
        for _ in 0..10_000 {
            let n = 20u64;
            let f = rng.below(n) as usize;
            let t = (f + 1 + rng.below(n - 1) as usize) % n as usize;
            assert_ne!(f, t);
            assert!(t < n as usize);
        }
    }
}
