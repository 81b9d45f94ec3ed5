//! The database side: the verifier's connection, `pg_stat_statements` snapshots and deltas, and
//! the statement shapes of contract/README.md.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// What kind of statement a `pg_stat_statements` entry is, by the contract's SQL table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
/// Serialized as its [`Shape::label`].
pub enum Shape {
    /// `SELECT id, status, updated_at FROM status WHERE id = $1`
    #[serde(rename = "status-by-id")]
    StatusGetOne,
    /// `SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id`
    #[serde(rename = "status-by-ids")]
    StatusGetMany,
    /// `INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING …`
    #[serde(rename = "status-insert")]
    StatusInsert,
    /// `UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING …`
    #[serde(rename = "status-update")]
    StatusUpdate,
    /// `INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance`
    #[serde(rename = "client-insert")]
    ClientInsert,
    /// `SELECT id, balance FROM clients WHERE id = $1`
    #[serde(rename = "client-balance")]
    ClientBalance,
    /// `SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE`
    #[serde(rename = "transfer-lock")]
    TransferLock,
    /// `UPDATE clients SET balance = balance + CASE … END WHERE id IN ($1, $2)`
    #[serde(rename = "transfer-move")]
    TransferMove,
    /// `INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)`
    #[serde(rename = "transfer-log")]
    TransferLog,
    /// `SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1`
    #[serde(rename = "orders")]
    Orders,
    /// `SELECT json_build_object('ok', true, 'message', 'OK')::text`
    #[serde(rename = "db-ping")]
    DbPing,
    /// `SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text`
    #[serde(rename = "db-time")]
    DbTime,
    /// Touches a benchmark table (or is ping SQL) but is none of the above: never expected.
    #[serde(rename = "unexpected")]
    OtherBenchmark,
    /// Touches no benchmark table (pool checks, `BEGIN`, `SET`, catalog lookups): not counted.
    #[serde(rename = "not-counted")]
    Unrelated,
}

impl Shape {
    /// Statements the conformance suite counts (everything but [`Shape::Unrelated`]).
    pub fn counted(self) -> bool {
        self != Shape::Unrelated
    }

