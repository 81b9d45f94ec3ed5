//! `ceiling search`: find RPS@p99≤SLO automatically.
//!
//! Method, per repetition: **bracket** by growing the offered rate (×`growth`, default doubling)
//! until a probe shelf fails, **bisect** between the last pass and the first fail until the bracket
//! is within ±`tolerance` of its midpoint, then **confirm** the last passing rate with a
//! full-length shelf (stepping down by twice the tolerance, up to 5 times, if it fails). The bracket is
//! narrowed until the lowest failing rate is within `tolerance` of the highest passing one, so the
//! true ceiling lies in [ceiling, ceiling·(1+tolerance)]. Each probe is a
//! short open-model shelf, trimmed and judged by the plan's own SLO rules; between probes the
//! system drains. A probe where the generator was the bottleneck stops the search with that reason
//! instead of reporting a wrong ceiling. The whole search is repeated and reported as a mean with
//! a 95% confidence interval (Student t), with every repetition's value.

use ceiling_analyze::{
    confirm_plan, probe_plan, ProbeVerdict, SearchOutcome, SearchRepeat, ShelfResult,
    StackAnalysis, Verdict,
};
use ceiling_plan::Plan;
use std::time::{Duration, Instant};

/// Runs one shelf (a one-stage plan) and returns its analysis. Implemented by the CLI (with the
/// stand's sampling and files) and by [`LoadRunner`] (plain engine, for `--url` and tests).
pub trait ProbeRunner {
    /// Runs `plan` (one hold stage); `label` names the probe for files and progress.
    fn run(&mut self, plan: &Plan, label: &str) -> Result<StackAnalysis, String>;
    /// True once the user asked to stop.
    fn stopped(&self) -> bool {
        false
    }
}

/// A probe runner on the bare load engine.
pub struct LoadRunner {
    /// Target base URL.
    pub url: String,
    /// Directory for `@data/` sources.
    pub data_dir: Option<std::path::PathBuf>,
    /// Generator threads.
    pub threads: usize,
    /// Stop flag (Ctrl-C).
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Allow a non-loopback target.
    pub allow_remote: bool,
}

