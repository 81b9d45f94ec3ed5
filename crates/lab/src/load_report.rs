//! The report of `ceiling load` (its `summary.json` and terminal table's figures): a load's
//! summary judged — rates over the measured time, percentiles, errors, the generator's verdict
//! (generator-bound, no connection, an agent lost) — as data; the binary prints it.

use ceiling_agent::coordinator::AgentRun;
use ceiling_load::Summary;
use ceiling_metrics::Outcome;
use ceiling_plan::Plan;
use hdrhistogram::Histogram;

/// Latency percentiles of one histogram, in ms.
#[derive(serde::Serialize)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest value.
    pub max_ms: f64,
}

impl Percentiles {
    /// The percentiles of `h` (µs) in ms; zeros for an empty histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(p) as f64 / 1000.0
            }
        };
        Percentiles {
            count: h.len(),
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1000.0
            },
        }
    }
}

/// One request of the plan's mix, as the load went.
#[derive(serde::Serialize)]
pub struct TagReport {
    /// The request's name in the plan.
    pub name: String,
    /// Completed requests (any outcome).
    pub requests: u64,
    /// Completed per second over the measured time.
    pub rps: f64,
    /// Latency from the intended send time (open model) or the write (closed).
    pub latency: Percentiles,
    /// Service time: from the request's write to its response.
    pub service: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
}

/// The machine-readable summary of `ceiling load`.
#[derive(serde::Serialize)]
pub struct LoadReport {
    /// Version of this file's layout.
    pub schema_version: u32,
    /// The target.
    pub url: String,
    /// `open` or `closed`.
    pub model: String,
    /// Factor every duration was scaled by (`--quick`).
    pub scaled_by: f64,
    /// Seconds recorded in the measured phase.
    pub measured_seconds: u32,
    /// The measured duration the rates are over, seconds: the plan's measured stages when the run
    /// ran them in full, else the seconds in which requests were offered.
    pub measured_duration_s: f64,
    /// Requests the schedule offered.
    pub offered: u64,
    /// Offered per second.
    pub offered_rps: f64,
    /// Requests completed (any outcome).
    pub completed: u64,
    /// Completed per second.
    pub achieved_rps: f64,
    /// Where latency is measured from.
    pub latency_origin: String,
    /// Latency over every request.
    pub latency: Percentiles,
    /// Service time over every request.
    pub service: Percentiles,
    /// How late the generator dispatched its sends (its own punctuality).
    pub schedule_lag: Percentiles,
    /// Requests by outcome other than ok.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
    /// Errors over completed.
    pub error_rate: f64,
    /// Requests refused for a full backlog (the connection cap reached).
    pub overflow: u64,
    /// The same per request of the plan.
    pub per_request: Vec<TagReport>,
    /// The generator's CPU over the run, seconds.
    pub generator_cpu_seconds: f64,
    /// The generator's CPU per completed request, µs.
    pub generator_cpu_us_per_request: f64,
    /// The generator's mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// The generator's busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// The generator was the limit: the figures describe it, not the service.
    pub generator_bound: bool,
    /// Why (or that it kept up), in one sentence.
    pub generator_verdict: String,
    /// Connections that could not be opened (their requests were never sent).
    pub connect_failures: u64,
    /// The first connection failure, e.g. `connecting to 127.0.0.1:9: Connection refused (os error 111)`.
    pub connect_error: Option<String>,
    /// No request reached the service: every connection attempt failed.
    pub no_connection: bool,
    /// The `reset` errors taken apart by what the connection did, and the idle-close retries
    /// (absent when there were neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// The TLS handshakes of an https run (absent for cleartext).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsReport>,
    /// HTTP/2's connections (absent for HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<H2Report>,
    /// The ticked engine and its tick, when `--tick` chose it (absent: the default engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Real-time scheduling of the generator's threads, when `--realtime` asked for it (absent:
    /// normal scheduling at nice −10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<String>,
    /// One line: what this result is (the connection failure, generator-bound, or fine).
    pub verdict: String,
    /// Stopped before the plan's end (a signal, an agent lost).
    pub stopped_early: bool,
    /// Per generator agent, when the load came from agents (`--agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<AgentReport>>,
}