    /// The contract's text of this statement (API.md), if it is one of the contract's.
    pub fn contract_sql(self) -> Option<&'static str> {
        Some(match self {
            Shape::StatusGetOne => "SELECT id, status, updated_at FROM status WHERE id = $1",
            Shape::StatusGetMany => "SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id",
            Shape::StatusInsert => {
                "INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at"
            }
            Shape::StatusUpdate => "UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at",
            Shape::ClientInsert => "INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance",
            Shape::ClientBalance => "SELECT id, balance FROM clients WHERE id = $1",
            Shape::TransferLock => "SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE",
            Shape::TransferMove => {
                "UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)"
            }
            Shape::TransferLog => "INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)",
            Shape::Orders => "SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1",
            Shape::DbPing => "SELECT json_build_object('ok', true, 'message', 'OK')::text",
            Shape::DbTime => "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text",
            Shape::OtherBenchmark | Shape::Unrelated => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            Shape::StatusGetOne => "status-by-id",
            Shape::StatusGetMany => "status-by-ids",
            Shape::StatusInsert => "status-insert",
            Shape::StatusUpdate => "status-update",
            Shape::ClientInsert => "client-insert",
            Shape::ClientBalance => "client-balance",
            Shape::TransferLock => "transfer-lock",
            Shape::TransferMove => "transfer-move",
            Shape::TransferLog => "transfer-log",
            Shape::Orders => "orders",
            Shape::DbPing => "db-ping",
            Shape::DbTime => "db-time",
            Shape::OtherBenchmark => "unexpected",
            Shape::Unrelated => "not-counted",
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

const TABLES: [&str; 4] = ["status", "clients", "transfers", "orders"];

/// Identifier-like tokens of a statement, lower-case, with quotes and a `public.` schema removed.
fn tokens(query: &str) -> Vec<String> {
    let q = query.to_ascii_lowercase().replace('"', "");
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in q.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '$' {
            cur.push(ch);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if ch == '.' && out.last().is_some_and(|t| t == "public") {
                out.pop();
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn has_seq(t: &[String], seq: &[&str]) -> bool {
    t.windows(seq.len())
        .any(|w| w.iter().zip(seq).all(|(a, b)| a == b))
}

fn after<'a>(t: &'a [String], word: &str) -> Option<&'a str> {
    t.iter()
        .position(|x| x == word)
        .and_then(|i| t.get(i + 1))
        .map(String::as_str)
}

/// Classifies a statement text (as `pg_stat_statements` shows it) by the contract's shapes.
/// Lenient on spelling (case, whitespace, quoting, `public.`, aliases, `$n` vs `?`, `IN` lists
/// for `ANY`), strict on what the statement does: which table, which operation, which predicate.
pub fn classify(query: &str) -> Shape {
    let t = tokens(query);
    let first = t.first().map(String::as_str).unwrap_or("");
    let mentions_table = t.iter().any(|x| TABLES.contains(&x.as_str()));
    if t.iter().any(|x| x == "json_build_object") {
        if mentions_table || first != "select" {
            return Shape::OtherBenchmark;
        }
        return if t.iter().any(|x| x == "now" || x == "epoch") {
            Shape::DbTime
        } else {
            Shape::DbPing
        };
    }
    let shape = match first {
        "select" => match after(&t, "from") {
            Some("status") if t.iter().any(|x| x == "any") || has_seq(&t, &["id", "in"]) => {
                Shape::StatusGetMany
            }
            Some("status") if t.iter().any(|x| x == "where") => Shape::StatusGetOne,
            Some("clients") if has_seq(&t, &["for", "update"]) => Shape::TransferLock,
            Some("clients") if t.iter().any(|x| x == "where") => Shape::ClientBalance,
            Some("orders") if t.iter().any(|x| x == "limit") => Shape::Orders,
            _ => Shape::OtherBenchmark,
        },
        "insert" => match after(&t, "into") {
            Some("status") => Shape::StatusInsert,
            Some("clients") => Shape::ClientInsert,
            Some("transfers") => Shape::TransferLog,
            _ => Shape::OtherBenchmark,
        },
        "update" => match t.get(1).map(String::as_str) {
            Some("status") => Shape::StatusUpdate,
            Some("clients") => Shape::TransferMove,
            _ => Shape::OtherBenchmark,
        },
        _ => Shape::OtherBenchmark,
    };
    if shape == Shape::OtherBenchmark && !mentions_table {
        Shape::Unrelated
    } else {
        shape
    }
}

/// A statement's text with what API.md allows to differ taken out: case, whitespace, `$n` vs
/// `?` numbering, and the constants `pg_stat_statements` replaces by parameters.
pub fn spelling(query: &str) -> String {
    let mut out = String::new();
    let mut chars = query.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                // a string constant
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
                out.push('?');
            }
            '$' if chars.peek().is_some_and(|c| c.is_ascii_digit()) => {
                while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                    chars.next();
                }
                out.push('?');
            }
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    // no space matters next to punctuation; collapse the rest
    let collapsed = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut tight = String::new();
    let cs: Vec<char> = collapsed.chars().collect();
    for (i, &c) in cs.iter().enumerate() {
        if c == ' ' {
            let prev = cs.get(i.wrapping_sub(1)).copied().unwrap_or(' ');
            let next = cs.get(i + 1).copied().unwrap_or(' ');
            let word = |x: char| x.is_ascii_alphanumeric() || x == '_' || x == '?';
            if !(word(prev) && word(next)) {
                continue;
            }
        }
        tight.push(c);
    }
    tight
        .replace("extract(epoch", "extract(?")
        .replace("true", "?")
        .replace("false", "?")
}

/// One statement seen during a case: the `pg_stat_statements` text and how often it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementSeen {
    /// Normalised text as `pg_stat_statements` shows it.
    pub query: String,
    /// Calls during the case.
    pub calls: u64,
    /// Its shape ([`Shape::label`]); `not-counted` for statements outside the benchmark tables.
    pub shape: Shape,
}

/// Calls per `(userid, queryid)` at one moment, in the stack's database.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: HashMap<(i64, i64), (String, i64)>,
}

