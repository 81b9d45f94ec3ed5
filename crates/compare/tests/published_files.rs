//! The repository's own published-tables files: each parses, names plans that exist, and
//! stacks that exist — so a typo in a plan or stack name cannot silently turn a table into
//! "no plan reproduces it" or a row into "ceiling has no such stack".

use ceiling_compare::published::load_published;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_published_file_parses_and_names_real_plans_and_stacks() {
    let dir = repo().join("plans/published");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected a file per source in {}",
        dir.display()
    );
    let mut problems = Vec::new();
    for f in &files {
        let p = match load_published(f) {
            Ok(p) => p,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        if p.source != stem {
            problems.push(format!(
                "{}: source = \"{}\", file is {stem}",
                f.display(),
                p.source
            ));
        }
        for t in &p.tables {
            for r in &t.rows {
                if let Some(plan) = t.row_plan(r) {
                    if !repo().join(format!("plans/{plan}.toml")).exists() {
                        problems.push(format!(
                            "{}: table `{}` row `{}`: plan `{plan}` has no plans/{plan}.toml",
                            f.display(),
                            t.id,
                            r.label
                        ));
                    }
                }
                if let Some(s) = &r.stack {
                    if !repo().join(format!("stacks/{s}/stack.toml")).exists() {
                        problems.push(format!(
                            "{}: table `{}` row `{}`: stack `{s}` has no stacks/{s}/stack.toml",
                            f.display(),
                            t.id,
                            r.label
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
