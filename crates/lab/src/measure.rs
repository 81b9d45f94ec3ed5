//! One measurement: the plan's load against a started stack, the stack's and the stand's
//! signals on the same clock, the per-second records written as they come, and the analysis
//! (verdicts, attribution, runtime figures).

use crate::record::Recorder;
use ceiling_analyze::{PartExit, RunAccumulator, StackAnalysis, Warning, WarningKind};
use ceiling_load::{parse_target, LoadConfig};
use ceiling_plan::{Plan, Stage};
use ceiling_stand::Sampler;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The generator options `run` and `search` share with the plan: `--threads` and
/// `--no-keep-alive` override `[load] threads` and `keep_alive`, so run.json records what ran.
pub fn apply_load_flags(plan: &mut Plan, threads: Option<usize>, no_keep_alive: bool) {
    if let Some(t) = threads {
        plan.load.threads = t.clamp(1, 256);
    }
    if no_keep_alive {
        plan.load.keep_alive = false;
    }
}

/// The plan as the engine runs it: closed-model repetitions become repeated passes over the stages.
pub fn engine_stages(plan: &Plan) -> (Vec<Stage>, u32) {
    let passes = if plan.is_open() {
        1
    } else {
        plan.load.repetitions.max(1)
    };
    let stages = (0..passes)
        .flat_map(|_| plan.stages.iter().cloned())
        .collect();
    (stages, passes)
}

/// Everything measured for one stack.
pub struct Measured {
    /// The analysis.
    pub analysis: StackAnalysis,
    /// Per-second rows (for the HTML report).
    pub rows: Vec<ceiling_metrics::TimeseriesRow>,
    /// Why the measurement ended early, if a watch stopped it.
    pub halt: Option<Halt>,
}

/// Why a measurement ended before its plan did, as the per-second watch saw it.
pub enum Halt {
    /// The stack under test died (its crash report).
    StackDied(String),
    /// A part of the stand the stack depends on exited (PostgreSQL).
    PartExited(PartExit),
}

/// What one measurement sends, where, and where it writes.
pub struct MeasureSpec<'a> {
    /// The plan (its load, stages and analysis).
    pub plan: &'a Plan,
    /// The stack's name, for files and messages.
    pub stack: &'a str,
    /// The running stack's base URL.
    pub url: &'a str,
    /// The stand's data directory (`@data/` CSVs), if any.
    pub data_dir: Option<&'a Path>,
    /// Where the per-second records go.
    pub out_dir: &'a Path,
    /// Processes the resource sampler follows (stack, PostgreSQL, generator…).
    pub sampler_targets: Vec<ceiling_stand::SampleTarget>,
    /// Generator threads.
    pub threads: usize,
    /// No progress line.
    pub quiet: bool,
}