/// Query reading one snapshot. Entries with `calls = 0` only hold a normalised text.
const SNAPSHOT_SQL: &str = "select userid::oid::bigint, queryid, query, calls from pg_stat_statements \
     where dbid = (select oid from pg_database where datname = current_database()) and calls > 0 and queryid is not null";

pub async fn snapshot(db: &tokio_postgres::Client) -> Result<Snapshot, String> {
    let rows = db.query(SNAPSHOT_SQL, &[]).await.map_err(|e| {
        format!(
            "cannot read pg_stat_statements ({}): the server needs shared_preload_libraries=pg_stat_statements and \
             the extension in this database (contract/schema.sql creates it)",
            db_error(&e)
        )
    })?;
    let mut entries = HashMap::new();
    for r in rows {
        let user: i64 = r.get(0);
        let qid: i64 = r.get(1);
        let query: String = r.get(2);
        let calls: i64 = r.get(3);
        let e = entries.entry((user, qid)).or_insert((query, 0));
        e.1 += calls;
    }
    Ok(Snapshot { entries })
}

/// What ran between two snapshots, minus the verifier's own `pg_stat_statements` reads.
pub fn delta(before: &Snapshot, after: &Snapshot) -> Vec<StatementSeen> {
    let mut by_text: BTreeMap<String, u64> = BTreeMap::new();
    for (key, (query, calls)) in &after.entries {
        let prev = before.entries.get(key).map(|e| e.1).unwrap_or(0);
        // an entry evicted and re-created starts again from 0
        let d = if *calls >= prev { calls - prev } else { *calls };
        if d > 0 && !query.contains("pg_stat_statements") {
            *by_text.entry(query.clone()).or_default() += d as u64;
        }
    }
    let mut out: Vec<StatementSeen> = by_text
        .into_iter()
        .map(|(query, calls)| StatementSeen {
            shape: classify(&query),
            query,
            calls,
        })
        .collect();
    out.sort_by(|a, b| {
        (!a.shape.counted(), a.shape, &a.query).cmp(&(!b.shape.counted(), b.shape, &b.query))
    });
    out
}

/// Calls per counted shape.
pub fn counts(seen: &[StatementSeen]) -> BTreeMap<Shape, u64> {
    let mut m = BTreeMap::new();
    for s in seen.iter().filter(|s| s.shape.counted()) {
        *m.entry(s.shape).or_default() += s.calls;
    }
    m
}

