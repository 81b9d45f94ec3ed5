//! `--assert` on `run`, `search` and `load`, and the exit codes they share.
//!
//! Exit codes (docs/commands.md "Exit codes"): 0 success; 1 the measurement is incomplete (a stack died, a
//! part of the stand exited, nothing reached the service); 2 an error stopped the command (bad
//! input — a plan, a flag, a gate that does not parse — or a stand that could not start; the
//! message says which); 3 an `--assert` gate failed; 4 no gate failed but one was inconclusive
//! (a ceiling that is only a lower bound, a bar inside the interval, a rate no shelf ran at, a
//! generator-bound load); 130 interrupted. An incomplete measurement or an interrupt outranks a
//! gate.

use ceiling_compare::gate::{self, Gate, GateResult};
use ceiling_records::RunReport;
use std::process::ExitCode;

/// The `--assert` flag: one gate per use.
pub const HELP: &str = "CI gate, repeatable: [STACK:]METRIC OP VALUE[@RATE] with METRIC ceiling, p50, p90, p95, p99, p99.9, errors, rps or cpu_us — e.g. 'ceiling>=5000', 'p99<=20ms@3000', 'errors<1%@3000'; exits 3 when one fails, 4 when one cannot be judged";

/// Parses every `--assert` before anything runs (a typo is a usage error, not a failed gate).
pub fn parse(texts: &[String]) -> anyhow::Result<Vec<Gate>> {
    texts
        .iter()
        .map(|t| t.parse::<Gate>().map_err(anyhow::Error::msg))
        .collect()
}

/// Prints each judged gate (stderr, one line each) and returns the exit code: `code` when the
/// command itself did not succeed, else the gates' ([`gate::exit_code`]) or success.
pub fn finish(results: &[GateResult], code: u8) -> ExitCode {
    for r in results {
        eprintln!("assert: {}", r.line());
    }
    if code != 0 {
        return ExitCode::from(code);
    }
    ExitCode::from(gate::exit_code(results).unwrap_or(0))
}

/// [`finish`] for a run's or search's report.
pub fn finish_report(gates: &[Gate], report: &RunReport, code: u8) -> ExitCode {
    if gates.is_empty() {
        return ExitCode::from(code);
    }
    finish(&gate::judge_report(gates, report), code)
}

/// Starts the live metrics endpoint when `--metrics-listen` asks (`ceiling_lab::live`) and says
/// where it is.
pub fn metrics_listen(addr: Option<&str>) -> anyhow::Result<()> {
    if let Some(addr) = addr {
        let at = ceiling_lab::live::serve(addr)?;
        eprintln!("metrics: http://{at}/metrics (the latest second, Prometheus text format)");
    }
    Ok(())
}
