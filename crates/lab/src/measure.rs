//! One measurement: the plan's load against a started stack, the stack's and the stand's
//! signals on the same clock, the per-second records written as they come, and the analysis
//! (verdicts, attribution, runtime figures).

use crate::error::{refuse, LabError, Result};
use crate::record::Recorder;
use ceiling_agent::coordinator::{AgentRun, Agents, START_LEAD};
use ceiling_agent::session::now_us;
use ceiling_agent::Job;
use ceiling_analyze::{PartExit, RunAccumulator, StackAnalysis, Verdict, Warning, WarningKind};
use ceiling_load::{parse_target, LoadConfig};
use ceiling_plan::{Plan, Stage};
use ceiling_stand::Sampler;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The generator options `run` and `search` share with the plan, as the command line gave them.
#[derive(Debug, Clone, Default)]
pub struct LoadFlags<'a> {
    /// `--threads`: overrides `[load] threads`.
    pub threads: Option<usize>,
    /// `--no-keep-alive`: turns `[load] keep_alive` off.
    pub no_keep_alive: bool,
    /// `--tick`: overrides `[load] tick` (a duration as written).
    pub tick: Option<&'a str>,
    /// `--io`: overrides `[load] io` (`auto`, `epoll`, `io_uring`).
    pub io: Option<&'a str>,
    /// `--realtime`: turns `[load] realtime` on.
    pub realtime: bool,
}

/// Applies the command line's generator options to the plan, so run.json records what ran. A
/// tick (the plan's or the flag's) is refused where the ticked engine does not run; real-time
/// scheduling (the plan's or the flag's) is refused here, before a stand starts, when this
/// process lacks the privilege.
pub fn apply_load_flags(plan: &mut Plan, flags: &LoadFlags) -> Result<()> {
    apply_engine_flags(plan, flags)?;
    if plan.load.realtime {
        ceiling_load::realtime::check()?;
    }
    Ok(())
}

/// As [`apply_load_flags`], without checking here that real-time scheduling is allowed: for a
/// load that generator agents send, which check on their own hosts.
pub fn apply_engine_flags(plan: &mut Plan, flags: &LoadFlags) -> Result<()> {
    let LoadFlags {
        threads,
        no_keep_alive,
        tick,
        io,
        realtime,
    } = *flags;
    if let Some(io) = io {
        plan.load.io = ceiling_plan::IoBackend::parse(io).map_err(|error| LabError::Flag {
            flag: "--io",
            error,
        })?;
    }
    if let Some(t) = threads {
        plan.load.threads = t.clamp(1, 256);
    }
    if no_keep_alive {
        plan.load.keep_alive = false;
    }
    if let Some(t) = tick {
        let t = ceiling_plan::parse_duration(t).map_err(|error| LabError::Flag {
            flag: "--tick",
            error,
        })?;
        if t.is_zero() || t > Duration::from_millis(100) {
            refuse!("--tick: between 1µs and 100ms (sends leave at the tick nearest their intended time)");
        }
        plan.load.tick = Some(t);
    }
    if plan.load.tick.is_some() {
        let why = if plan.load.http2_streams.is_some() {
            Some("HTTP/2")
        } else if !plan.load.keep_alive {
            Some("keep-alive off")
        } else {
            None
        };
        if let Some(why) = why {
            refuse!("the ticked engine (--tick, [load] tick) runs over HTTP/1.1 with keep-alive, not {why}");
        }
    }
    if realtime {
        plan.load.realtime = true;
    }
    Ok(())
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
    /// The stack's `[fairness]` table, when the stand started it (a `--url` service has none).
    pub fairness: Option<ceiling_metrics::Fairness>,
}

/// Why a measurement ended before its plan did, as the per-second watch saw it.
pub enum Halt {
    /// The stack under test died (its crash report).
    StackDied(String),
    /// A part of the stand the stack depends on exited (PostgreSQL).
    PartExited(PartExit),
}

/// One round of a run whose repetitions are separate starts of the stack, the stacks taking
/// turns (A B A B …): the plan's warm-up and one pass over its levels, tagged as `repetition`
/// and written on the stack's one clock, `offset_s` seconds on (after its earlier rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// The repetition this round measures (0-based).
    pub repetition: u32,
    /// Where this round's second 0 falls on the stack's clock.
    pub offset_s: u32,
}

