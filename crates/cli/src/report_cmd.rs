//! `ceiling report DIR`: rebuild a run's reports from its raw files.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ceiling report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A results directory (results/<run-id>/) holding run.json.
    pub dir: PathBuf,
    /// Print summary.md instead of the terminal table.
    #[arg(long)]
    pub markdown: bool,
}

/// Runs `ceiling report`.
pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = a.dir.join("run.json");
    let mut report = ceiling_records::read_run_json(&path).with_context(|| {
        format!(
            "reading {} (is {} a results directory?)",
            path.display(),
            a.dir.display()
        )
    })?;
    let series = ceiling_records::load_series(&a.dir, &report);
    // attribution is a pure function of the stored series: recompute it, so run.json and the
    // reports follow the current rules
    let signals = ceiling_records::load_signals(&a.dir, &report);
    ceiling_records::recompute_attribution(&mut report, &series, &signals);
    // a stored search's failed checks (attributed since 2026-11-26) and its stop's why
    ceiling_records::attribute_stored_checks(&a.dir, &mut report);
    // …and so are the warnings derived from the shelves (repetition drift, bracketing…)
    for st in &mut report.stacks {
        st.refresh_derived_warnings();
    }
    // …and the ranking of a search's stacks, from their stored probes
    if !report.ranking.is_empty() {
        let tolerance = report.ranking[0].tolerance;
        report.ranking = ceiling_analyze::rank_searched(&report.stacks, tolerance);
    }
    let files = crate::compare_cmd::write_reports(&a.dir, &report, &series)?;
    if a.markdown {
        println!("{}", ceiling_report::render_summary_md(&report));
    } else {
        println!("{}", ceiling_report::render_terminal(&report));
    }
    eprintln!("rebuilt: {}", crate::run_cmd::file_list(&files));
    Ok(ExitCode::SUCCESS)
}