/// The TLS handshakes of an https run: timed from the TCP connection to the end of the handshake,
/// apart from the requests' latency (a request that needed a new connection has its handshake in
/// its latency too).
#[derive(serde::Serialize)]
pub struct TlsReport {
    /// Protocol version (`TLSv1_3`) and ALPN protocol, as negotiated.
    pub version: Option<String>,
    /// ALPN protocol as negotiated.
    pub alpn: Option<String>,
    /// Handshakes done.
    pub handshakes: u64,
    /// Of which resumed an earlier session.
    pub resumed: u64,
    /// Median handshake.
    pub handshake_p50_ms: f64,
    /// 99th percentile handshake.
    pub handshake_p99_ms: f64,
    /// Longest handshake.
    pub handshake_max_ms: f64,
    /// What the client trusted: the system's roots, a CA file, or nothing (`--insecure`).
    pub trust: String,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

impl TlsReport {
    /// The report of a run's TLS tally.
    pub fn new(t: &ceiling_load::TlsTally) -> TlsReport {
        let ms = |q: f64| t.handshake_us.value_at_quantile(q) as f64 / 1000.0;
        TlsReport {
            version: t.version.clone(),
            alpn: t.alpn.clone(),
            handshakes: t.handshakes,
            resumed: t.resumed,
            handshake_p50_ms: ms(0.5),
            handshake_p99_ms: ms(0.99),
            handshake_max_ms: t.handshake_us.max() as f64 / 1000.0,
            trust: t.trust.clone(),
            line: t.describe(),
        }
    }
}

/// What HTTP/2 multiplexing did: connections opened, the streams setting, the most in use on one.
#[derive(serde::Serialize)]
pub struct H2Report {
    /// The streams setting.
    pub streams_per_connection: usize,
    /// Connections opened.
    pub connections: u64,
    /// The most streams in use on one connection.
    pub max_streams_in_use: usize,
    /// All of it in one line, as the terminal shows it.
    pub line: String,
}

/// One generator agent's part of a run with `--agents`.
#[derive(serde::Serialize)]
pub struct AgentReport {
    /// `host:port` it was reached at.
    pub address: String,
    /// The name it gave.
    pub name: String,
    /// Its clock − this one's, µs, and the round trip that bounds the error (± half of it).
    pub clock_offset_us: i64,
    /// Round trip of the clock probe that bounds the offset's error.
    pub clock_rtt_us: i64,
    /// Its share of the schedule, `I/N`.
    pub shard: String,
    /// Requests its share offered.
    pub offered: u64,
    /// Requests it wrote.
    pub sent: u64,
    /// Requests it completed.
    pub completed: u64,
    /// Its own schedule lag.
    pub schedule_lag: Percentiles,
    /// Its mean CPU, % of one core.
    pub generator_cpu_mean_pct: f64,
    /// Its busiest second, % of one core.
    pub generator_cpu_max_pct: f64,
    /// It was the limit.
    pub generator_bound: bool,
    /// Why (or that it kept up).
    pub generator_verdict: String,
    /// Its own `reset` errors taken apart and its idle-close retries (absent when neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_resets: Option<String>,
    /// Its TLS handshakes (https targets; the merged `tls` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    /// Its HTTP/2 connections (with --http2; the merged `http2` adds every agent's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2_connections: Option<u64>,
    /// Set when the agent vanished before it said it was done: what happened, and how much of
    /// its record arrived (everything that arrived is in the merged figures).
    pub lost: Option<String>,
}

fn error_map(c: &ceiling_metrics::Counts) -> std::collections::BTreeMap<&'static str, u64> {
    Outcome::ALL
        .iter()
        .filter(|o| **o != Outcome::Ok && c.get(**o) > 0)
        .map(|o| (o.name(), c.get(*o)))
        .collect()
}