/// What one measurement sends, where, and where it writes.
pub struct MeasureSpec<'a> {
    /// The plan (its load, stages and analysis).
    pub plan: &'a Plan,
    /// The stack's name, for files and messages.
    pub stack: &'a str,
    /// The running stack's base URL, where the load goes.
    pub url: &'a str,
    /// The stack's plain-HTTP URL for its `/metrics` when the load goes over TLS (`stand.tls`);
    /// `None`: `url`.
    pub metrics_url: Option<&'a str>,
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
    /// Generator agents that send the load instead of this process (`--agents`); `None` = the
    /// local engine.
    pub agents: Option<&'a Agents>,
    /// An agent beside a remote stack that samples its CPU and memory (`--stack-agent`).
    pub stack_agent: Option<&'a Agents>,
    /// `Some` for one round of an interleaved run: one pass over the levels, its records
    /// appended to the stack's earlier rounds on one clock. `None`: the whole plan (every
    /// closed-model repetition a pass) in this one measurement, its files written afresh.
    pub round: Option<Round>,
    /// Where its lines for the person watching go (a settled warm-up, a part that exited).
    pub progress: &'a crate::Progress,
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
) -> Result<Measured> {
    let MeasureSpec {
        plan,
        stack: stack_name,
        url,
        metrics_url,
        data_dir,
        out_dir,
        sampler_targets,
        threads,
        quiet,
        agents,
        stack_agent,
        round,
        progress,
    } = spec;
    if agents.is_some() && plan.settle.is_some() && !plan.is_open() {
        refuse!(
            "plan `{}` settles its warm-up ([settle]); a settling warm-up runs on this host only, so --agents is refused for it (remove [settle] or run without --agents)",
            plan.name
        );
    }
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
                    progress,
                },
                stop,
                || watch().is_none(),
            )?;
            progress.say(&format!("[{stack_name}] {}", s.describe()));
            Some(s)
        }
        _ => None,
    };
    let target = parse_target(url, false)?;
    let mut cfg = LoadConfig::from_plan(plan, target, data_dir)?;
    let (stages, passes) = match round {
        Some(_) => (plan.stages.clone(), 1),
        None => engine_stages(plan),
    };
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
    // With agents, their sessions are opened (token, clocks) and the job's data delivered before
    // anything starts; the run's clock, and every sampler's, then starts at the instant the
    // agents start, so the stack's signals and the load's seconds share one clock as locally.
    let session = match agents {
        Some(ag) => Some((
            // the engine's configuration as this measurement set it, typed: no plan file
            // travels, so a bare --url search works through agents too
            Job::of_config(&cfg, url),
            ceiling_agent::coordinator::open_job(ag, &cfg.data).map_err(LabError::Agent)?,
        )),
        None => None,
    };
    // The engine's own flag: set by a halt (this measurement only) or, through the relay below,
    // by Ctrl-C (everything).
    let engine_stop = Arc::new(AtomicBool::new(false));
    cfg.stop = engine_stop.clone();
    let (tick, model) = (cfg.tick, cfg.model);
    let relay = StopRelay::start(stop.clone(), engine_stop.clone())
        .map_err(|e| LabError::io("starting the Ctrl-C relay thread", e))?;
    let tags: Vec<String> = plan.requests.iter().map(|r| r.name.clone()).collect();
    // Seconds, resource samples and signal rows reach the records and the analysis on the
    // stack's clock: this measurement's own, moved on by a round's offset.
    let offset = round.map_or(0, |r| r.offset_s);
    // the live view, drawn by whoever runs the lab (none for a quiet measurement)
    let view = |label: &str| {
        if quiet {
            None
        } else {
            progress.view(label, Some(total))
        }
    };
    let (mut rec, mut acc) = match round {
        Some(r) => {
            let label = format!("{stack_name} (repetition {})", r.repetition + 1);
            (
                Recorder::continuing(out_dir, tags, &label, view(&label), offset)?
                    .with_slo(&plan.slo),
                RunAccumulator::for_round(plan, stack_name, r.repetition, offset as f64),
            )
        }
        None => (
            Recorder::new(Some(out_dir), "", tags, stack_name, view(stack_name))?
                .with_slo(&plan.slo),
            RunAccumulator::with_passes(plan, stack_name, passes),
        ),
    };
    let (t0, start_at_us) = match &session {
        Some(_) => (
            Instant::now() + START_LEAD,
            now_us() + START_LEAD.as_micros() as i64,
        ),
        None => (Instant::now(), 0),
    };
    // a remote stack's resources, from the agent beside it, on the same clock
    let remote = match stack_agent {
        Some(sa) => {
            let at = if session.is_some() {
                start_at_us
            } else {
                now_us()
            };
            let max = total + cfg.timeout + Duration::from_secs(15);
            match ceiling_agent::sampling::start(sa, at, max) {
                Ok(r) => Some(r),
                Err(e) => {
                    relay.finish();
                    return Err(LabError::Agent(e));
                }
            }
        }
        None => None,
    };
    // signals on the same clock (host, stack cgroup, PostgreSQL waits, control, runtime)
    let mut sig_cfg = ceiling_stand::SignalConfig::from_targets(
        &sampler_targets,
        Some(metrics_url.unwrap_or(url)),
    );
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
    // `[load] stop_at_failure`: the failed shelf the run stopped after, and when
    let mut failed_at: Option<(String, u32)> = None;
    let mut on_second = |s: &ceiling_metrics::Second| {
        let mut fresh: Vec<_> = samples.try_iter().collect();
        if let Some(r) = &remote {
            fresh.extend(r.drain());
        }
        // the signal sampler joins samples on its own clock; everything after it on the stack's
        signals.push_resources(&fresh);
        let fresh = on_clock(fresh, offset);
        for r in &fresh {
            acc.push_resource(r.clone());
        }
        rec.signals(rows_on_clock(signals.take_sealed(), offset));
        rec.add_resources(fresh);
        let moved;
        let s = if offset == 0 {
            s
        } else {
            let mut m = s.clone();
            m.t += offset;
            moved = m;
            &moved
        };
        rec.second(s);
        let done = acc.push_second(s);
        if plan.load.stop_at_failure && failed_at.is_none() && halt.is_none() && !done.is_empty() {
            // judged as it completed, with the resources seen so far (as the live view does)
            if let Some(f) = acc
                .completed()
                .into_iter()
                .find(|r| r.verdict == Verdict::Failed)
            {
                if !quiet {
                    progress.say(""); // below the progress bar's line
                }
                progress.say(&format!(
                    "[{stack_name}] shelf `{}` failed at t={} s — stopping here ([load] stop_at_failure): the ceiling is bracketed",
                    f.label, s.t
                ));
                acc.stopped_after(f.shelf, &f.label);
                failed_at = Some((f.label, s.t));
                engine_stop.store(true, Ordering::Relaxed);
            }
        }
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
                            // below the progress bar's line
                            progress.say("");
                        }
                        progress.say(&format!(
                            "[{stack_name}] {} EXITED ({}) at t≈{} s — stopping this stack's measurement; its shelves from then on are invalid",
                            e.part.title(),
                            e.status,
                            e.from_s
                        ));
                        acc.stand_part_exited(e.clone());
                    }
                    halt = Some(h);
                    engine_stop.store(true, Ordering::Relaxed);
                }
            }
        }
    };
    let mut agent_runs: Option<Vec<AgentRun>> = None;
    let res = match session {
        None => ceiling_load::run(cfg, &mut on_second).map_err(LabError::from),
        Some((job, agents)) => agents
            .run_job(start_at_us, &job, &engine_stop, &mut on_second)
            .map_err(LabError::Agent)
            .map(|ran| {
                agent_runs = Some(ran.agents);
                ran.merged
            }),
    };
    relay.finish();
    // An agent lost mid-run no longer sent its share: the shelves from its last recorded second
    // on are invalid, like the shelves a stand part's exit touched.
    for mut e in lost_agents(agent_runs.as_deref().unwrap_or_default()) {
        e.from_s += offset as f64;
        acc.stand_part_exited(e);
    }
    sampler.stop();
    let mut rest: Vec<_> = samples.try_iter().collect();
    let remote_note = remote.map(|r| {
        let (more, note) = r.finish();
        rest.extend(more);
        note
    });
    signals.push_resources(&rest);
    let rest = on_clock(rest, offset);
    for r in &rest {
        acc.push_resource(r.clone());
    }
    rec.signals(rows_on_clock(signals.stop(), offset));
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
    signal_notes.extend(remote_note);
    rec.add_resources(rest);
    rec.finish();
    let summary = res?;
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
    // an interleaved run's rounds each sample anew: say whose note it is, so the rounds' notes
    // read as one each, not as one note repeated
    let whose = round.map_or(String::new(), |r| {
        format!(" (repetition {})", r.repetition + 1)
    });
    for n in signal_notes {
        analysis.warnings.push(ceiling_analyze::Warning::new(
            ceiling_analyze::WarningKind::Other,
            format!("signals{whose}: {n}"),
        ));
    }
    match &halt {
        // the why of the shelves it cut short (the exit first) came with the attribution above
        Some(Halt::StackDied(m)) => analysis.warnings.push(Warning::new(
            WarningKind::StackDied,
            format!("the stack died during the run: {m}"),
        )),
        Some(Halt::PartExited(_)) => {} // the analysis says it (warning, part_exits, reasons)
        // stopped on purpose: the shelves after the failed one were cut short or never ran (void)
        None if failed_at.is_some() && !stop.load(Ordering::Relaxed) => {
            let (label, t) = failed_at.as_ref().expect("checked");
            analysis.warnings.push(Warning::new(
                WarningKind::StoppedAtFailure,
                format!(
                    "the run stopped at t={t} s, after shelf `{label}` failed ([load] stop_at_failure): the shelves after it were cut short or not run, and are not judged"
                ),
            ))
        }
        None if summary.stopped_early => analysis.warnings.push(Warning::new(
            WarningKind::StoppedEarly,
            "the run was stopped early (signal or time bound); shelves after that point are missing",
        )),
        None => {}
    }
    for g in agent_runs.iter().flatten() {
        analysis
            .warnings
            .push(Warning::new(WarningKind::Other, agent_line(g)));
    }
    if let Some(line) = summary.resets.describe() {
        // what the generator's connections did when requests ended as `reset` (times are
        // seconds from this load run's start); the retries of the idle-close race are not errors
        analysis.warnings.push(Warning::new(
            WarningKind::Other,
            format!("generator{whose}: {line}"),
        ));
    }
    // what the generator's TLS handshakes and HTTP/2 connections did (https / --http2 only)
    if let Some(t) = &summary.tls {
        analysis.warnings.push(Warning::new(
            WarningKind::Other,
            format!("generator{whose}: TLS {}", t.describe()),
        ));
    }
    if let Some(h) = &summary.h2 {
        analysis.warnings.push(Warning::new(
            WarningKind::Other,
            format!("generator{whose}: HTTP/2 {}", h.describe()),
        ));
    }
    if let Some(t) = tick {
        // the plan's `[load] tick`: what the arrivals and the timing were (issue 36)
        analysis.warnings.push(Warning::new(
            WarningKind::Other,
            format!(
                "generator{whose}: {}",
                ceiling_load::describe_engine(t, model, summary.io.as_deref())
            ),
        ));
    }
    if let Some(e) = rec.io_error.take() {
        analysis.warnings.push(Warning::new(WarningKind::Files, e));
    }
    Ok(Measured {
        analysis,
        rows: std::mem::take(&mut rec.rows),
        halt,
        fairness: None,
    })
}

