//! `ceiling claims`: every source's claims (`plans/published/claims/*.toml`) judged against the
//! latest runs in `results/` (and the digests in `docs/evidence/`) that can answer them;
//! `--write docs/claims.md` regenerates the ledger and keeps a digest of every run it cites.

use anyhow::Context;
use ceiling_compare::claims::{
    changed_verdicts, evaluate, keep_evidence, load_claims, load_evidence_runs, load_ledger_runs,
    ClaimsFile,
};
use ceiling_lab::repo_root;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ceiling claims`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ceiling claims                                  (print the ledger from the runs in results/)
  ceiling claims --write docs/claims.md
  ceiling claims --source 000,003 --json")]
pub struct ClaimsArgs {
    /// Where the runs are: every `*/run.json` under it is read.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// The ledger's evidence: a digest of each run it cites (`<run-id>.json`), read beside
    /// `--results` (a run in both is taken from `--results`) and rewritten by `--write`.
    #[arg(long, default_value = "docs/evidence")]
    pub evidence: PathBuf,
    /// Write the Markdown ledger to this file instead of printing it, and keep `--evidence`
    /// holding a digest of every run it cites (and, for the whole ledger, nothing else).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Only these sources (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub source: Vec<String>,
    /// Print the verdicts as JSON.
    #[arg(long, conflicts_with = "write")]
    pub json: bool,
}

/// Runs `ceiling claims`.
pub fn run(a: ClaimsArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let dir = root.join("plans/published/claims");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut files: Vec<ClaimsFile> = Vec::new();
    for p in &paths {
        let f = load_claims(p)?;
        if a.source.is_empty() || a.source.contains(&f.source) {
            files.push(f);
        }
    }
    let ledger = load_ledger_runs(&a.results, &a.evidence);
    eprintln!(
        "claims: {} sources, {} runs in {} and {} more from the digests in {}",
        files.len(),
        ledger.from_results,
        a.results.display(),
        ledger.from_evidence,
        a.evidence.display(),
    );
    for why in &ledger.unreadable {
        eprintln!("claims: left out, could not be read: {why}");
    }
    let runs = ledger.runs;
    let judged: Vec<_> = files
        .into_iter()
        .map(|f| {
            let r = evaluate(&f, &runs);
            (f, r)
        })
        .collect();
    // what the runs at hand change against the ledger as its evidence gives it
    let before = load_evidence_runs(&a.evidence).runs;
    let changes: Vec<_> = judged
        .iter()
        .flat_map(|(f, now)| changed_verdicts(&evaluate(f, &before), now))
        .collect();
    if changes.is_empty() {
        eprintln!(
            "claims: every verdict as the ledger's evidence ({}) gives it",
            a.evidence.display()
        );
    } else {
        eprintln!(
            "claims: {} verdicts differ from the ledger's evidence ({}):",
            changes.len(),
            a.evidence.display()
        );
        for c in &changes {
            eprintln!(
                "  {}: {} → {}{}",
                c.id,
                c.from.map_or("not in the ledger", |v| v.label()),
                c.to.label(),
                c.run
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
    }
    if a.json {
        let all: Vec<_> = judged.iter().flat_map(|(_, r)| r.iter()).collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    let md = ceiling_report::claims::render_markdown(&judged);
    match &a.write {
        Some(path) => {
            std::fs::write(path, &md).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("claims: wrote {}", path.display());
            let kept = keep_evidence(&judged, &runs, &a.evidence, a.source.is_empty())
                .with_context(|| format!("keeping the evidence in {}", a.evidence.display()))?;
            eprintln!(
                "claims: evidence in {}: {} digests written, {} removed (no claim cites them)",
                a.evidence.display(),
                kept.written.len(),
                kept.removed.len()
            );
        }
        None => print!("{md}"),
    }
    Ok(ExitCode::SUCCESS)
}
