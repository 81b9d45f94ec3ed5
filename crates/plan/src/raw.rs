//! The TOML shape of a plan and its conversion into the validated model, with located errors.

use crate::model::*;
use crate::template::Template;
use crate::{line_of, parse_duration, PlanError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

type S<T> = Spanned<T>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: S<String>,
    #[serde(default)]
    description: String,
    source: Option<String>,
    #[serde(default)]
    target: RawTarget,
    #[serde(default)]
    load: Option<S<RawLoad>>,
    #[serde(default)]
    warmup: Vec<S<RawStage>>,
    settle: Option<S<RawSettle>>,
    #[serde(default)]
    stages: Vec<S<RawStage>>,
    #[serde(default)]
    data: BTreeMap<String, S<RawData>>,
    #[serde(default)]
    requests: Vec<S<RawRequest>>,
    slo: Option<S<BTreeMap<String, S<toml::Value>>>>,
    #[serde(default)]
    analysis: Option<S<RawAnalysis>>,
    #[serde(default)]
    // not Spanned: `[stand.env]` or `[stand.pgbouncer]` without a `[stand]` header makes `stand`
    // an implicit table, which toml's Spanned cannot take
    stand: Option<RawStand>,
    #[serde(default)]
    search: Option<S<RawSearch>>,
    cost: Option<S<RawCost>>,
    quick_scale: Option<S<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    url: Option<S<String>>,
    #[serde(default)]
    stacks: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    arrivals: Option<S<String>>,
    keep_alive: Option<bool>,
    max_connections: Option<S<i64>>,
    timeout: Option<S<String>>,
    seed: Option<u64>,
    max_backlog: Option<S<i64>>,
    repetitions: Option<S<i64>>,
    threads: Option<S<i64>>,
    http2_streams: Option<S<i64>>,
    tick: Option<S<String>>,
    realtime: Option<bool>,
    io: Option<S<String>>,
    stop_at_failure: Option<S<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStage {
    ramp: Option<RawRamp>,
    hold: Option<f64>,
    connections: Option<i64>,
    duration: Option<S<String>>,
    requests: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRamp {
    from: f64,
    to: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawData {
    csv: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: String,
    weight: Option<S<i64>>,
    method: Option<S<String>>,
    path: S<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    #[serde(default)]
    expect: Vec<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    currency: Option<String>,
    cpu_hour: S<f64>,
    gb_hour: S<f64>,
    services: Option<S<i64>>,
    min_instances: Option<S<i64>>,
    reference: Option<S<String>>,
    target_rps: Option<S<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSettle {
    step: Option<S<String>>,
    steps: Option<S<i64>>,
    within: Option<S<f64>>,
    max: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAnalysis {
    trim_head: Option<S<String>>,
    trim_tail: Option<S<String>>,
    min_window: Option<S<String>>,
    stability: Option<S<f64>>,
    working_load: Option<S<f64>>,
    max_schedule_lag: Option<S<String>>,
    max_generator_cpu: Option<S<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawStand {
    postgres_version: Option<S<i64>>,
    #[serde(default)]
    postgres_settings: BTreeMap<String, S<toml::Value>>,
    seed: Option<u64>,
    pool_size: Option<S<i64>>,
    workers: Option<S<i64>>,
    cpus: Option<S<f64>>,
    memory_mb: Option<S<i64>>,
    memory_uncapped: Option<S<bool>>,
    postgres_cpus: Option<S<f64>>,
    cooldown: Option<S<String>>,
    verify: Option<bool>,
    on_part_exit: Option<S<String>>,
    placement: Option<S<String>>,
    tls: Option<bool>,
    #[serde(default)]
    env: BTreeMap<String, S<toml::Value>>,
    pgbouncer: Option<S<RawPgBouncer>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPgBouncer {
    pool_mode: Option<S<String>>,
    default_pool_size: Option<S<i64>>,
    max_client_conn: Option<S<i64>>,
    max_prepared_statements: Option<S<i64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    start_rate: Option<S<f64>>,
    growth: Option<S<f64>>,
    tolerance: Option<S<f64>>,
    probe: Option<S<String>>,
    probe_trim: Option<S<String>>,
    confirm: Option<S<String>>,
    drain: Option<S<String>>,
    repeat: Option<S<i64>>,
    max_time: Option<S<String>>,
    max_rate: Option<S<f64>>,
    check: Option<S<String>>,
    check_rate: Option<S<f64>>,
    recovery_max: Option<S<String>>,
    max_probe: Option<S<String>>,
}

/// Source 000's PostgreSQL settings (the stand's default).
pub fn default_postgres_settings() -> BTreeMap<String, String> {
    [
        ("max_connections", "300"),
        ("shared_buffers", "512MB"),
        ("work_mem", "8MB"),
        ("effective_cache_size", "1536MB"),
        ("maintenance_work_mem", "128MB"),
        ("synchronous_commit", "on"),
        ("shared_preload_libraries", "pg_stat_statements"),
        ("track_activity_query_size", "32768"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

struct Ctx<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        field: impl Into<String>,
        msg: impl Into<String>,
    ) -> PlanError {
        PlanError {
            file: self.file.to_path_buf(),
            line: span.map(|s| line_of(self.text, s.start)),
            field: field.into(),
            message: msg.into(),
        }
    }
    fn dur(
        &self,
        v: &Option<S<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, PlanError> {
        match v {
            None => Ok(default),
            Some(s) => parse_duration(s.get_ref()).map_err(|m| self.err(Some(s.span()), field, m)),
        }
    }
    fn pos_dur(
        &self,
        v: &Option<S<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, PlanError> {
        let d = self.dur(v, field, default)?;
        if d.is_zero() {
            return Err(self.err(
                v.as_ref().map(|s| s.span()),
                field,
                "must be longer than zero",
            ));
        }
        Ok(d)
    }
    fn frac(
        &self,
        v: &Option<S<f64>>,
        field: &str,
        default: f64,
        lo: f64,
        hi: f64,
    ) -> Result<f64, PlanError> {
        match v {
            None => Ok(default),
            Some(s) if (lo..=hi).contains(s.get_ref()) => Ok(*s.get_ref()),
            Some(s) => Err(self.err(
                Some(s.span()),
                field,
                format!("must be between {lo} and {hi}"),
            )),
        }
    }
    fn int(
        &self,
        v: &Option<S<i64>>,
        field: &str,
        lo: i64,
        hi: i64,
    ) -> Result<Option<i64>, PlanError> {
        match v {
            None => Ok(None),
            Some(s) if (lo..=hi).contains(s.get_ref()) => Ok(Some(*s.get_ref())),
            Some(s) => Err(self.err(
                Some(s.span()),
                field,
                format!("must be an integer in {lo}..={hi}"),
            )),
        }
    }
}

pub(crate) fn parse(text: &str, file: &Path) -> Result<Plan, PlanError> {
    let cx = Ctx { text, file };
    let raw: RawPlan = toml::from_str(text).map_err(|e| {
        // toml leaves the message empty for some syntax errors (`-=`: found by the property
        // tests); its own rendering then still says what it expected
        let msg = match e.message().trim() {
            "" => {
                let shown = e.to_string();
                let first = shown.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                if first.trim().is_empty() {
                    "not valid TOML here".to_string()
                } else {
                    format!("not valid TOML: {}", first.trim())
                }
            }
            m => m.to_string(),
        };
        cx.err(e.span(), "", msg)
    })?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();

    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(cx.err(
            Some(raw.name.span()),
            "name",
            "must be non-empty letters, digits, `-`, `_` or `.`",
        ));
    }

    // load
    let rl = raw.load.as_ref().map(|s| s.get_ref());
    let default_load = RawLoad::default();
    let rl = rl.unwrap_or(&default_load);
    let arrivals = match rl
        .arrivals
        .as_ref()
        .map(|s| (s.get_ref().as_str(), s.span()))
    {
        None | Some(("uniform", _)) => Arrivals::Uniform,
        Some(("poisson", _)) => Arrivals::Poisson,
        Some((other, span)) => {
            return Err(cx.err(
                Some(span),
                "load.arrivals",
                format!("`{other}` is not an arrival process: use \"uniform\" or \"poisson\""),
            ))
        }
    };
    let max_connections = cx
        .int(&rl.max_connections, "load.max_connections", 1, 1_000_000)?
        .unwrap_or(10_000) as usize;
    let max_backlog = cx
        .int(&rl.max_backlog, "load.max_backlog", 1, 100_000_000)?
        .unwrap_or(1_000_000) as usize;
    let repetitions = cx
        .int(&rl.repetitions, "load.repetitions", 1, 1000)?
        .unwrap_or(1) as u32;
    let timeout = cx.pos_dur(&rl.timeout, "load.timeout", Duration::from_secs(10))?;
    let threads = cx.int(&rl.threads, "load.threads", 1, 256)?.unwrap_or(1) as usize;
    let http2_streams = cx
        .int(&rl.http2_streams, "load.http2_streams", 1, 100_000)?
        .map(|n| n as usize);
    let io = match &rl.io {
        None => IoBackend::Auto,
        Some(v) => {
            IoBackend::parse(v.get_ref()).map_err(|m| cx.err(Some(v.span()), "load.io", m))?
        }
    };
    let tick = match &rl.tick {
        None => None,
        Some(t) => {
            let d = cx.pos_dur(&rl.tick, "load.tick", Duration::ZERO)?;
            let refuse = |why: &str| {
                Err(cx.err(
                    Some(t.span()),
                    "load.tick",
                    format!("the ticked engine runs over HTTP/1.1 with keep-alive, not {why}: remove `tick` or {why}"),
                ))
            };
            if http2_streams.is_some() {
                return refuse("http2_streams");
            }
            if rl.keep_alive == Some(false) {
                return refuse("keep_alive = false");
            }
            if d > Duration::from_millis(100) {
                return Err(cx.err(
                    Some(t.span()),
                    "load.tick",
                    "at most 100ms: sends leave at the tick nearest their intended time, up to half a tick early or late",
                ));
            }
            Some(d)
        }
    };

    // stages
    let conv_stages = |list: &Vec<S<RawStage>>, what: &str| -> Result<Vec<Stage>, PlanError> {
        list.iter()
            .enumerate()
            .map(|(i, s)| {
                let f = format!("{what}[{i}]");
                let sp = Some(s.span());
                let r = s.get_ref();
                let kinds = r.ramp.is_some() as u8 + r.hold.is_some() as u8 + r.connections.is_some() as u8;
                if kinds != 1 {
                    return Err(cx.err(sp.clone(), f, "a stage has exactly one of `ramp = { from, to }`, `hold = RATE` or `connections = N`"));
                }
                let dur = match &r.duration {
                    Some(d) => Some(parse_duration(d.get_ref()).map_err(|m| cx.err(Some(d.span()), format!("{f}.duration"), m))?),
                    None => None,
                };
                let rate_ok = |v: f64| v.is_finite() && (0.0..=10_000_000.0).contains(&v);
                if let Some(c) = r.connections {
                    if !(1..=100_000).contains(&c) {
                        return Err(cx.err(sp.clone(), format!("{f}.connections"), "must be an integer in 1..=100000"));
                    }
                    if dur.is_none() && r.requests.is_none() {
                        return Err(cx.err(sp.clone(), f, "a closed stage needs `duration` or `requests`"));
                    }
                    if let Some(n) = r.requests {
                        if n < 1 {
                            return Err(cx.err(sp.clone(), format!("{f}.requests"), "must be at least 1"));
                        }
                    }
                    return Ok(Stage::Closed { connections: c as usize, duration: dur, requests: r.requests.map(|n| n as u64) });
                }
                if r.requests.is_some() {
                    return Err(cx.err(sp.clone(), format!("{f}.requests"), "only closed stages (`connections = N`) take a request count"));
                }
                let duration = dur.filter(|d| !d.is_zero()).ok_or_else(|| cx.err(sp.clone(), format!("{f}.duration"), "ramp and hold stages need a duration longer than zero"))?;
                if let Some(rm) = &r.ramp {
                    if !rate_ok(rm.from) || !rate_ok(rm.to) {
                        return Err(cx.err(sp.clone(), format!("{f}.ramp"), "rates must be between 0 and 10,000,000 RPS"));
                    }
                    Ok(Stage::Ramp { from: rm.from, to: rm.to, duration })
                } else {
                    let rate = r.hold.unwrap();
                    if !rate_ok(rate) || rate <= 0.0 {
                        return Err(cx.err(sp.clone(), format!("{f}.hold"), "rate must be above 0 and at most 10,000,000 RPS"));
                    }
                    Ok(Stage::Hold { rate, duration })
                }
            })
            .collect()
    };
    let warmup = conv_stages(&raw.warmup, "warmup")?;
    let stages = conv_stages(&raw.stages, "stages")?;
    let all: Vec<&Stage> = warmup.iter().chain(&stages).collect();
    let closed = all.iter().any(|s| matches!(s, Stage::Closed { .. }));
    let open = all.iter().any(|s| !matches!(s, Stage::Closed { .. }));
    if closed && open {
        let sp = raw.stages.first().map(|s| s.span());
        return Err(cx.err(
            sp.clone(),
            "stages",
            "a plan is either open-model (ramp/hold) or closed-model (connections), not both",
        ));
    }
    let model = if closed { Model::Closed } else { Model::Open };
    // repetitions are passes over a closed model's levels; an open model's shelves are not
    // repeated, and a silently ignored setting would promise intervals the run never gives
    if model == Model::Open && repetitions > 1 {
        return Err(cx.err(
            rl.repetitions.as_ref().map(|r| r.span()),
            "load.repetitions",
            "repeats a closed model's levels (connections = N stages); an open-model plan runs \
             each shelf once — remove it, or repeat the shelves as stages, or use `ceiling search \
             --repeat N`",
        ));
    }

    // a stepped profile continued "until a shelf fails": stopping inside a pass over a closed
    // model's levels would leave the later passes' levels unmeasured, not judged
    let stop_at_failure = match &rl.stop_at_failure {
        Some(v) if *v.get_ref() && model == Model::Closed && repetitions > 1 => {
            return Err(cx.err(
                Some(v.span()),
                "load.stop_at_failure",
                "stops the run after the first failed shelf, which would cut a closed model's \
                 repeated passes short: use it with one pass (no load.repetitions) or an \
                 open-model profile",
            ))
        }
        Some(v) => *v.get_ref(),
        None => false,
    };

    // settling: the last warm-up stage repeated until the throughput stops moving
    let settle =
        match &raw.settle {
            None => None,
            Some(rs) => {
                let sp = Some(rs.span());
                let r = rs.get_ref();
                if model == Model::Open {
                    return Err(cx.err(
                        sp,
                        "settle",
                        "settles a closed model's warm-up (its throughput is what warms up); an \
                     open model's rate is fixed — lengthen its [[warmup]] instead",
                    ));
                }
                match warmup.last() {
                    Some(Stage::Closed {
                        duration: Some(_), ..
                    }) => {}
                    _ => return Err(cx.err(
                        sp,
                        "settle",
                        "repeats the last [[warmup]] stage, which must exist and have a duration \
                         (`connections = N`, `duration = \"30s\"`)",
                    )),
                }
                let step = cx.pos_dur(&r.step, "settle.step", Duration::from_secs(10))?;
                let max = cx.pos_dur(&r.max, "settle.max", Duration::from_secs(300))?;
                if max < step {
                    return Err(cx.err(
                        r.max.as_ref().map(|m| m.span()),
                        "settle.max",
                        "must be at least one step long",
                    ));
                }
                Some(SettleSettings {
                    step,
                    steps: cx.int(&r.steps, "settle.steps", 2, 100)?.unwrap_or(3) as u32,
                    within: cx.frac(&r.within, "settle.within", 0.05, 0.001, 0.5)?,
                    max,
                })
            }
        };

    // cost
    let cost = match &raw.cost {
        None => None,
        Some(rc) => {
            let sp = Some(rc.span());
            let c = rc.get_ref();
            for (v, f) in [(&c.cpu_hour, "cost.cpu_hour"), (&c.gb_hour, "cost.gb_hour")] {
                let x = *v.get_ref();
                if !(x.is_finite() && (0.0..=1e9).contains(&x)) {
                    return Err(cx.err(Some(v.span()), f, "must be a price between 0 and 1e9"));
                }
            }
            let reference = c.reference.as_ref().map(|r| r.get_ref().clone());
            if let Some(r) = &c.reference {
                if !raw.target.stacks.is_empty() && !raw.target.stacks.contains(r.get_ref()) {
                    return Err(cx.err(
                        Some(r.span()),
                        "cost.reference",
                        format!(
                            "`{}` is not one of the plan's stacks ({})",
                            r.get_ref(),
                            raw.target.stacks.join(", ")
                        ),
                    ));
                }
            }
            let target_rps = match &c.target_rps {
                Some(t) if !(t.get_ref().is_finite() && *t.get_ref() > 0.0) => {
                    return Err(cx.err(Some(t.span()), "cost.target_rps", "must be above 0"))
                }
                t => t.as_ref().map(|t| *t.get_ref()),
            };
            if reference.is_some() == target_rps.is_some() {
                return Err(cx.err(
                    sp,
                    "cost",
                    "needs exactly one of `reference` (a stack: the load it serves with \
                     `min_instances` instances) and `target_rps` (the load itself)",
                ));
            }
            Some(CostSettings {
                currency: c.currency.clone().unwrap_or_else(|| "USD".into()),
                cpu_hour: *c.cpu_hour.get_ref(),
                gb_hour: *c.gb_hour.get_ref(),
                services: cx
                    .int(&c.services, "cost.services", 1, 100_000)?
                    .unwrap_or(1) as u32,
                min_instances: cx
                    .int(&c.min_instances, "cost.min_instances", 1, 10_000)?
                    .unwrap_or(1) as u32,
                reference,
                target_rps,
            })
        }
    };

    // data
    let mut data = BTreeMap::new();
    for (k, v) in &raw.data {
        let csv = v.get_ref().csv.trim();
        if csv.is_empty() {
            return Err(cx.err(Some(v.span()), format!("data.{k}.csv"), "needs a file path"));
        }
        let (path, needs_stand) = match csv.strip_prefix("@data/") {
            Some(rest) => (PathBuf::from(rest), true),
            None => (dir.join(csv), false),
        };
        data.insert(k.clone(), DataSource { path, needs_stand });
    }

    // requests
    if raw.requests.is_empty() {
        return Err(cx.err(
            None,
            "requests",
            "a plan needs at least one `[[requests]]` entry",
        ));
    }
    let mut requests = Vec::new();
    for (i, r) in raw.requests.iter().enumerate() {
        let sp = Some(r.span());
        let q = r.get_ref();
        let f = format!("requests[{i}] ({})", q.name);
        if q.name.is_empty() || q.name.contains(char::is_whitespace) {
            return Err(cx.err(
                sp.clone(),
                format!("requests[{i}].name"),
                "must be non-empty, without spaces (it is a histogram tag)",
            ));
        }
        if requests.iter().any(|x: &RequestSpec| x.name == q.name) {
            return Err(cx.err(
                sp.clone(),
                format!("requests[{i}].name"),
                format!("`{}` is used twice", q.name),
            ));
        }
        let weight = cx
            .int(&q.weight, &format!("{f}.weight"), 0, 1_000_000)?
            .unwrap_or(1);
        let method = q
            .method
            .as_ref()
            .map(|m| m.get_ref().to_ascii_uppercase())
            .unwrap_or_else(|| "GET".into());
        if !["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"].contains(&method.as_str())
        {
            return Err(cx.err(
                q.method.as_ref().map(|m| m.span()),
                format!("{f}.method"),
                format!("`{method}` is not an HTTP method ceiling sends"),
            ));
        }
        let psp = Some(q.path.span());
        if !q.path.get_ref().starts_with('/') {
            return Err(cx.err(
                psp,
                format!("{f}.path"),
                "must start with `/` (the base URL comes from the target)",
            ));
        }
        let tpl = |s: &str, field: &str| {
            Template::parse(s).map_err(|m| cx.err(sp.clone(), format!("{f}.{field}"), m))
        };
        let path =
            Template::parse(q.path.get_ref()).map_err(|m| cx.err(psp, format!("{f}.path"), m))?;
        let mut headers = Vec::new();
        for (k, v) in &q.headers {
            if k.is_empty() || k.contains([':', '\r', '\n', ' ']) {
                return Err(cx.err(
                    sp.clone(),
                    format!("{f}.headers"),
                    format!("`{k}` is not a header name"),
                ));
            }
            headers.push((k.clone(), tpl(v, &format!("headers.{k}"))?));
        }
        let body = q.body.as_deref().map(|b| tpl(b, "body")).transpose()?;
        let mut expect = Vec::new();
        for s in &q.expect {
            if !(100..=599).contains(s) {
                return Err(cx.err(
                    sp.clone(),
                    format!("{f}.expect"),
                    format!("{s} is not an HTTP status"),
                ));
            }
            expect.push(*s as u16);
        }
        let all_tpls = std::iter::once(&path)
            .chain(headers.iter().map(|(_, t)| t))
            .chain(body.as_ref());
        for t in all_tpls {
            for src in t.sources() {
                if !data.contains_key(src) {
                    return Err(cx.err(sp.clone(), f.clone(), format!("uses data source `{src}`, which is not declared: add `[data.{src}] csv = \"...\"`")));
                }
            }
        }
        requests.push(RequestSpec {
            name: q.name.clone(),
            weight: weight as u32,
            method,
            path,
            headers,
            body,
            expect,
        });
    }
    if requests.iter().all(|r| r.weight == 0) {
        return Err(cx.err(
            raw.requests.first().map(|r| r.span()),
            "requests",
            "at least one request needs a weight above 0",
        ));
    }

    // slo
    let mut slo = Slo {
        limits: vec![PercentileLimit {
            percentile: 99.0,
            limit: Duration::from_millis(350),
        }],
        max_error_rate: 0.01,
        per_request: BTreeMap::new(),
    };
    if let Some(s) = &raw.slo {
        slo.limits.clear();
        for (k, v) in s.get_ref() {
            let sp = Some(v.span());
            if k == "errors" {
                let bad = || {
                    cx.err(
                        sp.clone(),
                        "slo.errors",
                        "write a fraction like 0.01 or a percentage like \"1%\"",
                    )
                };
                slo.max_error_rate = match v.get_ref() {
                    toml::Value::Float(f) if (0.0..=1.0).contains(f) => *f,
                    toml::Value::String(p) => crate::slo::error_percent(p).ok_or_else(bad)?,
                    _ => return Err(bad()),
                };
            } else if k == "requests" {
                let tbl = v.get_ref().as_table().ok_or_else(|| {
                    cx.err(
                        sp.clone(),
                        "slo.requests",
                        "must be a table of request name → { p99 = \"…\" }",
                    )
                })?;
                for (rname, lims) in tbl {
                    if !requests.iter().any(|r| &r.name == rname) {
                        return Err(cx.err(
                            sp.clone(),
                            format!("slo.requests.{rname}"),
                            "is not the name of a request in this plan",
                        ));
                    }
                    let lt = lims.as_table().ok_or_else(|| {
                        cx.err(
                            sp.clone(),
                            format!("slo.requests.{rname}"),
                            "must be a table like { p99 = \"100ms\" }",
                        )
                    })?;
                    let mut out = Vec::new();
                    for (pk, pv) in lt {
                        out.push(pct_limit(
                            &cx,
                            sp.clone(),
                            &format!("slo.requests.{rname}.{pk}"),
                            pk,
                            pv,
                        )?);
                    }
                    slo.per_request.insert(rname.clone(), out);
                }
            } else {
                slo.limits
                    .push(pct_limit(&cx, sp, &format!("slo.{k}"), k, v.get_ref())?);
            }
        }
    }

    // analysis
    let da = RawAnalysis::default();
    let ra = raw.analysis.as_ref().map(|s| s.get_ref()).unwrap_or(&da);
    let analysis = AnalysisSettings {
        trim_head: cx.dur(
            &ra.trim_head,
            "analysis.trim_head",
            Duration::from_secs(120),
        )?,
        trim_tail: cx.dur(&ra.trim_tail, "analysis.trim_tail", Duration::from_secs(30))?,
        min_window: cx.dur(
            &ra.min_window,
            "analysis.min_window",
            Duration::from_secs(600),
        )?,
        stability: cx.frac(&ra.stability, "analysis.stability", 0.05, 0.0, 1.0)?,
        working_load: cx.frac(&ra.working_load, "analysis.working_load", 0.70, 0.0, 1.0)?,
        max_schedule_lag: cx.pos_dur(
            &ra.max_schedule_lag,
            "analysis.max_schedule_lag",
            Duration::from_millis(10),
        )?,
        max_generator_cpu: cx.frac(
            &ra.max_generator_cpu,
            "analysis.max_generator_cpu",
            90.0,
            1.0,
            100.0,
        )?,
    };

    // stand
    let ds = RawStand::default();
    let rs = raw.stand.as_ref().unwrap_or(&ds);
    let mut postgres_settings = default_postgres_settings();
    for (k, v) in &rs.postgres_settings {
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => {
                if *b {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            _ => {
                return Err(cx.err(
                    Some(v.span()),
                    format!("stand.postgres_settings.{k}"),
                    "must be a string, number or boolean",
                ))
            }
        };
        postgres_settings.insert(k.clone(), val);
    }
    let env = stand_env(&cx, &rs.env)?;
    let pgbouncer = rs
        .pgbouncer
        .as_ref()
        .map(|p| pgbouncer_settings(&cx, p))
        .transpose()?;
    let stand = StandSettings {
        env,
        pgbouncer,
        postgres_version: cx
            .int(&rs.postgres_version, "stand.postgres_version", 12, 30)?
            .map(|v| v as u32),
        postgres_settings,
        seed: rs.seed.unwrap_or(1),
        pool_size: cx
            .int(&rs.pool_size, "stand.pool_size", 1, 10_000)?
            .map(|v| v as u32),
        workers: cx
            .int(&rs.workers, "stand.workers", 1, 1024)?
            .map(|v| v as u32),
        cpus: match &rs.cpus {
            Some(c) if !(0.01..=1024.0).contains(c.get_ref()) => {
                return Err(cx.err(
                    Some(c.span()),
                    "stand.cpus",
                    "must be between 0.01 and 1024",
                ))
            }
            c => c.as_ref().map(|c| *c.get_ref()),
        },
        memory_mb: cx
            .int(&rs.memory_mb, "stand.memory_mb", 16, 16_777_216)?
            .map(|v| v as u64),
        memory_uncapped: match (&rs.memory_uncapped, &rs.memory_mb) {
            (Some(u), Some(_)) if *u.get_ref() => {
                return Err(cx.err(
                    Some(u.span()),
                    "stand.memory_uncapped",
                    "contradicts stand.memory_mb: a plan either sizes the stacks' memory or runs them uncapped; remove one",
                ))
            }
            (u, _) => u.as_ref().map(|u| *u.get_ref()).unwrap_or(false),
        },
        postgres_cpus: match &rs.postgres_cpus {
            Some(c) if !(0.01..=1024.0).contains(c.get_ref()) => {
                return Err(cx.err(
                    Some(c.span()),
                    "stand.postgres_cpus",
                    "must be between 0.01 and 1024",
                ))
            }
            c => c.as_ref().map(|c| *c.get_ref()),
        },
        cooldown: cx.dur(&rs.cooldown, "stand.cooldown", Duration::from_secs(30))?,
        verify: rs.verify.unwrap_or(true),
        tls: rs.tls.unwrap_or(false),
        on_part_exit: match rs.on_part_exit.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
            None | Some(("restart", _)) => OnPartExit::Restart,
            Some(("stop", _)) => OnPartExit::Stop,
            Some((other, span)) => {
                return Err(cx.err(
                    Some(span),
                    "stand.on_part_exit",
                    format!("`{other}` is not an action: use \"restart\" (restart PostgreSQL and go on with the next stack) or \"stop\" (end the run)"),
                ))
            }
        },
        placement: match rs.placement.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
            None | Some(("auto", _)) => PlacementMode::Auto,
            Some(("shared", _)) => PlacementMode::Shared,
            Some((other, span)) => {
                return Err(cx.err(
                    Some(span),
                    "stand.placement",
                    format!("`{other}` is not a placement: use \"auto\" (the generator, the stack and PostgreSQL on CPUs of their own where the machine has them) or \"shared\" (every part on every CPU)"),
                ))
            }
        },
    };

    // search
    let dsr = RawSearch::default();
    let rsr = raw.search.as_ref().map(|s| s.get_ref()).unwrap_or(&dsr);
    let search = SearchSettings {
        start_rate: cx.frac(
            &rsr.start_rate,
            "search.start_rate",
            100.0,
            1.0,
            10_000_000.0,
        )?,
        growth: cx.frac(&rsr.growth, "search.growth", 2.0, 1.05, 100.0)?,
        tolerance: cx.frac(&rsr.tolerance, "search.tolerance", 0.05, 0.001, 0.5)?,
        probe: cx.pos_dur(&rsr.probe, "search.probe", Duration::from_secs(60))?,
        probe_trim: cx.dur(
            &rsr.probe_trim,
            "search.probe_trim",
            Duration::from_secs(10),
        )?,
        confirm: cx.dur(&rsr.confirm, "search.confirm", Duration::from_secs(300))?,
        drain: cx.dur(&rsr.drain, "search.drain", Duration::from_secs(5))?,
        repeat: cx.int(&rsr.repeat, "search.repeat", 1, 100)?.unwrap_or(3) as u32,
        max_time: cx.pos_dur(&rsr.max_time, "search.max_time", Duration::from_secs(3600))?,
        max_rate: cx.frac(
            &rsr.max_rate,
            "search.max_rate",
            1_000_000.0,
            1.0,
            10_000_000.0,
        )?,
        check: cx.pos_dur(&rsr.check, "search.check", Duration::from_secs(2))?,
        check_rate: match &rsr.check_rate {
            Some(c) if !(1.0..=1_000_000.0).contains(c.get_ref()) => {
                return Err(cx.err(
                    Some(c.span()),
                    "search.check_rate",
                    "must be between 1 and 1000000",
                ))
            }
            c => c.as_ref().map(|c| *c.get_ref()),
        },
        recovery_max: cx.pos_dur(
            &rsr.recovery_max,
            "search.recovery_max",
            Duration::from_secs(60),
        )?,
        max_probe: match &rsr.max_probe {
            Some(_) => Some(cx.pos_dur(&rsr.max_probe, "search.max_probe", Duration::ZERO)?),
            None => None,
        },
    };
    if search.max_probe.is_some_and(|m| m < search.probe) {
        return Err(cx.err(
            rsr.max_probe.as_ref().map(|s| s.span()),
            "search.max_probe",
            "must be at least search.probe (equal: never lengthen probes)",
        ));
    }
    if search.probe_trim >= search.probe {
        return Err(cx.err(
            rsr.probe_trim.as_ref().map(|s| s.span()),
            "search.probe_trim",
            "must be shorter than search.probe",
        ));
    }

    let quick_scale = cx.frac(&raw.quick_scale, "quick_scale", 0.05, 0.0001, 1.0)?;
    if let Some(u) = &raw.target.url {
        crate::HttpUrl::parse(u.get_ref()).map_err(|m| cx.err(Some(u.span()), "target.url", m))?;
    }

    if let (Some(rc), true) = (&raw.cost, stand.cpus.is_none() || stand.memory_mb.is_none()) {
        return Err(cx.err(
            Some(rc.span()),
            "cost",
            "prices instances of the plan's size: set stand.cpus and stand.memory_mb",
        ));
    }
    Ok(Plan {
        name,
        description: raw.description,
        source: raw.source,
        file: file.to_path_buf(),
        target: Target {
            url: raw.target.url.map(S::into_inner),
            stacks: raw.target.stacks,
        },
        load: LoadSettings {
            model,
            arrivals,
            keep_alive: rl.keep_alive.unwrap_or(true),
            max_connections,
            timeout,
            seed: rl.seed.unwrap_or(1),
            max_backlog,
            repetitions,
            threads,
            http2_streams,
            tick,
            realtime: rl.realtime.unwrap_or(false),
            io,
            stop_at_failure,
        },
        warmup,
        settle,
        stages,
        data,
        requests,
        slo,
        analysis,
        stand,
        search,
        cost,
        quick_scale,
        scaled_by: 1.0,
    })
}

/// `[stand.env]`: variable names as a shell takes them, never the env contract's; values are
/// strings or integers (written as they will be exported).
fn stand_env(
    cx: &Ctx,
    raw: &BTreeMap<String, S<toml::Value>>,
) -> Result<BTreeMap<String, String>, PlanError> {
    let mut env = BTreeMap::new();
    for (k, v) in raw {
        let field = format!("stand.env.{k}");
        let sp = Some(v.span());
        let name_ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(cx.err(
                sp,
                field,
                "is not an environment variable name (letters, digits and `_`, not starting with a digit)",
            ));
        }
        if CONTRACT_ENV.contains(&k.as_str()) {
            return Err(cx.err(
                sp,
                field,
                format!("{k} is set by the stand (the env contract); use stand.pool_size or stand.workers for the pool and workers"),
            ));
        }
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            _ => return Err(cx.err(sp, field, "must be a string (e.g. \"off\") or an integer")),
        };
        if val.contains('\0') {
            return Err(cx.err(sp, field, "must not contain a NUL byte"));
        }
        env.insert(k.clone(), val);
    }
    Ok(env)
}

/// `[stand.pgbouncer]`: `pool_mode` is required (the source contradicts itself on it, so a plan
/// says which it measures); the rest default to the source's `default_pool_size = 50`.
fn pgbouncer_settings(cx: &Ctx, raw: &S<RawPgBouncer>) -> Result<PgBouncerSettings, PlanError> {
    let r = raw.get_ref();
    let pool_mode = match r.pool_mode.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
        Some(("session", _)) => PoolMode::Session,
        Some(("transaction", _)) => PoolMode::Transaction,
        Some(("statement", span)) => {
            return Err(cx.err(
                Some(span),
                "stand.pgbouncer.pool_mode",
                "\"statement\" is not offered: the contract's transfer is a multi-statement transaction; use \"session\" or \"transaction\"",
            ))
        }
        Some((other, span)) => {
            return Err(cx.err(
                Some(span),
                "stand.pgbouncer.pool_mode",
                format!("`{other}` is not a pool mode: use \"session\" or \"transaction\""),
            ))
        }
        None => {
            return Err(cx.err(
                Some(raw.span()),
                "stand.pgbouncer.pool_mode",
                "is required: write pool_mode = \"session\" or \"transaction\"",
            ))
        }
    };
    Ok(PgBouncerSettings {
        pool_mode,
        default_pool_size: cx
            .int(
                &r.default_pool_size,
                "stand.pgbouncer.default_pool_size",
                1,
                10_000,
            )?
            .unwrap_or(50) as u32,
        max_client_conn: cx
            .int(
                &r.max_client_conn,
                "stand.pgbouncer.max_client_conn",
                1,
                100_000,
            )?
            .unwrap_or(1000) as u32,
        max_prepared_statements: cx
            .int(
                &r.max_prepared_statements,
                "stand.pgbouncer.max_prepared_statements",
                0,
                100_000,
            )?
            .map(|v| v as u32),
    })
}

fn pct_limit(
    cx: &Ctx,
    sp: Option<std::ops::Range<usize>>,
    field: &str,
    key: &str,
    v: &toml::Value,
) -> Result<PercentileLimit, PlanError> {
    let p: f64 = crate::slo::percentile_key(key).ok_or_else(|| {
        cx.err(
            sp.clone(),
            field,
            format!("`{key}` is not a percentile key: use p50, p90, p95, p99, p99_9 … or `errors`"),
        )
    })?;
    let s = v.as_str().ok_or_else(|| {
        cx.err(
            sp.clone(),
            field,
            "must be a duration string like \"350ms\"",
        )
    })?;
    let limit = crate::slo::latency_limit(s).map_err(|m| cx.err(sp.clone(), field, m))?;
    Ok(PercentileLimit {
        percentile: p,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use crate::*;
    use std::path::Path;

    const GOOD: &str = r#"
name = "t"
[data.ids]
csv = "@data/status_ids.csv"
[[stages]]
ramp = { from = 0, to = 100 }
duration = "10s"
[[stages]]
hold = 100
duration = "20s"
[[requests]]
name = "get"
weight = 70
path = "/status/${ids.id}"
expect = [200, 404]
[[requests]]
name = "post"
weight = 5
method = "post"
path = "/status"
body = '{"id":"${uuid}","status":${int:0:10}}'
headers = { "Content-Type" = "application/json" }
[slo]
p99 = "350ms"
p99_9 = "1s"
errors = "1%"
"#;

    #[test]
    fn new_stages_bring_their_model_with_them() {
        let mut p = parse_plan(GOOD, Path::new("plans/t.toml")).unwrap();
        assert_eq!(p.load.model, Model::Open);
        p.set_stages(vec![Stage::Closed {
            connections: 8,
            duration: None,
            requests: Some(100),
        }]);
        assert_eq!((p.load.model, p.stages.len()), (Model::Closed, 1));
        p.set_stages(vec![Stage::Hold {
            rate: 5.0,
            duration: std::time::Duration::from_secs(1),
        }]);
        assert_eq!(p.load.model, Model::Open);
        p.set_stages(Vec::new());
        assert_eq!((p.load.model, p.stages.len()), (Model::Open, 0));
    }

    #[test]
    fn a_runs_length_counts_every_repetition_of_a_closed_model_and_the_warmup_once() {
        let open = parse_plan(GOOD, Path::new("plans/t.toml")).unwrap();
        assert_eq!(open.run_duration(), std::time::Duration::from_secs(30));
        let closed = parse_plan(
            "name = \"c\"\n[load]\nrepetitions = 3\n[[warmup]]\nconnections = 10\nduration = \"5s\"\n[[stages]]\nconnections = 100\nduration = \"30s\"\n[[stages]]\nconnections = 200\nduration = \"30s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n",
            Path::new("plans/c.toml"),
        )
        .unwrap();
        assert_eq!(closed.total_duration(), std::time::Duration::from_secs(65));
        assert_eq!(
            closed.run_duration(),
            std::time::Duration::from_secs(5 + 3 * 60)
        );
        // each repetition a start of its own: the warm-up comes with every one
        assert_eq!(
            closed.run_duration_in_rounds(),
            std::time::Duration::from_secs(3 * (5 + 60))
        );
        assert_eq!(open.run_duration_in_rounds(), open.run_duration());
    }

    #[test]
    fn stop_at_failure_is_refused_where_it_would_cut_repeated_passes() {
        let with = |load: &str| {
            GOOD.replacen(
                "name = \"t\"\n",
                &format!("name = \"t\"\n[load]\n{load}\n"),
                1,
            )
        };
        let p = parse_plan(&with("seed = 1"), Path::new("plans/t.toml")).unwrap();
        assert!(!p.load.stop_at_failure);
        let p = parse_plan(&with("stop_at_failure = true"), Path::new("plans/t.toml")).unwrap();
        assert!(p.load.stop_at_failure);
        let closed = |load: &str| {
            format!("name = \"c\"\n[load]\n{load}\n[[stages]]\nconnections = 10\nduration = \"5s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n")
        };
        assert!(
            parse_plan(&closed("stop_at_failure = true"), Path::new("plans/c.toml"))
                .unwrap()
                .load
                .stop_at_failure
        );
        let e = parse_plan(
            &closed("stop_at_failure = true\nrepetitions = 3"),
            Path::new("plans/c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("plans/c.toml:3") && e.contains("load.stop_at_failure"),
            "{e}"
        );
    }

    #[test]
    fn a_tick_is_an_http_1_keep_alive_setting_checked_where_it_is_written() {
        let with = |load: &str| {
            GOOD.replacen(
                "name = \"t\"\n",
                &format!("name = \"t\"\n[load]\n{load}\n"),
                1,
            )
        };
        let p = parse_plan(&with("tick = \"2ms\""), Path::new("plans/t.toml")).unwrap();
        assert_eq!(p.load.tick, Some(std::time::Duration::from_millis(2)));
        assert!(!p.load.realtime);
        let p = parse_plan(&with("realtime = true"), Path::new("plans/t.toml")).unwrap();
        assert!(p.load.realtime);
        assert_eq!(p.load.io, IoBackend::Auto);
        for (text, io) in [
            ("io = \"epoll\"", IoBackend::Epoll),
            ("io = \"io_uring\"", IoBackend::IoUring),
            ("io = \"auto\"", IoBackend::Auto),
        ] {
            let p = parse_plan(
                &with(&format!("tick = \"2ms\"\n{text}")),
                Path::new("plans/t.toml"),
            )
            .unwrap();
            assert_eq!(p.load.io, io, "{text}");
        }
        let e = parse_plan(&with("io = \"kqueue\""), Path::new("plans/t.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plans/t.toml:4")
                && e.contains("load.io")
                && e.contains("auto, epoll or io_uring"),
            "{e}"
        );
        assert_eq!(
            parse_plan(GOOD, Path::new("plans/t.toml"))
                .unwrap()
                .load
                .tick,
            None
        );
        for (load, says) in [
            ("tick = \"2ms\"\nhttp2_streams = 8", "not http2_streams"),
            (
                "tick = \"2ms\"\nkeep_alive = false",
                "not keep_alive = false",
            ),
            ("tick = \"1s\"", "at most 100ms"),
            ("tick = \"0ms\"", "longer than zero"),
        ] {
            let e = parse_plan(&with(load), Path::new("plans/t.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("plans/t.toml:4") && e.contains("load.tick") && e.contains(says),
                "{load}: {e}"
            );
        }
        // the closed model runs on it too (one wake-up per batch of responses)
        let closed = "name = \"c\"\n[load]\ntick = \"2ms\"\n[[stages]]\nconnections = 10\nduration = \"5s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n";
        let p = parse_plan(closed, Path::new("plans/c.toml")).unwrap();
        assert_eq!(p.load.tick, Some(std::time::Duration::from_millis(2)));
    }

    #[test]
    fn parses_a_full_plan() {
        let p = parse_plan(GOOD, Path::new("plans/t.toml")).unwrap();
        assert_eq!(p.model_name(), "open");
        assert_eq!(p.stages.len(), 2);
        assert_eq!(p.requests[1].method, "POST");
        assert_eq!(p.slo.limits.len(), 2);
        assert!((p.slo.max_error_rate - 0.01).abs() < 1e-12);
        assert!(p.data["ids"].needs_stand);
        assert!(p.requests[0].expects(404) && !p.requests[0].expects(500));
        assert!(p.requests[1].expects(201));
    }

    #[test]
    fn memory_uncapped_is_a_choice_that_excludes_a_memory_size() {
        let with = |stand: &str| {
            let text = GOOD.replace(
                "name = \"t\"\n",
                &format!("name = \"t\"\n[stand]\n{stand}\n"),
            );
            parse_plan(&text, Path::new("plans/t.toml"))
        };
        assert!(!with("seed = 1").unwrap().stand.memory_uncapped);
        assert!(
            with("memory_uncapped = true")
                .unwrap()
                .stand
                .memory_uncapped
        );
        assert!(
            !with("memory_uncapped = false\nmemory_mb = 512")
                .unwrap()
                .stand
                .memory_uncapped
        );
        let e = with("memory_mb = 512\nmemory_uncapped = true").unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(
            e.field == "stand.memory_uncapped" && e.message.contains("stand.memory_mb"),
            "{e}"
        );
    }

    #[test]
    fn placement_is_auto_unless_the_plan_shares() {
        let with = |stand: &str| {
            let text = GOOD.replace(
                "name = \"t\"\n",
                &format!("name = \"t\"\n[stand]\n{stand}\n"),
            );
            parse_plan(&text, Path::new("plans/t.toml"))
        };
        assert_eq!(
            with("seed = 1").unwrap().stand.placement,
            PlacementMode::Auto
        );
        assert_eq!(
            with("placement = \"shared\"").unwrap().stand.placement,
            PlacementMode::Shared
        );
        let e = with("seed = 1\nplacement = \"pinned\"").unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(
            e.field == "stand.placement" && e.message.contains("\"shared\""),
            "{e}"
        );
        // TLS is off unless the plan asks
        assert!(!with("seed = 1").unwrap().stand.tls);
        assert!(with("tls = true").unwrap().stand.tls);
        assert!(with("tls = \"yes\"").is_err());
    }

    #[test]
    fn repetitions_are_refused_for_an_open_model() {
        let with = |n: u32| {
            let text = GOOD.replace(
                "name = \"t\"\n",
                &format!("name = \"t\"\n[load]\nrepetitions = {n}\n"),
            );
            parse_plan(&text, Path::new("plans/t.toml"))
        };
        let e = with(3).unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
        assert!(
            e.field == "load.repetitions" && e.message.contains("closed model"),
            "{e}"
        );
        assert!(with(1).is_ok());
    }

    #[test]
    fn settle_repeats_a_closed_warm_up_and_is_refused_elsewhere() {
        const CLOSED: &str = r#"
name = "c"
[[warmup]]
connections = 50
duration = "30s"
[settle]
step = "5s"
within = 0.03
max = "2m"
[[stages]]
connections = 4
duration = "10s"
[[requests]]
name = "get"
path = "/x"
"#;
        let p = parse_plan(CLOSED, Path::new("c.toml")).unwrap();
        let s = p.settle.clone().expect("settle parsed");
        assert_eq!(s.step, std::time::Duration::from_secs(5));
        assert_eq!((s.steps, s.within), (3, 0.03));
        assert_eq!(s.max, std::time::Duration::from_secs(120));
        // --quick leaves it alone, like the warm-up
        assert_eq!(p.clone().scaled(0.05).settle, Some(s));
        // an open model: refused, at the table's line
        let open = GOOD.replace("[slo]", "[settle]\nstep = \"5s\"\n[slo]");
        let e = parse_plan(&open, Path::new("o.toml")).unwrap_err();
        assert!(
            e.field == "settle" && e.message.contains("closed model"),
            "{e}"
        );
        assert_eq!(e.line, Some(23), "{e}");
        // nothing to repeat
        let bare = CLOSED.replace("[[warmup]]\nconnections = 50\nduration = \"30s\"\n", "");
        let e = parse_plan(&bare, Path::new("c.toml")).unwrap_err();
        assert!(e.message.contains("last [[warmup]] stage"), "{e}");
        // a limit shorter than one step, and one step compared
        let e = parse_plan(
            &CLOSED.replace("max = \"2m\"", "max = \"1s\""),
            Path::new("c.toml"),
        )
        .unwrap_err();
        assert_eq!(e.field, "settle.max", "{e}");
        let e = parse_plan(
            &CLOSED.replace("within = 0.03", "steps = 1"),
            Path::new("c.toml"),
        )
        .unwrap_err();
        assert_eq!(e.field, "settle.steps", "{e}");
    }

    #[test]
    fn cost_needs_one_target_and_the_plans_instance_size() {
        let with = |cost: &str, stand: &str| {
            let text = GOOD.replace("[slo]", &format!("{stand}\n{cost}\n[slo]"));
            parse_plan(&text, Path::new("c.toml"))
        };
        let sized = "[stand]\ncpus = 1.0\nmemory_mb = 1024";
        let p = with(
            "[cost]\ncurrency = \"RUB\"\ncpu_hour = 1.12\ngb_hour = 0.39\nservices = 10\nmin_instances = 3\ntarget_rps = 5000",
            sized,
        )
        .unwrap();
        let c = p.cost.unwrap();
        assert_eq!(
            (c.services, c.min_instances, c.target_rps),
            (10, 3, Some(5000.0))
        );
        assert_eq!(c.currency, "RUB");
        // neither target, and both
        let e = with("[cost]\ncpu_hour = 1\ngb_hour = 1", sized).unwrap_err();
        assert!(
            e.field == "cost" && e.message.contains("exactly one"),
            "{e}"
        );
        let e = with(
            "[cost]\ncpu_hour = 1\ngb_hour = 1\ntarget_rps = 10\nreference = \"x\"",
            sized,
        )
        .unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
        // a price below zero, a plan without an instance size
        let e = with("[cost]\ncpu_hour = -1\ngb_hour = 1\ntarget_rps = 10", sized).unwrap_err();
        assert_eq!(e.field, "cost.cpu_hour", "{e}");
        let e = with("[cost]\ncpu_hour = 1\ngb_hour = 1\ntarget_rps = 10", "").unwrap_err();
        assert!(e.message.contains("stand.cpus and stand.memory_mb"), "{e}");
        // a reference outside the plan's stacks
        let text = GOOD.replace(
            "name = \"t\"\n",
            "name = \"t\"\n[target]\nstacks = [\"a\", \"b\"]\n",
        );
        let text = text.replace(
            "[slo]",
            &format!("{sized}\n[cost]\ncpu_hour = 1\ngb_hour = 1\nreference = \"c\"\n[slo]"),
        );
        let e = parse_plan(&text, Path::new("c.toml")).unwrap_err();
        assert!(
            e.field == "cost.reference" && e.message.contains("a, b"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad = GOOD.replace("weight = 70", "weight = -3");
        let e = parse_plan(&bad, Path::new("plans/t.toml")).unwrap_err();
        assert_eq!(e.line, Some(13), "{e}");
        assert!(
            e.to_string()
                .starts_with("plans/t.toml:13: requests[0] (get).weight"),
            "{e}"
        );

        let bad = GOOD.replace("duration = \"20s\"", "duration = \"twenty\"");
        let e = parse_plan(&bad, Path::new("p.toml")).unwrap_err();
        assert_eq!(e.line, Some(10));
        assert!(e.field.contains("stages[1].duration"));

        let bad = GOOD.replace("[slo]", "[slo]\ntypo_key = 3");
        let e = parse_plan(&bad, Path::new("p.toml")).unwrap_err();
        assert!(e.message.contains("percentile"), "{e}");

        let bad = GOOD.replace("${ids.id}", "${idz.id}");
        let e = parse_plan(&bad, Path::new("p.toml")).unwrap_err();
        assert!(e.message.contains("idz"), "{e}");

        let bad = GOOD.replace("name = \"t\"", "name = \"t\"\nbogus = 1");
        let e = parse_plan(&bad, Path::new("p.toml")).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("bogus"), "{e}");

        let bad = GOOD.replace(
            "name = \"t\"",
            "name = \"t\"\n[target]\nurl = \"ftp://127.0.0.1:8443\"",
        );
        let e = parse_plan(&bad, Path::new("p.toml")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(4), "target.url"), "{e}");
        assert!(e.message.contains("scheme `ftp`"), "{e}");
    }

    #[test]
    fn rejects_mixed_models_and_scales_durations() {
        let bad = GOOD.replace("hold = 100", "connections = 100");
        assert!(parse_plan(&bad, Path::new("p.toml"))
            .unwrap_err()
            .message
            .contains("not both"));
        let p = parse_plan(GOOD, Path::new("p.toml")).unwrap();
        let q = p.scaled(0.5);
        assert_eq!(q.stages[1].duration().unwrap().as_secs(), 10);
        assert_eq!(q.analysis.trim_head.as_secs(), 60);
        assert!((q.scaled_by - 0.5).abs() < 1e-12);
    }

    #[test]
    fn stand_env_and_pgbouncer_parse() {
        let text = format!(
            "{GOOD}\n[load]\nthreads = 4\n[stand]\npool_size = 60\n[stand.env]\nDB_PREPARED = \"off\"\nGOGC = 200\n[stand.pgbouncer]\npool_mode = \"transaction\"\n"
        );
        let p = parse_plan(&text, Path::new("p.toml")).unwrap();
        assert_eq!(p.load.threads, 4);
        assert_eq!(p.stand.env["DB_PREPARED"], "off");
        assert_eq!(p.stand.env["GOGC"], "200");
        let b = p.stand.pgbouncer.unwrap();
        assert_eq!(b.pool_mode, PoolMode::Transaction);
        assert_eq!(b.default_pool_size, 50, "source 004's default_pool_size");
        assert_eq!(b.max_client_conn, 1000);
        assert_eq!(b.max_prepared_statements, None);
        // the inline form, with every key
        let text = format!(
            "{GOOD}\n[stand]\npgbouncer = {{ pool_mode = \"session\", default_pool_size = 20, max_client_conn = 500, max_prepared_statements = 100 }}\n"
        );
        let b = parse_plan(&text, Path::new("p.toml"))
            .unwrap()
            .stand
            .pgbouncer
            .unwrap();
        assert_eq!(
            (b.pool_mode, b.default_pool_size, b.max_client_conn),
            (PoolMode::Session, 20, 500)
        );
        assert_eq!(b.max_prepared_statements, Some(100));
        // `[stand.pgbouncer]` alone (no `[stand]` header: an implicit table)
        let text = format!("{GOOD}\n[stand.pgbouncer]\npool_mode = \"session\"\n");
        let p = parse_plan(&text, Path::new("p.toml")).unwrap();
        assert_eq!(p.stand.pgbouncer.unwrap().pool_mode, PoolMode::Session);
        // defaults: direct, no extra environment, one generator thread
        let p = parse_plan(GOOD, Path::new("p.toml")).unwrap();
        assert!(p.stand.pgbouncer.is_none() && p.stand.env.is_empty());
        assert_eq!(p.load.threads, 1);
    }

    #[test]
    fn stand_env_and_pgbouncer_errors_name_file_line_and_field() {
        // the appended text starts on the line after GOOD's last
        let lines = GOOD.lines().count();
        let at = |extra: &str| -> PlanError {
            parse_plan(&format!("{GOOD}{extra}"), Path::new("plans/p.toml")).unwrap_err()
        };
        let e = at("[stand.env]\nDB_HOST = \"10.0.0.1\"\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 2), "stand.env.DB_HOST"),
            "{e}"
        );
        assert!(e.message.contains("env contract"), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("plans/p.toml:{}: stand.env.DB_HOST", lines + 2)),
            "{e}"
        );
        let e = at("[stand.env]\nX = true\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 2), "stand.env.X"),
            "{e}"
        );
        let e = at("[stand.env]\n\"1X\" = \"a\"\n");
        assert!(
            e.message.contains("not an environment variable name"),
            "{e}"
        );
        let e = at("[stand.pgbouncer]\npool_mode = \"statement\"\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 2), "stand.pgbouncer.pool_mode"),
            "{e}"
        );
        let e = at("[stand.pgbouncer]\npool_mode = \"txn\"\n");
        assert!(e.message.contains("`txn` is not a pool mode"), "{e}");
        let e = at("[stand.pgbouncer]\ndefault_pool_size = 50\n");
        assert_eq!(e.field, "stand.pgbouncer.pool_mode", "{e}");
        assert!(e.message.contains("required") && e.line.is_some(), "{e}");
        let e = at("[stand.pgbouncer]\npool_mode = \"session\"\ndefault_pool_size = 0\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 3), "stand.pgbouncer.default_pool_size"),
            "{e}"
        );
        let e = at("[stand.pgbouncer]\npool_mode = \"session\"\npool_size = 5\n");
        assert_eq!(e.line, Some(lines + 3), "{e}");
        assert!(e.message.contains("pool_size"), "{e}");
        let e = at("[stand]\nseed = 2\npostgres_settings = { fsync = [1] }\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 3), "stand.postgres_settings.fsync"),
            "{e}"
        );
        let e = at("[load]\nthreads = 0\n");
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(lines + 2), "load.threads"),
            "{e}"
        );
    }

    #[test]
    fn a_toml_error_without_a_message_still_says_what_is_wrong() {
        // found by crates/plan/tests/bad_input.rs: toml's message for `-=` is empty
        let e = parse_plan("-=", std::path::Path::new("x.toml")).unwrap_err();
        assert!(!e.message.trim().is_empty(), "{e}");
        assert_eq!(e.line, Some(1), "{e}");
    }
}