impl ProbeRunner for LoadRunner {
    fn run(&mut self, plan: &Plan, label: &str) -> Result<StackAnalysis, String> {
        let target =
            ceiling_load::parse_target(&self.url, self.allow_remote).map_err(|e| e.to_string())?;
        let mut cfg = ceiling_load::LoadConfig::from_plan(plan, target, self.data_dir.as_deref())
            .map_err(|e| e.to_string())?;
        cfg.threads = self.threads.max(1);
        cfg.stop = self.stop.clone();
        let mut acc = ceiling_analyze::RunAccumulator::new(plan, label);
        ceiling_load::run(cfg, |s| {
            acc.push_second(s);
        })
        .map_err(|e| e.to_string())?;
        Ok(acc.finish())
    }
    fn stopped(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Progress messages for the terminal.
pub type Log<'a> = &'a mut dyn FnMut(&str);

fn shelf_of(a: &StackAnalysis) -> Option<&ShelfResult> {
    a.shelves.first()
}

/// Confirming shelves tried (each 2×tolerance lower than the last) before giving up.
pub const CONFIRM_ATTEMPTS: u32 = 5;

/// The request-stream seed of probe `k` of repetition `rep` (deterministic, distinct per probe).
pub fn probe_seed(plan: &Plan, rep: u32, k: u64) -> u64 {
    plan.load.seed.wrapping_add(1_000 * (rep as u64 + 1) + k)
}

/// One repetition of the search.
pub fn search_once(
    plan: &Plan,
    runner: &mut dyn ProbeRunner,
    deadline: Instant,
    rep: u32,
    log: Log,
) -> SearchRepeat {
    let s = &plan.search;
    let mut probes: Vec<ProbeVerdict> = Vec::new();
    let mut stopped: Option<String> = None;
    let mut lo: Option<f64> = None; // highest rate that passed
    let mut hi: Option<f64> = None; // lowest rate that failed
    let probe_cost = s.probe + s.drain;

    // Runs a probe; None when the search must stop (reason in `stopped`).
    let mut probe = |rate: f64,
                     probes: &mut Vec<ProbeVerdict>,
                     stopped: &mut Option<String>,
                     log: Log|
     -> Option<bool> {
        if runner.stopped() {
            *stopped = Some("stopped by signal".into());
            return None;
        }
        if Instant::now() + probe_cost > deadline {
            *stopped = Some("time budget (--max-time) ran out".into());
            return None;
        }
        let label = format!("r{}-probe-{:.0}", rep + 1, rate);
        let mut pp = probe_plan(plan, rate);
        // A seed of its own per probe: the same seed would replay the same POSTed ids, and every
        // probe after the first would collide with rows the earlier ones created (409s).
        pp.load.seed = probe_seed(plan, rep, probes.len() as u64 + 1);
        let a = match runner.run(&pp, &label) {
            Ok(a) => a,
            Err(e) => {
                *stopped = Some(format!("probe at {rate:.0} RPS could not run: {e}"));
                return None;
            }
        };
        let Some(shelf) = shelf_of(&a) else {
            *stopped = Some(format!(
                "probe at {rate:.0} RPS produced no shelf (stopped early?)"
            ));
            return None;
        };
        let mut v = ProbeVerdict::from_shelf(shelf);
        v.rate = rate;
        log(&format!("  repeat {} probe {}", rep + 1, v.summary()));
        let gen = v.generator_bound();
        let passed = v.passed();
        probes.push(v);
        if gen {
            let held = probes
                .iter()
                .filter(|v| v.passed())
                .map(|v| v.rate)
                .fold(0.0, f64::max);
            *stopped = Some(format!(
                "generator-bound at {rate:.0} RPS: the generator, not the service, limited this probe, so no ceiling is reported (the SLO held at {held:.0} RPS, the last valid probe: the ceiling is at least that)"
            ));
            return None;
        }
        std::thread::sleep(s.drain);
        // Invalid for other reasons (unstable throughput…) counts as not holding the SLO.
        Some(passed)
    };

    // 1. Bracket.
    let mut rate = s.start_rate.min(s.max_rate);
    loop {
        match probe(rate, &mut probes, &mut stopped, log) {
            None => break,
            Some(true) => {
                lo = Some(rate);
                if hi.is_some() {
                    break; // bracketed from above
                }
                if rate >= s.max_rate {
                    stopped = Some(format!(
                        "the SLO still held at search.max_rate = {:.0} RPS",
                        s.max_rate
                    ));
                    break;
                }
                rate = (rate * s.growth).min(s.max_rate);
            }
            Some(false) => {
                hi = Some(rate);
                if lo.is_some() {
                    break;
                }
                // Failed at the first rate: bracket downwards.
                rate /= s.growth;
                if rate < 1.0 {
                    stopped = Some("the SLO failed even at 1 RPS".into());
                    break;
                }
            }
        }
    }
    // 2. Bisect.
    if stopped.is_none() {
        while let (Some(l), Some(h)) = (lo, hi) {
            // Stop once the lowest failing rate is within the tolerance of the highest passing
            // one: the ceiling then lies in [lo, lo·(1+tolerance)], and lo is what gets confirmed.
            if h - l <= s.tolerance * l {
                break;
            }
            let mid = (l + h) / 2.0;
            match probe(mid, &mut probes, &mut stopped, log) {
                None => break,
                Some(true) => lo = Some(mid),
                Some(false) => hi = Some(mid),
            }
        }
    }
    // 3. Confirm the last passing rate with a full-length shelf.
    let mut confirm: Option<ShelfResult> = None;
    let mut ceiling = 0.0;
    if let (Some(mut l), None) = (lo, &stopped) {
        for attempt in 0..CONFIRM_ATTEMPTS {
            if runner.stopped() || Instant::now() + s.confirm > deadline {
                stopped = Some(format!("time budget ran out before the confirming shelf; unconfirmed bracket {:.0}…{} RPS", l, hi.map(|h| format!("{h:.0}")).unwrap_or("?".into())));
                break;
            }
            log(&format!(
                "  repeat {} confirming {:.0} RPS for {}",
                rep + 1,
                l,
                ceiling_plan::format_duration(s.confirm)
            ));
            let mut cp = confirm_plan(plan, l);
            cp.load.seed = probe_seed(plan, rep, 900 + attempt as u64);
            match runner.run(&cp, &format!("r{}-confirm-{:.0}", rep + 1, l)) {
                Ok(a) => {
                    let shelf = shelf_of(&a).cloned();
                    let ok = shelf.as_ref().is_some_and(|x| x.verdict == Verdict::Valid);
                    if let Some(x) = &shelf {
                        log(&format!(
                            "  repeat {} confirm {}",
                            rep + 1,
                            ProbeVerdict::from_shelf(x).summary()
                        ));
                    }
                    let gen = shelf
                        .as_ref()
                        .is_some_and(|x| ProbeVerdict::from_shelf(x).generator_bound());
                    confirm = shelf;
                    if ok {
                        ceiling = confirm.as_ref().map(|x| x.achieved_rps).unwrap_or(l);
                        break;
                    }
                    if gen {
                        stopped = Some(format!(
                            "generator-bound on the confirming shelf at {l:.0} RPS"
                        ));
                        break;
                    }
                    // Short probes can overstate what a full-length shelf sustains (a loaded
                    // system degrades over minutes): step down by twice the tolerance and confirm
                    // again; the ceiling then lies between the passing and the last failed rate.
                    hi = Some(l);
                    l *= 1.0 - 2.0 * s.tolerance;
                    if attempt + 1 == CONFIRM_ATTEMPTS {
                        stopped = Some(format!("the confirming shelf failed {CONFIRM_ATTEMPTS} times; no ceiling confirmed"));
                    }
                    std::thread::sleep(s.drain);
                }
                Err(e) => {
                    stopped = Some(format!("confirming shelf could not run: {e}"));
                    break;
                }
            }
        }
    } else if lo.is_none() && stopped.is_none() {
        stopped = Some("no probe passed".into());
    }
    SearchRepeat {
        probes,
        confirm,
        ceiling_rps: ceiling,
        stopped,
    }
}

/// The whole search: `plan.search.repeat` repetitions within `plan.search.max_time`.
pub fn search(plan: &Plan, runner: &mut dyn ProbeRunner, log: Log) -> SearchOutcome {
    let deadline = Instant::now() + plan.search.max_time;
    let mut repeats = Vec::new();
    for rep in 0..plan.search.repeat.max(1) {
        let r = search_once(plan, runner, deadline, rep, log);
        let hard_stop = r
            .stopped
            .as_deref()
            .is_some_and(|m| m.contains("generator-bound") || m.contains("signal"));
        log(&format!(
            "  repeat {}: ceiling {:.0} RPS{}",
            rep + 1,
            r.ceiling_rps,
            r.stopped
                .as_ref()
                .map(|m| format!(" — {m}"))
                .unwrap_or_default()
        ));
        repeats.push(r);
        if hard_stop || Instant::now() >= deadline {
            break;
        }
    }
    SearchOutcome::new(repeats)
}

/// Wall time a search may take at most (for messages): the budget.
pub fn budget(plan: &Plan) -> Duration {
    plan.search.max_time
}
