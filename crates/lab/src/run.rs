//! `ceiling run` on the stand as the lab runs it: the stacks' turns (each once, or — a closed
//! model's repetitions of several stacks — once per round, A B A B …, so drift falls on all
//! alike), each turn a watched [`crate::measure_stack`], the part-exit policy of
//! [`crate::handle_part_exit`] when PostgreSQL or PgBouncer exits, and the report brought up to
//! date after every turn. The binary parses flags, prints the lines it is handed and writes the
//! reports.

use crate::error::Result;
use crate::measure::{Halt, Round};
use crate::stack::{measure_stack, StackRunOptions};
use crate::Progress;
use ceiling_agent::coordinator::Agents;
use ceiling_analyze::{StackAnalysis, Warning, WarningKind};
use ceiling_plan::Plan;
use ceiling_records::{RunReport, Series};
use ceiling_stand::Stand;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Seconds left between a stack's rounds on its clock, so a round's first second never follows
/// the previous round's last as if the run had gone on.
const ROUND_GAP_S: u32 = 10;

/// Rounds of an interleaved run: the plan's repetitions when several stacks are measured under a
/// closed model with repetitions (and `no_interleave` is not set); 0 = not interleaved.
pub fn rounds_of(plan: &Plan, no_interleave: bool) -> u32 {
    let reps = plan.load.repetitions;
    if no_interleave || plan.is_open() || reps < 2 || plan.target.stacks.len() < 2 {
        0
    } else {
        reps
    }
}

/// One stack's turn in a run.
#[derive(Debug, Clone, PartialEq)]
struct Turn {
    /// The stack's place in the plan's list.
    index: usize,
    /// Its name.
    stack: String,
    /// In an interleaved run, the repetition this turn measures.
    repetition: Option<u32>,
}

impl Turn {
    /// ` (repetition 2 of 3)` in an interleaved run, else nothing.
    fn describe(&self, rounds: u32) -> String {
        match self.repetition {
            Some(r) => format!(" (repetition {} of {rounds})", r + 1),
            None => String::new(),
        }
    }
}

/// The run's turns: every stack once, or with `rounds` every stack once per round (A B A B …).
fn turns(stacks: &[String], rounds: u32) -> Vec<Turn> {
    let one = |repetition: Option<u32>| {
        stacks.iter().enumerate().map(move |(index, s)| Turn {
            index,
            stack: s.clone(),
            repetition,
        })
    };
    if rounds == 0 {
        one(None).collect()
    } else {
        (0..rounds).flat_map(|r| one(Some(r))).collect()
    }
}

/// Each stack's analysis from its turns so far, in the plan's order: a stack measured in rounds
/// has its rounds joined ([`StackAnalysis::combine`]); one measured once is as measured.
fn combined(parts: &BTreeMap<usize, Vec<StackAnalysis>>) -> Vec<StackAnalysis> {
    parts
        .values()
        .filter_map(|p| match p.as_slice() {
            [one] => Some(one.clone()),
            _ => StackAnalysis::combine(p.clone()),
        })
        .collect()
}

fn sleep_unless(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100).min(end - Instant::now()));
    }
}

/// How a run treats its stacks beyond the plan: what the command line decided, typed once.
#[derive(Debug, Clone, Default)]
pub struct RunSetup {
    /// Measure stacks even when the conformance suite fails for them (recorded).
    pub allow_unverified: bool,
    /// Rebuild each stack once, even when its source is unchanged.
    pub rebuild: bool,
    /// No progress bar.
    pub quiet: bool,
    /// Generator agents that send the load instead of this process.
    pub agents: Option<Agents>,
    /// Rounds of an interleaved run ([`rounds_of`]); 0: each stack once, in the plan's order.
    pub rounds: u32,
}

