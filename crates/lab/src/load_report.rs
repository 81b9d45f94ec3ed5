//! `ceiling load`'s verdict: a load's summary judged — rates over the measured time,
//! percentiles, errors, the generator's verdict (generator-bound, no connection, an agent lost) —
//! into its record ([`ceiling_records::load`]; `ceiling_report::load` renders it).

use ceiling_agent::coordinator::AgentRun;
use ceiling_load::Summary;
use ceiling_metrics::Outcome;
use ceiling_plan::Plan;

pub use ceiling_records::load::{
    AgentReport, H2Report, LoadReport, Percentiles, TagReport, TlsReport,
};

/// The report of a run's TLS tally.
pub fn tls_report(t: &ceiling_load::TlsTally) -> TlsReport {
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

fn error_map(c: &ceiling_metrics::Counts) -> std::collections::BTreeMap<String, u64> {
    Outcome::ALL
        .iter()
        .filter(|o| **o != Outcome::Ok && c.get(**o) > 0)
        .map(|o| (o.name().to_string(), c.get(*o)))
        .collect()
}

/// The report of one load (`s`, its generator's CPU `cpu_s`) of `plan` against `url`.
pub fn judge(plan: &Plan, url: &str, s: &Summary, cpu_s: f64) -> LoadReport {
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
    // A service that queues what it cannot serve answers after the schedule has ended. When
    // replies kept coming more than a second past the planned end, what was achieved is over the
    // seconds they came in: else a run whose every request was answered, however late, would
    // show the offered rate as achieved.
    let done_secs = match planned {
        Some(p) if !s.stopped_early && f64::from(s.measured_seconds) > p + 1.0 => {
            f64::from(s.measured_seconds)
        }
        _ => secs,
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
        achieved_rps: c.total() as f64 / done_secs,
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
                rps: t.counts.total() as f64 / done_secs,
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
        tls: s.tls.as_ref().map(tls_report),
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
pub fn judge_by_agents(report: &mut LoadReport, plan: &Plan, url: &str, agents: &[AgentRun]) {
    let mut per = Vec::new();
    let mut bound = Vec::new();
    let mut lost = Vec::new();
    for g in agents {
        let r = judge(plan, url, &g.summary, g.cpu_s);
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
    report.generator_bound = !bound.is_empty() || !lost.is_empty();
    report.generator_verdict = if !lost.is_empty() {
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
    if !report.no_connection {
        report.verdict = report.generator_verdict.clone();
    }
    report.stopped_early |= !lost.is_empty();
    report.agents = Some(per);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 800/s offered for 2 s to a service that serves 400/s and queues the rest: every request
    /// is answered, the last 2 s after the schedule ended. What was achieved is 400/s, not the
    /// 800 that completions over the planned seconds would say; replies within the second after
    /// the end (the usual tail) leave the rate over the planned seconds.
    #[test]
    fn replies_long_after_the_schedule_count_over_the_seconds_they_came_in() {
        let plan = ceiling_plan::parse_plan(
            "name = \"t\"\n[[requests]]\nname = \"r\"\npath = \"/\"\n[[stages]]\nhold = 800\nduration = \"2s\"\n",
            std::path::Path::new("<test>"),
        )
        .unwrap();
        let mut s = Summary::new(&plan.requests);
        (s.offered, s.sent, s.offered_seconds) = (1600, 1600, 2);
        for _ in 0..1600 {
            s.tags[0].counts.add(Outcome::Ok);
        }
        s.measured_seconds = 4;
        let r = judge(&plan, "http://127.0.0.1:9/", &s, 0.1);
        assert_eq!((r.offered_rps, r.achieved_rps), (800.0, 400.0));
        assert_eq!(r.per_request[0].rps, 400.0);
        s.measured_seconds = 3;
        let r = judge(&plan, "http://127.0.0.1:9/", &s, 0.1);
        assert_eq!((r.offered_rps, r.achieved_rps), (800.0, 800.0));
    }

    /// summary.json reads back as the record it was written from (with errors by outcome, so
    /// the map's keys travel too).
    #[test]
    fn a_judged_load_reads_back_from_its_summary_json() {
        let plan = ceiling_plan::parse_plan(
            "name = \"t\"\n[[requests]]\nname = \"r\"\npath = \"/\"\n[[stages]]\nhold = 100\nduration = \"1s\"\n",
            std::path::Path::new("<test>"),
        )
        .unwrap();
        let mut s = Summary::new(&plan.requests);
        (s.offered, s.sent, s.offered_seconds, s.measured_seconds) = (100, 100, 1, 1);
        for i in 0..100 {
            s.tags[0].counts.add(if i % 10 == 0 {
                Outcome::Timeout
            } else {
                Outcome::Ok
            });
        }
        let r = judge(&plan, "http://127.0.0.1:9/", &s, 0.01);
        assert_eq!(r.errors.get("timeout"), Some(&10));
        let text = serde_json::to_string_pretty(&r).unwrap();
        let back: LoadReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