/// A readable form of a tokio-postgres error (the server's message when there is one).
pub fn db_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.code().code(), d.message()),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_sql_has_the_contract_shapes() {
        let cases = [
            ("SELECT id, status, updated_at FROM status WHERE id = $1", Shape::StatusGetOne),
            ("SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id", Shape::StatusGetMany),
            (
                "INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at",
                Shape::StatusInsert,
            ),
            ("UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at", Shape::StatusUpdate),
            ("INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance", Shape::ClientInsert),
            ("SELECT id, balance FROM clients WHERE id = $1", Shape::ClientBalance),
            ("SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE", Shape::TransferLock),
            (
                "UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)",
                Shape::TransferMove,
            ),
            ("INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)", Shape::TransferLog),
            ("SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1", Shape::Orders),
            // pg_stat_statements replaces the constants
            ("SELECT json_build_object($1, $2, $3, $4)::text", Shape::DbPing),
            ("SELECT json_build_object($1, extract(epoch from now())::integer)::text", Shape::DbTime),
        ];
        for (q, want) in cases {
            assert_eq!(classify(q), want, "{q}");
        }
    }

    #[test]
    fn spelling_is_lenient_and_work_is_not() {
        // JDBC numbering, quoting, schema, aliases, IN lists
        assert_eq!(
            classify(
                "select s.id, s.status, s.updated_at from \"public\".\"status\" s where s.id = $1"
            ),
            Shape::StatusGetOne
        );
        assert_eq!(
            classify("SELECT id,status,updated_at FROM status WHERE id IN ($1,$2,$3) ORDER BY id"),
            Shape::StatusGetMany
        );
        assert_eq!(classify("UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$2::bigint ELSE $3::bigint END WHERE id IN ($4, $5)"), Shape::TransferMove);
        // other work on benchmark tables is never expected
        assert_eq!(
            classify("SELECT count(*) FROM status"),
            Shape::OtherBenchmark
        );
        assert_eq!(
            classify("DELETE FROM transfers WHERE id = $1"),
            Shape::OtherBenchmark
        );
        assert_eq!(classify("SELECT * FROM orders"), Shape::OtherBenchmark);
        assert_eq!(
            classify("select json_build_object($1, id) from orders"),
            Shape::OtherBenchmark
        );
        // not the benchmark's business
        for q in [
            "BEGIN",
            "COMMIT",
            "SELECT $1",
            "SET extra_float_digits = 3",
            "select typname from pg_type where oid = $1",
            "ROLLBACK",
        ] {
            assert_eq!(classify(q), Shape::Unrelated, "{q}");
        }
    }

    #[test]
    fn spelling_ignores_what_the_contract_allows() {
        for shape in [
            Shape::StatusGetOne,
            Shape::TransferMove,
            Shape::DbPing,
            Shape::DbTime,
            Shape::Orders,
        ] {
            let c = shape.contract_sql().unwrap();
            assert_eq!(spelling(c), spelling(&c.to_uppercase()), "{c}");
        }
        // what pg_stat_statements shows for go-pgx / R2DBC and for JDBC
        assert_eq!(
            spelling("SELECT json_build_object($1, $2, $3, $4)::text"),
            spelling(Shape::DbPing.contract_sql().unwrap())
        );
        assert_eq!(
            spelling("SELECT json_build_object($1, extract($2 from now())::integer)::text"),
            spelling(Shape::DbTime.contract_sql().unwrap())
        );
        assert_eq!(
            spelling("UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$2::bigint ELSE $3::bigint END WHERE id IN ($4, $5)"),
            spelling(Shape::TransferMove.contract_sql().unwrap())
        );
        assert_eq!(
            spelling("select id,status,updated_at\n  from status where id=?"),
            spelling(Shape::StatusGetOne.contract_sql().unwrap())
        );
        // an ORM's aliases are a different spelling (reported, not failed)
        assert_ne!(
            spelling(
                "select s1_0.id, s1_0.status, s1_0.updated_at from status s1_0 where s1_0.id = $1"
            ),
            spelling(Shape::StatusGetOne.contract_sql().unwrap())
        );
    }

    #[test]
    fn shapes_serialize_as_their_labels() {
        for shape in [
            Shape::StatusGetOne,
            Shape::TransferLog,
            Shape::OtherBenchmark,
            Shape::Unrelated,
            Shape::DbTime,
        ] {
            let json = serde_json::to_string(&shape).unwrap();
            assert_eq!(json, format!("\"{}\"", shape.label()));
            assert_eq!(serde_json::from_str::<Shape>(&json).unwrap(), shape);
        }
    }

    #[test]
    fn deltas() {
        let mut a = Snapshot::default();
        a.entries.insert(
            (1, 10),
            (
                "SELECT id, status, updated_at FROM status WHERE id = $1".into(),
                5,
            ),
        );
        a.entries.insert((1, 11), ("BEGIN".into(), 2));
        let mut b = a.clone();
        b.entries.get_mut(&(1, 10)).unwrap().1 = 6;
        b.entries.insert(
            (2, 10),
            (
                "SELECT id, status, updated_at FROM status WHERE id = $1".into(),
                1,
            ),
        );
        b.entries
            .insert((2, 12), ("select userid from pg_stat_statements".into(), 1));
        b.entries.insert((2, 13), ("COMMIT".into(), 1));
        let d = delta(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!((d[0].shape, d[0].calls), (Shape::StatusGetOne, 2));
        assert_eq!((d[1].shape, d[1].calls), (Shape::Unrelated, 1));
        assert_eq!(
            counts(&d).into_iter().collect::<Vec<_>>(),
            vec![(Shape::StatusGetOne, 2)]
        );
    }
}