/// What a run shares: the plan, the setup, where it writes, what stops it, and the two ways it
/// talks back — progress lines, and a checkpoint with the results so far after every turn.
pub struct RunContext<'a> {
    /// The plan run.
    pub plan: &'a Plan,
    /// What the command line decided.
    pub setup: &'a RunSetup,
    /// The run's results directory.
    pub dir: &'a Path,
    /// Ctrl-C.
    pub stop: &'a Arc<AtomicBool>,
    /// Lines for the person watching.
    pub progress: Progress,
    /// The results so far, after every turn.
    pub checkpoint: &'a mut dyn FnMut(&RunReport, &Series) -> Result<()>,
}

/// The plan's stacks, measured on `stand` in their turns; `report` and `series` hold the results
/// (handed to the checkpoint after every turn, so an interrupted run keeps them). Returns the
/// exit status the run has earned: 0, or 1 when a stack could not be measured, died, or a part
/// of the stand exited under it.
pub fn run_stacks(
    cx: &mut RunContext<'_>,
    stand: &mut Stand,
    report: &mut RunReport,
    series: &mut Series,
) -> Result<u8> {
    let plan = cx.plan;
    let rounds = cx.setup.rounds;
    let data_dir = stand.data_dir().map(Path::to_path_buf);
    let mut exit: u8 = 0;
    // Each stack's analyses so far (one per round when interleaved), by the stack's place in the
    // list (a list may name a stack twice when not interleaved).
    let mut parts: BTreeMap<usize, Vec<StackAnalysis>> = BTreeMap::new();
    // stacks that could not be started: not tried again in later rounds
    let mut not_measured: BTreeSet<usize> = BTreeSet::new();
    let schedule = turns(&plan.target.stacks, rounds);
    if rounds > 0 {
        cx.progress.say(&format!(
            "interleaved: {} stacks × {rounds} repetitions, each repetition a start of its own with the plan's warm-up, the stacks taking turns (A B A B …); --no-interleave runs them one after the other",
            plan.target.stacks.len()
        ));
    }
    for (i, turn) in schedule.iter().enumerate() {
        let name = &turn.stack;
        if not_measured.contains(&turn.index) {
            continue;
        }
        if cx.stop.load(Ordering::Relaxed) {
            report.warnings.push(Warning::new(
                WarningKind::StoppedEarly,
                format!("stopped before stack `{name}`{}", turn.describe(rounds)),
            ));
            break;
        }
        if i > 0 && !plan.stand.cooldown.is_zero() {
            cx.progress.say(&format!(
                "cool-down {}…",
                ceiling_plan::format_duration(plan.stand.cooldown)
            ));
            sleep_unless(plan.stand.cooldown, cx.stop);
        }
        if rounds > 0 {
            cx.progress
                .say(&format!("[{name}]{}", turn.describe(rounds)));
        }
        // a round starts on the stack's clock past its earlier rounds (their rows, in `series`)
        let round = turn.repetition.map(|repetition| Round {
            repetition,
            offset_s: series
                .get(name)
                .and_then(|rows| rows.last())
                .map_or(0, |r| r.t + 1 + ROUND_GAP_S),
        });
        // later rounds start what the first one built and verified
        let later = turn.repetition.is_some_and(|r| r > 0);
        match measure_stack(
            plan,
            StackRunOptions {
                allow_unverified: cx.setup.allow_unverified,
                // once: the later rounds start what the first one built
                rebuild: cx.setup.rebuild && !later,
                quiet: cx.setup.quiet,
                agents: cx.setup.agents.as_ref(),
                round,
                progress: Some(&cx.progress),
            },
            stand,
            name,
            cx.dir,
            data_dir.as_deref(),
            cx.stop,
        ) {
            Ok((m, lim)) => {
                report.limits.insert(name.clone(), lim);
                if let Some(f) = &m.fairness {
                    report.fairness.insert(name.clone(), f.clone());
                }
                if turn.repetition.is_some() {
                    series.entry(name.clone()).or_default().extend(m.rows);
                } else {
                    series.insert(name.clone(), m.rows);
                }
                parts.entry(turn.index).or_default().push(m.analysis);
                if let Some(Halt::StackDied(_)) = m.halt {
                    // its analysis says so; the run goes on with the next stack
                    exit = 1;
                }
                if let Some(Halt::PartExited(e)) = m.halt {
                    exit = 1;
                    let what = format!(
                        "{} while `{name}` was measured{}",
                        e.describe(),
                        turn.describe(rounds)
                    );
                    let last = i + 1 == schedule.len();
                    let out = crate::handle_part_exit(
                        plan.stand.on_part_exit,
                        stand,
                        &e,
                        what,
                        crate::Activity::Run,
                        !last && !cx.stop.load(Ordering::Relaxed),
                        &cx.dir.join("logs"),
                        name,
                        &mut |line: &str| cx.progress.say(line),
                    );
                    cx.progress.say(&out.message);
                    report
                        .warnings
                        .push(Warning::new(WarningKind::PartExited, out.message));
                    if out.stop_all {
                        report.stacks = combined(&parts);
                        (cx.checkpoint)(report, series)?;
                        break;
                    }
                }
            }
            Err(e) => {
                let msg = format!(
                    "stack `{name}` was not measured{}: {e:#}",
                    turn.describe(rounds)
                );
                cx.progress.say(&msg);
                report
                    .warnings
                    .push(Warning::new(WarningKind::StackNotMeasured, msg));
                not_measured.insert(turn.index);
                exit = 1;
            }
        }
        // Flush what we have after every turn, so an interrupted run keeps its results.
        report.stacks = combined(&parts);
        let placement = stand.placement().clone();
        for st in &mut report.stacks {
            // a ceiling the shared box set is called that, with the stack's quota as recorded
            let quota = report.limits.get(&st.stack).and_then(|l| l.cpus);
            st.note_placement(&placement, quota);
        }
        (cx.checkpoint)(report, series)?;
    }
    Ok(exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &[Turn]) -> Vec<String> {
        t.iter()
            .map(|t| format!("{}{}", t.stack, t.describe(2)))
            .collect()
    }

    #[test]
    fn interleaved_turns_take_the_stacks_in_rounds() {
        let stacks = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            names(&turns(&stacks, 2)),
            [
                "a (repetition 1 of 2)",
                "b (repetition 1 of 2)",
                "a (repetition 2 of 2)",
                "b (repetition 2 of 2)"
            ]
        );
        assert_eq!(names(&turns(&stacks, 0)), ["a", "b"]);
        assert_eq!(turns(&stacks, 2)[3].index, 1);
    }

    #[test]
    fn only_a_closed_models_repetitions_of_several_stacks_are_interleaved() {
        let plan = |text: &str| ceiling_plan::parse_plan(text, Path::new("t.toml")).unwrap();
        let closed = |reps: u32, stacks: &str| {
            plan(&format!(
                "name = \"c\"\n[target]\nstacks = [{stacks}]\n[load]\nrepetitions = {reps}\n[[stages]]\nconnections = 10\nduration = \"5s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n"
            ))
        };
        assert_eq!(rounds_of(&closed(3, "\"a\", \"b\""), false), 3);
        assert_eq!(
            rounds_of(&closed(3, "\"a\", \"b\""), true),
            0,
            "--no-interleave"
        );
        assert_eq!(
            rounds_of(&closed(1, "\"a\", \"b\""), false),
            0,
            "one repetition"
        );
        assert_eq!(rounds_of(&closed(3, "\"a\""), false), 0, "one stack");
        let open = plan(
            "name = \"o\"\n[target]\nstacks = [\"a\", \"b\"]\n[[stages]]\nhold = 10\nduration = \"5s\"\n[[requests]]\nname = \"g\"\npath = \"/\"\n",
        );
        assert_eq!(
            rounds_of(&open, false),
            0,
            "an open model has no repetitions"
        );
    }
}
