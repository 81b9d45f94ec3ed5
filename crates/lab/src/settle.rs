//! A settling warm-up (`[settle]`): the plan's last warm-up stage run in steps until the stack's
//! throughput stops moving ([`ceiling_analyze::is_settled`]) or the plan's bound runs out. Each
//! step is its own short engine run against the started stack, before the measured run; the
//! steps are kept in run.json ([`Settling`]), never analysed as shelves. The measured run then
//! starts with its `[[warmup]]` as written (recorded, not analysed), so its clock, its stage
//! layout and its report are those of the plan.

use crate::error::{refuse, Result};
use ceiling_analyze::{is_settled, percentile_ms, Settling, WarmupStep};
use ceiling_load::{parse_target, LoadConfig, Summary};
use ceiling_metrics::{merge_into, new_histogram};
use ceiling_plan::{Plan, SettleSettings, Stage};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where and how the warm-up sends.
pub struct SettleSpec<'a> {
    /// The plan: its `[[warmup]]` stages, request mix and load settings.
    pub plan: &'a Plan,
    /// The settling rule.
    pub settle: &'a SettleSettings,
    /// The running stack's base URL.
    pub url: &'a str,
    /// The stand's data directory (`@data/` CSVs), if any.
    pub data_dir: Option<&'a Path>,
    /// Generator threads.
    pub threads: usize,
    /// For messages.
    pub stack: &'a str,
    /// No per-step lines.
    pub quiet: bool,
    /// Where the per-step lines go.
    pub progress: &'a crate::Progress,
}

/// Runs the plan's last warm-up stage in steps of `settle.step` until the last `settle.steps` steps agree or `settle.max` of stepping has passed. Between steps
/// `alive()` is asked; a `false` (the stack or a part of the stand exited) or `stop` (Ctrl-C) ends
/// the settling unsettled and the caller's measurement sees why.
pub fn settle_warmup(
    spec: SettleSpec<'_>,
    stop: &Arc<AtomicBool>,
    mut alive: impl FnMut() -> bool,
) -> Result<Settling> {
    let SettleSpec {
        plan,
        settle,
        url,
        data_dir,
        threads,
        stack,
        quiet,
        progress,
    } = spec;
    let Some(Stage::Closed {
        connections,
        duration: Some(_),
        ..
    }) = plan.warmup.last().cloned()
    else {
        refuse!("[settle] needs a closed warm-up stage with a duration to repeat (the plan check refuses any other)");
    };
    let config = |stages: Vec<Stage>| -> Result<LoadConfig> {
        let target = parse_target(url, false)?;
        let mut cfg = LoadConfig::from_plan(plan, target, data_dir)?;
        let length: Duration = stages.iter().filter_map(Stage::duration).sum();
        cfg.warmup = Vec::new();
        cfg.stages = stages;
        cfg.threads = threads.max(1);
        cfg.hard_limit = length + cfg.timeout + Duration::from_secs(10);
        // read-only here: Ctrl-C stops the step in progress
        cfg.stop = stop.clone();
        Ok(cfg)
    };
    let mut out = Settling {
        connections,
        step_s: settle.step.as_secs_f64(),
        steps_compared: settle.steps,
        within: settle.within,
        max_s: settle.max.as_secs_f64(),
        steps: Vec::new(),
        settled: false,
    };
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && alive() {
        let stage = Stage::Closed {
            connections,
            duration: Some(settle.step),
            requests: None,
        };
        let summary = ceiling_load::run(config(vec![stage])?, |_| {})?;
        let step = step_of(&summary, settle.step, t0.elapsed());
        if !quiet {
            progress.say(&format!(
                "[{stack}] warm-up step {}: {:.0} RPS, p50 {:.2} ms, p99 {:.2} ms{}",
                out.steps.len() + 1,
                step.throughput_rps,
                step.p50_ms,
                step.p99_ms,
                if step.errors > 0 {
                    format!(", {} errors", step.errors)
                } else {
                    String::new()
                }
            ));
        }
        out.steps.push(step);
        let tp: Vec<f64> = out.steps.iter().map(|s| s.throughput_rps).collect();
        if is_settled(&tp, settle.steps as usize, settle.within) {
            out.settled = true;
            break;
        }
        if t0.elapsed() + settle.step > settle.max {
            break;
        }
    }
    Ok(out)
}

