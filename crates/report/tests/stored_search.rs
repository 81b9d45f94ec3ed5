//! A stored search read back by a newer ceiling: the failed low-rate checks of
//! spring-webflux-r2dbc's search of 2026-11-26 (docs/benchmarks.md §29), recorded before checks
//! were attributed, are explained from the files they left. The truth was established by hand
//! that day from the same signals: the R2DBC pool had 64 of 64 connections in use and hundreds
//! of requests waiting while PostgreSQL had no active backend and the stack idled — connections
//! held without work in the database.
//!
//! The fixture is that run's run.json (the Spring MVC stack removed) and the four failed checks'
//! `timeseries.csv` and `signals.csv`, unedited.

use ceiling_analyze::StopReason;
use std::path::{Path, PathBuf};

/// A fresh copy of the fixture (`ceiling report` rewrites files in the directory it reads).
fn fixture() -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webflux-wedge");
    let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join("webflux-wedge");
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(&from, &to);
    to
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn the_wedged_webflux_checks_are_explained_from_their_files() {
    let dir = fixture();
    let mut report = ceiling_records::read_run_json(&dir.join("run.json")).unwrap();
    let search = || report_search(&report);
    assert!(
        matches!(&search().stop, StopReason::NotRecovered { why: None, .. }),
        "the stored search predates the checks' why: {:?}",
        search().stop
    );
    assert_eq!(
        ceiling_records::attribute_stored_checks(&dir, &mut report),
        4
    );
    let StopReason::NotRecovered { why: Some(why), .. } = &report_search(&report).stop else {
        panic!("{:?}", report_search(&report).stop);
    };
    assert!(
        why.starts_with("nothing completed in the 2 s window"),
        "{why}"
    );
    assert!(
        why.contains("likely the stack's DB pool is exhausted"),
        "{why}"
    );
    assert!(why.contains("without work in the database"), "{why}");
    for v in report_search(&report)
        .probes
        .iter()
        .filter(|v| v.kind == ceiling_analyze::ProbeKind::Check && v.failed())
    {
        let w = v.why.as_deref().expect("every failed check attributed");
        assert!(w.contains("DB pool is exhausted"), "{w}");
        assert!(!w.contains("host stall"), "the host answered promptly: {w}");
    }
    // read back again: nothing left to do
    assert_eq!(
        ceiling_records::attribute_stored_checks(&dir, &mut report),
        0
    );
}

fn report_search(r: &ceiling_records::RunReport) -> &ceiling_analyze::SearchOutcome {
    r.stacks[0].search.as_ref().expect("a search")
}
