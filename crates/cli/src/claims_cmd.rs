//! `ceiling claims`: every source's claims (`plans/published/claims/*.toml`) judged against the
//! latest runs in `results/` that can answer them; `--write docs/claims.md` regenerates the ledger.

use anyhow::Context;
use ceiling_compare::claims::{evaluate, load_claims, render_markdown, ClaimsFile};
use ceiling_lab::repo_root;
use ceiling_report::RunReport;
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
    /// Write the Markdown ledger to this file instead of printing it.
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
    let mut runs: Vec<RunReport> = Vec::new();
    let mut unreadable = 0;
    if let Ok(entries) = std::fs::read_dir(&a.results) {
        for e in entries.flatten() {
            let path = e.path().join("run.json");
            if path.is_file() {
                match ceiling_report::read_run_json(&path) {
                    Ok(r) => runs.push(r),
                    Err(_) => unreadable += 1,
                }
            }
        }
    }
    eprintln!(
        "claims: {} sources, {} runs in {}{}",
        files.len(),
        runs.len(),
        a.results.display(),
        if unreadable > 0 {
            format!(" ({unreadable} run.json files could not be read and were left out)")
        } else {
            String::new()
        }
    );
    let judged: Vec<_> = files
        .into_iter()
        .map(|f| {
            let r = evaluate(&f, &runs);
            (f, r)
        })
        .collect();
    if a.json {
        let all: Vec<_> = judged.iter().flat_map(|(_, r)| r.iter()).collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    let md = render_markdown(&judged);
    match &a.write {
        Some(path) => {
            std::fs::write(path, &md).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("claims: wrote {}", path.display());
        }
        None => print!("{md}"),
    }
    Ok(ExitCode::SUCCESS)
}
