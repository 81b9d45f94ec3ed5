//! The one policy for a part of the stand (PostgreSQL, PgBouncer) that exits while a stack is
//! measured, for `ceiling run` and `ceiling search` alike: keep the part's log tail, then follow
//! `stand.on_part_exit` — restart the part so the other stacks go on, or stop everything — and
//! say what happened in one sentence for the report's warnings.

use ceiling_analyze::PartExit;
use ceiling_plan::OnPartExit;
use ceiling_stand::Stand;
use std::path::Path;
use std::time::Instant;

/// What ceiling was doing when the part exited (the sentences name it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// `ceiling run`: the stack's shelves; the run goes on with the next stack.
    Run,
    /// `ceiling search`: the stack's probes; its search ends, the others go on.
    Search,
}

impl Activity {
    fn noun(self) -> &'static str {
        match self {
            Activity::Run => "run",
            Activity::Search => "search",
        }
    }
}

/// What the policy did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartExitOutcome {
    /// One sentence for the report's warnings (`WarningKind::PartExited`).
    pub message: String,
    /// Everything stops here: the policy is `stop`, or the restart failed.
    pub stop_all: bool,
}

/// Applies `stand.on_part_exit` to `e`, which happened while `what` (e.g. "PostgreSQL exited
/// (signal 9) while `go-pgx` was measured"). The part's log tail goes to
/// `logs/<part>-exit-<stack>.txt`. A restart is tried only when `may_restart` (not after the
/// last stack, not after ^C). `progress` gets the lines a user watching the terminal needs.
#[allow(clippy::too_many_arguments)]
pub fn handle_part_exit(
    policy: OnPartExit,
    stand: &mut Stand,
    e: &PartExit,
    what: String,
    activity: Activity,
    may_restart: bool,
    logs: &Path,
    stack: &str,
    progress: &mut dyn FnMut(&str),
) -> PartExitOutcome {
    if !e.log_tail.is_empty() {
        std::fs::create_dir_all(logs).ok();
        std::fs::write(
            logs.join(format!("{}-exit-{stack}.txt", e.part.as_str())),
            &e.log_tail,
        )
        .ok();
    }
    let noun = activity.noun();
    let part = e.part.title();
    let (message, stop_all) = match policy {
        OnPartExit::Restart if may_restart => {
            progress(&format!(
                "stand: restarting {part} (stand.on_part_exit = \"restart\")…"
            ));
            let t = Instant::now();
            // PostgreSQL's restart restarts PgBouncer too (a new port)
            match crate::restart_part(stand, e.part) {
                Ok(_) => {
                    progress(&format!(
                        "stand: {part} ready again in {:.1}s (PostgreSQL {})",
                        t.elapsed().as_secs_f64(),
                        stand.postgres_version()
                    ));
                    let next = match activity {
                        Activity::Run => {
                            format!("{part} was restarted and the run went on with the next stack")
                        }
                        Activity::Search => format!(
                            "this stack's search ended there and {part} was restarted for the others"
                        ),
                    };
                    (format!("{what}; {next}"), false)
                }
                Err(err) => (
                    format!("{what}; restarting it failed, so the {noun} stopped: {err:#}"),
                    true,
                ),
            }
        }
        OnPartExit::Restart => (what, false),
        OnPartExit::Stop => (
            format!("{what}; the {noun} stopped there (stand.on_part_exit = \"stop\")"),
            true,
        ),
    };
    PartExitOutcome { message, stop_all }
}
