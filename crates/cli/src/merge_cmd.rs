//! `ceiling merge`: the results of several `ceiling load --shard I/N` processes merged exactly —
//! every per-second histogram of every input added into one per request name and one overall
//! (HdrHistogram addition: the merged percentiles are those of all the requests together, never
//! an average of percentiles), counts summed, and any generator-bound input named.

use anyhow::{bail, Context};
use ceiling_lab::load_report::Percentiles;
use clap::Args;
use hdrhistogram::Histogram;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ceiling merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Output directories of `ceiling load --out` (each holding latency.hlog and summary.json).
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    /// Also write the merged summary here as merged.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct InputSummary {
    dir: String,
    completed: u64,
    offered: u64,
    generator_bound: bool,
    verdict: String,
}

#[derive(serde::Serialize)]
struct TagMerged {
    name: String,
    requests: u64,
    latency: Percentiles,
}

#[derive(serde::Serialize)]
struct Merged {
    method: &'static str,
    inputs: Vec<InputSummary>,
    offered: u64,
    completed: u64,
    errors: BTreeMap<String, u64>,
    error_rate: f64,
    latency: Percentiles,
    per_request: Vec<TagMerged>,
    generator_bound: bool,
    verdict: String,
}

fn new_hist() -> Histogram<u64> {
    // the engine's own bounds: 1 µs … 1 h, 3 significant digits
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

/// Runs `ceiling merge`.
pub fn run(a: MergeArgs) -> anyhow::Result<ExitCode> {
    let mut per_tag: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut total = new_hist();
    let mut inputs = Vec::new();
    let (mut offered, mut completed) = (0u64, 0u64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for d in &a.dirs {
        let hp = d.join("latency.hlog");
        let bytes = std::fs::read(&hp).with_context(|| {
            format!(
                "reading {} (an output of `ceiling load --out`?)",
                hp.display()
            )
        })?;
        let mut bad = None;
        ceiling_metrics::visit_hlog(&bytes, |tag, _, _, h| {
            let e = per_tag
                .entry(tag.unwrap_or("").to_string())
                .or_insert_with(new_hist);
            if let Err(x) = e.add(h).and_then(|_| total.add(h)) {
                bad.get_or_insert(format!("{x:?}"));
            }
        })
        .map_err(|e| anyhow::anyhow!("{}: {e}", hp.display()))?;
        if let Some(b) = bad {
            bail!("{}: a histogram could not be added: {b}", hp.display());
        }
        let sp = d.join("summary.json");
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(&sp).with_context(|| format!("reading {}", sp.display()))?,
        )
        .with_context(|| format!("{}: not JSON", sp.display()))?;
        let n = |k: &str| s.get(k).and_then(Value::as_u64).unwrap_or(0);
        offered += n("offered");
        completed += n("completed");
        if let Some(m) = s.get("errors").and_then(Value::as_object) {
            for (k, v) in m {
                *errors.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
            }
        }
        inputs.push(InputSummary {
            dir: d.display().to_string(),
            completed: n("completed"),
            offered: n("offered"),
            generator_bound: s
                .get("generator_bound")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            verdict: s
                .get("verdict")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        });
    }
    let gb: Vec<&str> = inputs
        .iter()
        .filter(|i| i.generator_bound)
        .map(|i| i.dir.as_str())
        .collect();
    let err_n: u64 = errors.values().sum();
    let m = Merged {
        method: "exact: every input's per-second HdrHistograms added (histogram addition), never averaged percentiles",
        offered,
        completed,
        error_rate: if completed > 0 {
            err_n as f64 / completed as f64
        } else {
            0.0
        },
        errors,
        latency: Percentiles::of(&total),
        per_request: per_tag
            .iter()
            .map(|(name, h)| TagMerged {
                name: name.clone(),
                requests: h.len(),
                latency: Percentiles::of(h),
            })
            .collect(),
        generator_bound: !gb.is_empty(),
        verdict: if gb.is_empty() {
            format!("{} inputs merged; no generator was the limit", inputs.len())
        } else {
            format!(
                "INVALID: generator-bound input(s) {} — the merged latency includes their lateness",
                gb.join(", ")
            )
        },
        inputs,
    };
    let text = serde_json::to_string_pretty(&m)?;
    if let Some(o) = &a.out {
        std::fs::create_dir_all(o)?;
        std::fs::write(o.join("merged.json"), &text)?;
    }
    if a.json {
        println!("{text}");
    } else {
        println!(
            "merged {} inputs ({}): {} offered, {} completed, errors {:.2}%",
            m.inputs.len(),
            m.method,
            m.offered,
            m.completed,
            m.error_rate * 100.0
        );
        let l = &m.latency;
        println!(
            "latency from the intended send time: p50 {:.3} ms, p90 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3} ({} requests)",
            l.p50_ms, l.p90_ms, l.p99_ms, l.p999_ms, l.max_ms, l.count
        );
        for t in &m.per_request {
            println!(
                "  {:<16} {:>9} requests  p50 {:.3} ms  p99 {:.3} ms",
                t.name, t.requests, t.latency.p50_ms, t.latency.p99_ms
            );
        }
        println!("{}", m.verdict);
    }
    Ok(if m.generator_bound {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