/// Resource samples moved `offset` seconds on (a round's place on the stack's clock).
fn on_clock(
    mut samples: Vec<ceiling_metrics::ResourceSample>,
    offset: u32,
) -> Vec<ceiling_metrics::ResourceSample> {
    for r in &mut samples {
        r.t += offset as f64;
    }
    samples
}

/// Signal rows moved `offset` seconds on.
fn rows_on_clock(
    mut rows: Vec<ceiling_metrics::SignalRow>,
    offset: u32,
) -> Vec<ceiling_metrics::SignalRow> {
    for r in &mut rows {
        r.t += offset;
    }
    rows
}

/// The agents that vanished mid-measurement, as exits of the generator from the first second
/// each no longer covered: the shelves from there on lack part of their schedule.
fn lost_agents(runs: &[AgentRun]) -> Vec<PartExit> {
    runs.iter()
        .filter_map(|g| {
            let (lost, from) = (g.lost.as_ref()?, g.lost_from_s?);
            Some(PartExit {
                part: ceiling_stand::Role::Generator,
                from_s: from as f64,
                status: format!("agent {} ({}) lost: {lost}", g.name, g.address),
                log_tail: String::new(),
            })
        })
        .collect()
}

/// One agent's part of a measurement, as a line of the run's warnings.
fn agent_line(g: &AgentRun) -> String {
    let lag = g.summary.lag.value_at_quantile(0.99) as f64 / 1000.0;
    format!(
        "generator agent {} ({}, shard {}/{}, clock offset {:+.2} ±{:.2} ms): sent {} of {} scheduled, schedule lag p99 {:.2} ms, CPU mean {:.0}% / max {:.0}% of a core{}",
        g.name,
        g.address,
        g.shard.0,
        g.shard.1,
        g.offset_us as f64 / 1000.0,
        g.rtt_us as f64 / 2000.0,
        g.summary.sent,
        g.summary.offered,
        lag,
        g.summary.generator_cpu_mean,
        g.summary.generator_cpu_max,
        match &g.lost {
            Some(l) => format!("; LOST: {l}"),
            None => String::new(),
        }
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, lost_from: Option<u32>) -> AgentRun {
        AgentRun {
            address: format!("{name}:7700"),
            name: name.into(),
            offset_us: 0,
            rtt_us: 100,
            shard: (0, 2),
            summary: ceiling_load::Summary::new(&[]),
            cpu_s: 0.0,
            lost: lost_from.map(|_| "closed the channel before it was done".into()),
            lost_from_s: lost_from,
        }
    }

    #[test]
    fn a_lost_agent_is_a_generator_exit_from_its_first_missing_second() {
        let exits = lost_agents(&[agent("a", None), agent("b", Some(37))]);
        assert_eq!(exits.len(), 1);
        let e = &exits[0];
        assert_eq!(e.part, ceiling_stand::Role::Generator);
        assert_eq!(e.from_s, 37.0);
        assert!(e.status.contains("agent b (b:7700) lost"), "{}", e.status);
        // (which shelves such an exit voids: PartExit::touches, tested in ceiling-analyze)
    }
}