/// Runs the plan's load against a started stack and analyses it, while `watch` is polled every
/// second: a stack that died or a part of the stand that exited ([`Halt`]) stops this measurement
/// and is carried in the result. `stop` (Ctrl-C) is only read: a halt stops this measurement
/// alone, and the caller decides what comes next.
/// A part's exit marks the shelves it touched invalid ([`RunAccumulator::stand_part_exited`]).
pub fn measure_watched(
    spec: MeasureSpec<'_>,
    stop: &Arc<AtomicBool>,
    mut watch: impl FnMut() -> Option<Halt>,
) -> anyhow::Result<Measured> {
    let MeasureSpec {
        plan,
        stack: stack_name,
        url,
        data_dir,
        out_dir,
        sampler_targets,
        threads,
        quiet,
    } = spec;
    // A settling warm-up runs before the measured engine run, in steps of its own; the run's
    // clock, records and samplers start after it, with the plan's warm-up as written.
    let settling = match (&plan.settle, plan.is_open()) {
        (Some(settle), false) => {
            let s = crate::settle::settle_warmup(
                crate::settle::SettleSpec {
                    plan,
                    settle,
                    url,
                    data_dir,
                    threads,
                    stack: stack_name,
                    quiet,
                },
                stop,
                || watch().is_none(),
            )?;
            eprintln!("[{stack_name}] {}", s.describe());
            Some(s)
        }
        _ => None,
    };
    let target = parse_target(url, false).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut cfg =
        LoadConfig::from_plan(plan, target, data_dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (stages, passes) = engine_stages(plan);
    cfg.stages = stages;
    cfg.threads = threads.max(1);
    let total: Duration = cfg
        .warmup
        .iter()
        .chain(&cfg.stages)
        .filter_map(Stage::duration)
        .sum();
    if cfg
        .warmup
        .iter()
        .chain(&cfg.stages)
        .all(|s| s.duration().is_some())
    {
        cfg.hard_limit = total + cfg.timeout + Duration::from_secs(10);
    }
    // The engine's own flag: set by a halt (this measurement only) or, through the relay below,
    // by Ctrl-C (everything).
    let engine_stop = Arc::new(AtomicBool::new(false));
    cfg.stop = engine_stop.clone();
    let relay = StopRelay::start(stop.clone(), engine_stop.clone())?;
    let tags: Vec<String> = plan.requests.iter().map(|r| r.name.clone()).collect();
    let mut rec = Recorder::new(Some(out_dir), "", tags, Some(total), stack_name, quiet)?;
    let mut acc = RunAccumulator::with_passes(plan, stack_name, passes);
    let t0 = Instant::now();
    // signals on the same clock (host, stack cgroup, PostgreSQL waits, control, runtime)
    let mut sig_cfg = ceiling_stand::SignalConfig::from_targets(&sampler_targets, Some(url));
    sig_cfg.control_command = std::env::current_exe()
        .ok()
        .map(ceiling_stand::signals::control_command_of);
    let mut signals = ceiling_stand::SignalSampler::start(t0, sig_cfg);
    let (mut sampler, samples) = Sampler::with_channel(t0, Duration::from_secs(1), sampler_targets);
    let mut halt: Option<Halt> = None;
    // The last second after which the watch still found everything alive.
    let mut last_ok: Option<u32> = None;
    // When the watch first saw something dead (run clock).
    let mut halt_at = 0.0_f64;
    let res = ceiling_load::run(cfg, |s| {
        let fresh: Vec<_> = samples.try_iter().collect();
        for r in &fresh {
            acc.push_resource(r.clone());
        }
        signals.push_resources(&fresh);
        rec.signals(signals.take_sealed());
        rec.add_resources(fresh);
        rec.second(s);
        acc.push_second(s);
        if halt.is_none() {
            match watch() {
                None => last_ok = Some(s.t),
                Some(mut h) => {
                    // Alive when second `last_ok` was handed over (≈ its end + the engine's
                    // one-second delivery), so every second after it may be affected.
                    halt_at = last_ok.map(|t| t as f64 + 1.0).unwrap_or(0.0);
                    if let Halt::PartExited(e) = &mut h {
                        e.from_s = halt_at;
                        if !quiet {
                            eprintln!();
                        }
                        eprintln!(
                            "[{stack_name}] {} EXITED ({}) at t≈{} s — stopping this stack's measurement; its shelves from then on are invalid",
                            e.part.title(),
                            e.status,
                            e.from_s
                        );
                        acc.stand_part_exited(e.clone());
                    }
                    halt = Some(h);
                    engine_stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    relay.finish();
    sampler.stop();
    let rest: Vec<_> = samples.try_iter().collect();
    for r in &rest {
        acc.push_resource(r.clone());
    }
    signals.push_resources(&rest);
    rec.signals(signals.stop());
    let mut signal_notes = signals.notes();
    let cost = signals.cost();
    signal_notes.push(format!(
        "the signal sampler used {:.2}% of a core ({:.2} s in its threads, {:.2} s in the control, {:.2} s in its PostgreSQL backend over {:.0} s)",
        cost.cpu_pct(),
        cost.threads_cpu_s,
        cost.control_cpu_s,
        cost.postgres_cpu_s,
        cost.wall_s
    ));
    rec.add_resources(rest);
    rec.finish();
    let summary = res.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut analysis = acc.finish();
    if let Some(s) = &settling {
        if !s.settled {
            analysis
                .warnings
                .push(Warning::new(WarningKind::WarmupNotSettled, s.describe()));
        }
    }
    analysis.settling = settling;
    if let Some(Halt::StackDied(m)) = &halt {
        analysis.stack_exit = Some(ceiling_analyze::StackExit {
            at_s: halt_at,
            report: m.clone(),
        });
    }
    // why each failed shelf failed, from the same per-second rows the report shows
    ceiling_analyze::attribute_analysis(&mut analysis, &rec.rows, &rec.signal_rows);
    // and what the runtime held (heap, GC, threads) on every shelf
    ceiling_analyze::runtime_analysis(&mut analysis, &rec.rows, &rec.signal_rows);
    for n in signal_notes {
        analysis.warnings.push(ceiling_analyze::Warning::new(
            ceiling_analyze::WarningKind::Other,
            format!("signals: {n}"),
        ));
    }
    match &halt {
        // the why of the shelves it cut short (the exit first) came with the attribution above
        Some(Halt::StackDied(m)) => analysis.warnings.push(Warning::new(
            WarningKind::StackDied,
            format!("the stack died during the run: {m}"),
        )),
        Some(Halt::PartExited(_)) => {} // the analysis says it (warning, part_exits, reasons)
        None if summary.stopped_early => analysis.warnings.push(Warning::new(
            WarningKind::StoppedEarly,
            "the run was stopped early (signal or time bound); shelves after that point are missing",
        )),
        None => {}
    }
    if let Some(e) = rec.io_error.take() {
        analysis.warnings.push(Warning::new(WarningKind::Files, e));
    }
    Ok(Measured {
        analysis,
        rows: std::mem::take(&mut rec.rows),
        halt,
    })
}

/// Copies the run-wide stop flag (Ctrl-C) into one measurement's engine flag, every 50 ms, so a
/// halt of one measurement never looks like a Ctrl-C to the rest of the run.
struct StopRelay {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StopRelay {
    fn start(from: Arc<AtomicBool>, to: Arc<AtomicBool>) -> std::io::Result<StopRelay> {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = std::thread::Builder::new()
            .name("ceiling-stop-relay".into())
            .spawn(move || {
                while !d.load(Ordering::Relaxed) {
                    if from.load(Ordering::Relaxed) {
                        to.store(true, Ordering::Relaxed);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })?;
        Ok(StopRelay {
            done,
            thread: Some(thread),
        })
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
