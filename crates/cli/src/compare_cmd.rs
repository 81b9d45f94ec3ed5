//! `ceiling compare`: a run beside its source's published tables, or two runs (or two stacks of
//! one run) with significance.

use anyhow::{bail, Context};
use ceiling_compare::published::published_path;
use ceiling_compare::SourceComparison;
use ceiling_records::{RunReport, Series};
use ceiling_report::compare as render;
use ceiling_report::HtmlSection;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `ceiling compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Results directories: one with `--source` or `--stacks`, two to compare B against A; with
    /// `--source`, several runs of one source's plans are set beside its tables together (a
    /// summary table of keep-alive on and off needs a run of each).
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Set the run(s) beside the tables their plans' source published
    /// (plans/published/<source>.toml).
    #[arg(long)]
    pub source: bool,
    /// With --source: the published-tables file to use instead of the plan's.
    #[arg(long, value_name = "FILE", requires = "source")]
    pub published: Option<PathBuf>,
    /// Compare two stacks of one run: `--stacks A,B` (B against A).
    #[arg(long, value_name = "A,B", value_delimiter = ',', num_args = 2)]
    pub stacks: Vec<String>,
    /// Print Markdown.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// CI gate: exit 3 when a figure of B is worse than A's by more than this (`5%`) and the
    /// difference is significant (the ratio's 95% interval excludes 1); 4 when one is worse by
    /// more with no test possible (one value each).
    #[arg(long, value_name = "PERCENT")]
    pub fail_on_regression: Option<String>,
}

fn read_run(dir: &Path) -> anyhow::Result<RunReport> {
    let path = dir.join("run.json");
    ceiling_records::read_run_json(&path).with_context(|| {
        format!(
            "reading {} (is {} a results directory?)",
            path.display(),
            dir.display()
        )
    })
}

/// The comparison of a run with its plan's source, when the plan names a source and its
/// published tables are found (`Ok(None)` when the plan has no source or no file exists).
pub fn source_comparison(
    report: &RunReport,
    file: Option<&Path>,
) -> anyhow::Result<Option<SourceComparison>> {
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => {
            let Some(source) = &report.plan.source else {
                return Ok(None);
            };
            let p = published_path(Path::new(&report.plan.file), source);
            if !p.exists() {
                return Ok(None);
            }
            p
        }
    };
    let published = ceiling_compare::load_published(&path)?;
    Ok(Some(ceiling_compare::compare_with_source(
        report, &published,
    )))
}

/// Writes a run's reports (see [`ceiling_report::write_all`]), with a section comparing the run
/// to its source's published tables in report.html when the plan has them. A published file
/// that cannot be read does not stop the reports: the problem is printed instead.
pub fn write_reports(
    dir: &Path,
    report: &RunReport,
    series: &Series,
) -> std::io::Result<Vec<PathBuf>> {
    let extras = match source_comparison(report, None) {
        Ok(Some(c)) => vec![HtmlSection {
            id: "source".into(),
            title: format!("Source {}", c.source),
            html: render::source_html(&c),
        }],
        Ok(None) => vec![],
        Err(e) => {
            eprintln!("warning: the comparison with the source is left out of report.html: {e:#}");
            vec![]
        }
    };
    ceiling_report::write_all_with(dir, report, series, &extras)
}

/// Runs `ceiling compare`.
pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    if a.source {
        if !a.stacks.is_empty() {
            bail!("--source sets runs beside their source's tables: leave out --stacks");
        }
        let reports = a
            .runs
            .iter()
            .map(|d| read_run(d))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let first = &reports[0];
        for (d, r) in a.runs.iter().zip(&reports).skip(1) {
            if r.plan.source != first.plan.source {
                bail!(
                    "{}: plan `{}` names source {}, but {} names source {} — --source sets runs of one source side by side",
                    d.display(),
                    r.plan.name,
                    r.plan.source.as_deref().unwrap_or("(none)"),
                    a.runs[0].display(),
                    first.plan.source.as_deref().unwrap_or("(none)")
                );
            }
        }
        let path = match &a.published {
            Some(f) => f.clone(),
            None => {
                let Some(source) = &first.plan.source else {
                    bail!(
                        "{}: plan `{}` names no source — nothing to compare it with (pass --published FILE to name a published-tables file)",
                        a.runs[0].display(),
                        first.plan.name
                    );
                };
                let p = published_path(Path::new(&first.plan.file), source);
                if !p.exists() {
                    bail!(
                        "{}: plan `{}` names source {source}, but {} does not exist — nothing to compare it with (pass --published FILE to name a published-tables file)",
                        a.runs[0].display(),
                        first.plan.name,
                        p.display()
                    );
                }
                p
            }
        };
        let published = ceiling_compare::load_published(&path)?;
        let refs: Vec<&RunReport> = reports.iter().collect();
        let c = ceiling_compare::compare_runs_with_source(&refs, &published);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&c)?);
        } else {
            print!("{}", render::source_text(&c, a.markdown));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cmp = match (a.runs.len(), a.stacks.len()) {
        (1, 2) => {
            let r = read_run(&a.runs[0])?;
            ceiling_compare::compare_stacks(&r, &a.stacks[0], &a.stacks[1])?
        }
        (2, 0) => {
            let (x, y) = (read_run(&a.runs[0])?, read_run(&a.runs[1])?);
            ceiling_compare::compare_runs(&x, &y)?
        }
        (n, k) if n >= 2 && k > 0 => {
            bail!("--stacks compares two stacks of one run: give one results directory")
        }
        _ => bail!(
            "give two results directories (B against A), one with --stacks A,B, or one or more with --source"
        ),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else {
        print!("{}", render::runs_text(&cmp, a.markdown));
    }
    match &a.fail_on_regression {
        Some(t) => {
            let threshold = regression_threshold(t)?;
            let results = ceiling_compare::gate::regressions(&cmp, threshold);
            Ok(crate::gates::finish(&results, 0))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `--fail-on-regression`'s value: `5%` or a fraction `0.05`, between 0 and 100%.
fn regression_threshold(t: &str) -> anyhow::Result<f64> {
    let v = match t.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|x| x / 100.0),
        None => t.trim().parse::<f64>().ok(),
    };
    match v {
        Some(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => bail!(
            "--fail-on-regression `{t}`: give a percentage below 100 (`5%`) or a fraction (`0.05`)"
        ),
    }
}