/// One step's record from its engine summary: completions over the step's planned length (a
/// closed stage stops sending at its end; the replies still in flight then are at most one per
/// connection, the same in every step).
fn step_of(s: &Summary, step: Duration, since_start: Duration) -> WarmupStep {
    let mut lat = new_histogram();
    let (mut requests, mut errors) = (0, 0);
    for t in &s.tags {
        merge_into(&mut lat, &t.latency);
        requests += t.counts.total();
        errors += t.counts.errors();
    }
    WarmupStep {
        end_s: since_start.as_secs_f64(),
        requests,
        errors,
        throughput_rps: requests as f64 / step.as_secs_f64(),
        p50_ms: percentile_ms(&lat, 50.0).unwrap_or(0.0),
        p99_ms: percentile_ms(&lat, 99.0).unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_load::testing::spawn_server;

    /// A closed warm-up at 4 connections against the simulated service on `port`, settled in 1-s
    /// steps (three within ±5%) for at most `max`, the stand's watch answering `alive`.
    fn settle_against(port: u16, max: &str, alive: impl FnMut() -> bool) -> Settling {
        let text = format!(
            r#"
name = "settle-test"
[[warmup]]
connections = 4
duration = "1s"
[settle]
step = "1s"
steps = 3
within = 0.05
max = "{max}"
[[stages]]
connections = 4
duration = "1s"
[[requests]]
name = "x"
path = "/x"
"#
        );
        let plan = ceiling_plan::parse_plan(&text, Path::new("settle-test.toml")).unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let spec = SettleSpec {
            plan: &plan,
            settle: plan.settle.as_ref().unwrap(),
            url: &url,
            data_dir: None,
            threads: 1,
            stack: "sim",
            quiet: true,
            progress: &crate::Progress::none(),
        };
        settle_warmup(spec, &Arc::new(AtomicBool::new(false)), alive).unwrap()
    }

    /// A service whose response time is `ms(seconds since its first request)`.
    fn warming_service(ms: impl Fn(f64) -> f64 + Send + Sync + 'static) -> u16 {
        let first = std::sync::Mutex::new(None::<Instant>);
        spawn_server(move |now| {
            let start = *first.lock().unwrap().get_or_insert(now);
            now + Duration::from_secs_f64(ms(now.duration_since(start).as_secs_f64()) / 1000.0)
        })
    }

    #[test]
    fn the_warm_up_runs_until_a_warming_service_stops_speeding_up() {
        // truth: like a JIT, the service gets faster for its first 5 s (20 ms falling linearly to
        // 4 ms), then stays at 4 ms: ~1000 RPS at four connections
        let port = warming_service(|t| if t < 5.0 { 20.0 - 3.2 * t } else { 4.0 });
        let s = settle_against(port, "20s", || true);
        assert!(s.settled, "{}", s.describe());
        let tp: Vec<f64> = s.steps.iter().map(|x| x.throughput_rps).collect();
        // it ran past the warming seconds (the first step well below full speed: the truth is
        // ~4.6× between the first second and full speed) and stopped on three fast steps, long
        // before the 20-s bound. "Fast" is relative to the first step, not an absolute rate: on a
        // busy 2-core CI box full speed measured 700–760 RPS against the simulated 1000.
        assert!(tp[0] < 0.6 * tp[tp.len() - 1], "{tp:?}");
        assert!(
            tp[tp.len() - 3..].iter().all(|x| *x > 2.5 * tp[0]),
            "{tp:?}"
        );
        assert!((5..=10).contains(&tp.len()), "{tp:?}");
        assert!(s.seconds() < 15.0, "{}", s.describe());
    }

    #[test]
    fn a_service_that_keeps_speeding_up_runs_out_the_bound_unsettled() {
        // truth: 30 ms at the start, 2 ms less every second — never flat for three seconds
        let port = warming_service(|t| (30.0 - 2.0 * t.floor()).max(2.0));
        let s = settle_against(port, "6s", || true);
        assert!(!s.settled, "{}", s.describe());
        assert!(s.seconds() <= 6.0 + 1.5, "{}", s.describe());
        assert!(s.describe().contains("did NOT settle"));
    }

    #[test]
    fn a_dead_stack_ends_the_settling_at_once() {
        let port = warming_service(|_| 1.0);
        let s = settle_against(port, "20s", || false);
        assert!(!s.settled && s.steps.is_empty());
    }
}