impl LoadReport {
    /// The report of one load (`s`, its generator's CPU `cpu_s`) of `plan` against `url`.
    pub fn new(plan: &Plan, url: &str, s: &Summary, cpu_s: f64) -> Self {
        // Rates are over the time load was offered: the plan's measured stages when they ran to
        // the end (a 2 s stage is 2 s, although replies to its last requests arrive in a third
        // second), else the seconds that offered requests.
        let planned: Option<f64> = plan
            .stages
            .iter()
            .map(|st| st.duration().map(|d| d.as_secs_f64()))
            .sum();
        let secs = match planned {
            Some(p) if !s.stopped_early && p > 0.0 => p,
            _ => s.offered_seconds.max(1) as f64,
        };
        let c = s.counts();
        let lag = Percentiles::of(&s.lag);
        let open = plan.is_open();
        // Requests whose connection could not be opened were dispatched on time but never
        // written: the service's side, not the generator's.
        let unsent_by_service = s.connect_failures.min(s.offered);
        let reasons: Vec<String> = ceiling_analyze::generator_reasons(
            &ceiling_analyze::GeneratorHealth {
                open,
                lag_p99_ms: lag.p99_ms,
                cpu_mean_pct: s.generator_cpu_mean,
                overflow: s.overflow,
                sends: Some((s.sent + unsent_by_service, s.offered)),
            },
            plan.analysis.max_schedule_lag.as_secs_f64() * 1000.0,
            plan.analysis.max_generator_cpu,
        )
        .iter()
        .filter_map(ceiling_analyze::Reason::generator_detail)
        .collect();
        let bound = !reasons.is_empty();
        let answered = c.total() - c.get(Outcome::Connect);
        let no_connection = s.connect_failures > 0 && answered == 0;
        let generator_verdict = if bound {
            format!(
                "GENERATOR-BOUND — this result describes the generator, not the service: {}",
                reasons.join("; ")
            )
        } else {
            "the generator kept up (lag, CPU and backlog within bounds)".into()
        };
        let connect_error = s.connect_error.clone();
        let verdict = if no_connection {
            format!(
                "NO CONNECTION — no request reached {url}: {}; is the service running and listening there?",
                connect_error.as_deref().unwrap_or("every connection attempt failed")
            )
        } else {
            generator_verdict.clone()
        };
        LoadReport {
            schema_version: 1,
            url: url.to_string(),
            model: plan.model_name().into(),
            scaled_by: plan.scaled_by,
            measured_seconds: s.measured_seconds,
            measured_duration_s: secs,
            offered: s.offered,
            offered_rps: s.offered as f64 / secs,
            completed: c.total(),
            achieved_rps: c.total() as f64 / secs,
            latency_origin: if open {
                "intended send time".into()
            } else {
                "request write (closed model)".into()
            },
            latency: Percentiles::of(&s.latency()),
            service: Percentiles::of(&{
                let mut h = ceiling_metrics::new_histogram();
                for t in &s.tags {
                    ceiling_metrics::merge_into(&mut h, &t.service);
                }
                h
            }),
            schedule_lag: lag,
            errors: error_map(&c),
            error_rate: if c.total() > 0 {
                c.errors() as f64 / c.total() as f64
            } else {
                0.0
            },
            overflow: s.overflow,
            per_request: s
                .tags
                .iter()
                .map(|t| TagReport {
                    name: t.name.clone(),
                    requests: t.counts.total(),
                    rps: t.counts.total() as f64 / secs,
                    latency: Percentiles::of(&t.latency),
                    service: Percentiles::of(&t.service),
                    errors: error_map(&t.counts),
                })
                .collect(),
            generator_cpu_seconds: cpu_s,
            generator_cpu_us_per_request: if c.total() > 0 {
                cpu_s * 1e6 / c.total() as f64
            } else {
                0.0
            },
            generator_cpu_mean_pct: s.generator_cpu_mean,
            generator_cpu_max_pct: s.generator_cpu_max,
            generator_bound: bound,
            generator_verdict,
            connect_failures: s.connect_failures,
            connect_error,
            no_connection,
            connection_resets: s.resets.describe(),
            tls: s.tls.as_ref().map(TlsReport::new),
            http2: s.h2.map(|h| H2Report {
                streams_per_connection: h.streams,
                connections: h.connections,
                max_streams_in_use: h.max_streams_in_use,
                line: h.describe(),
            }),
            verdict,
            engine: None,
            realtime: None,
            stopped_early: s.stopped_early,
            agents: None,
        }
    }

    /// With generator agents the generator's verdict is each agent's own (one generator-bound
    /// agent makes the whole result generator-bound; their CPU figures are not added into one
    /// process's), and an agent that vanished makes the result incomplete.
    pub fn judge_by_agents(&mut self, plan: &Plan, url: &str, agents: &[AgentRun]) {
        let mut per = Vec::new();
        let mut bound = Vec::new();
        let mut lost = Vec::new();
        for g in agents {
            let r = LoadReport::new(plan, url, &g.summary, g.cpu_s);
            if r.generator_bound {
                bound.push(format!("{} ({})", g.name, r.generator_verdict));
            }
            if let Some(l) = &g.lost {
                lost.push(format!("{}: {l}", g.name));
            }
            per.push(AgentReport {
                address: g.address.clone(),
                name: g.name.clone(),
                clock_offset_us: g.offset_us,
                clock_rtt_us: g.rtt_us,
                shard: format!("{}/{}", g.shard.0, g.shard.1),
                offered: r.offered,
                sent: g.summary.sent,
                completed: r.completed,
                schedule_lag: r.schedule_lag,
                generator_cpu_mean_pct: r.generator_cpu_mean_pct,
                generator_cpu_max_pct: r.generator_cpu_max_pct,
                generator_bound: r.generator_bound,
                generator_verdict: r.generator_verdict,
                connection_resets: r.connection_resets,
                tls_handshakes: g.summary.tls.as_ref().map(|t| t.handshakes),
                http2_connections: g.summary.h2.map(|h| h.connections),
                lost: g.lost.clone(),
            });
        }
        self.generator_bound = !bound.is_empty() || !lost.is_empty();
        self.generator_verdict = if !lost.is_empty() {
            format!(
                "INCOMPLETE — an agent vanished mid-run ({}); the figures hold what arrived",
                lost.join("; ")
            )
        } else if !bound.is_empty() {
            format!(
                "GENERATOR-BOUND — this result describes the generators, not the service: {}",
                bound.join("; ")
            )
        } else {
            format!(
                "the generators kept up (each of {} agents within its lag, CPU and backlog bounds)",
                agents.len()
            )
        };
        if !self.no_connection {
            self.verdict = self.generator_verdict.clone();
        }
        self.stopped_early |= !lost.is_empty();
        self.agents = Some(per);
    }
}
