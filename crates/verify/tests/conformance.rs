//! The conformance suite against real stacks (a `harness = false` test: one throwaway PostgreSQL,
//! seeded once with contract/schema.sql and seed.sql, and one go-pgx serve every test here).
//!
//! - `go_pgx_passes`: the reference stack passes every case.
//! - `broken_fixtures_are_caught`: go-pgx behind a fault-injecting proxy (tests/fixtures/) fails
//!   exactly the cases that concern the fault, and the transparent proxy fails none.
//! - `fairness_declarations_are_measured`: go-pgx's true pool and keep-alive behaviour passes the
//!   `fairness` group; each false declaration (a pre-opened pool, a keep-alive limit, a pool
//!   smaller than the connections it holds) fails its case.
//!
//! Skipped (with a message, exit 0) when `go` or the PostgreSQL server binaries are missing.
//! `cargo test -p ceiling-verify --test conformance -- NAME` runs only the tests whose name
//! contains NAME.

#[path = "fixtures/broken_proxy.rs"]
mod broken_proxy;
mod support;

use broken_proxy::{Fault, Proxy};
use ceiling_verify::{
    case_names, render_text, verify, FairnessExpect, PoolExpect, VerifyConfig, VerifyReport,
};
use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::time::Instant;
use support::Env;

/// What go-pgx's stack.toml declares, for the pool the harness starts it with (64, lazy).
fn go_pgx_fairness() -> FairnessExpect {
    FairnessExpect {
        pool: Some(PoolExpect {
            size: 64,
            open_at_start: 0,
        }),
        keep_alive_max_requests: 0,
    }
}

fn run_verify(env: &Env, url: &str) -> VerifyReport {
    run_verify_with(env, url, Some(go_pgx_fairness()), &[])
}

fn run_verify_with(
    env: &Env,
    url: &str,
    fairness: Option<FairnessExpect>,
    only: &[&str],
) -> VerifyReport {
    let mut cfg = VerifyConfig::new(url, env.db());
    cfg.fairness = fairness;
    cfg.only = only.iter().map(|s| s.to_string()).collect();
    let t0 = Instant::now();
    let report = verify(&cfg).unwrap_or_else(|e| panic!("verify against {url} could not run: {e}"));
    eprintln!(
        "  verify {url}: {} passed, {} failed in {:.1} s",
        report.passed(),
        report.failed(),
        t0.elapsed().as_secs_f64()
    );
    report
}

fn go_pgx_passes(env: &mut Env) {
    let report = run_verify(env, &env.go_url());
    if !report.ok() {
        eprintln!("{}", render_text(&report));
    }
    assert_eq!(report.cases.len(), case_names().len(), "every case ran");
    let failed: Vec<&str> = report.failures().map(|c| c.name.as_str()).collect();
    assert!(failed.is_empty(), "go-pgx failed {failed:?}");
    // statements were really counted: the sql cases saw the contract's SQL
    let get = report.case("sql-status-get").unwrap();
    assert_eq!(get.statements_seen.len(), 1, "{get:?}");
    assert_eq!(
        get.statements_seen[0].query,
        "SELECT id, status, updated_at FROM status WHERE id = $1"
    );
    let tr = report.case("transfer").unwrap();
    assert!(
        tr.detail.contains("all written by one transaction"),
        "{}",
        tr.detail
    );
    // a JSON report round-trips
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(serde_json::from_str::<VerifyReport>(&json).unwrap(), report);
}

fn broken_fixtures_are_caught(env: &mut Env) {
    // (fault, the cases that must fail, cases that may also fail)
    let fixtures: [(Fault, &[&str], &[&str]); 7] = [
        (Fault::None, &[], &[]),
        (
            Fault::NPlusOne,
            &["sql-status-batch", "sql-status-batch-repeat"],
            &[],
        ),
        (Fault::BadUuid500, &["status-get-bad-uuid"], &[]),
        (
            Fault::MissingField,
            &["status-get", "status-get-uppercase"],
            &[],
        ),
        (Fault::Cache, &["sql-status-get-repeat"], &[]),
        (Fault::PhantomTransfers, &["transfer-burst"], &[]),
        // check-then-update outside a transaction may also overdraw under the burst (500s)
        (Fault::NoTransaction, &["transfer"], &["transfer-burst"]),
    ];
    let mut wrong = Vec::new();
    for (fault, want, may) in fixtures {
        assert!(env.go_alive(), "go-pgx died");
        let proxy = Proxy::start(fault, &env.go_url(), &env.db());
        // the proxy's own database connections would count as the stack's: no fairness group
        let report = run_verify_with(env, &proxy.url, None, &[]);
        drop(proxy);
        let got: BTreeSet<&str> = report
            .failures()
            .map(|c| c.name.as_str())
            .filter(|n| !may.contains(n))
            .collect();
        let want: BTreeSet<&str> = want.iter().copied().collect();
        if got == want {
            for c in report.failures() {
                eprintln!(
                    "  {fault:?} caught by {}: {}",
                    c.name,
                    c.detail.lines().next().unwrap_or("")
                );
            }
        } else {
            eprintln!("{}", render_text(&report));
            wrong.push(format!("{fault:?}: failed {got:?}, want exactly {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn fairness_declarations_are_measured(env: &mut Env) {
    // first, while go-pgx's lazy pool holds at most the health check's connection
    let lazy = run_verify_with(
        env,
        &env.go_url(),
        Some(FairnessExpect {
            pool: Some(PoolExpect {
                size: 64,
                open_at_start: 64,
            }),
            keep_alive_max_requests: 0,
        }),
        &["fairness/pool-open-at-start"],
    );
    let c = lazy.case("pool-open-at-start").unwrap();
    assert!(
        !c.passed && c.detail.contains("declares 64 opened up front"),
        "{}",
        c.detail
    );
    let truth = run_verify_with(env, &env.go_url(), Some(go_pgx_fairness()), &["fairness"]);
    if !truth.ok() {
        eprintln!("{}", render_text(&truth));
    }
    assert!(truth.ok(), "go-pgx's true declaration failed");
    assert_eq!(truth.cases.len(), 3, "{truth:?}");
    let ka = truth.case("keep-alive-limit").unwrap();
    assert!(ka.detail.contains("never closed"), "{}", ka.detail);
    // each false declaration is caught by its own case
    let lies: [(&str, FairnessExpect, &str); 2] = [
        (
            "keep-alive-limit",
            FairnessExpect {
                keep_alive_max_requests: 100,
                ..go_pgx_fairness()
            },
            "never closed; the stack declares a limit of 100",
        ),
        (
            // the truth run's burst left more than one connection open in pgxpool
            "pool-bounded",
            FairnessExpect {
                pool: Some(PoolExpect {
                    size: 1,
                    open_at_start: 0,
                }),
                keep_alive_max_requests: 0,
            },
            "more than the pool size 1",
        ),
    ];
    for (case, lie, says) in lies {
        let r = run_verify_with(
            env,
            &env.go_url(),
            Some(lie),
            &[&format!("fairness/{case}")],
        );
        let c = r.case(case).unwrap();
        assert!(!c.passed && c.detail.contains(says), "{case}: {}", c.detail);
    }
    // without a declaration the group does not run
    let none = run_verify_with(env, &env.go_url(), None, &["fairness"]);
    assert!(none.cases.is_empty(), "{none:?}");
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    type Test = (&'static str, fn(&mut Env));
    // fairness first: its pool-open-at-start lie needs a go-pgx whose lazy pool is still empty
    let tests: [Test; 3] = [
        (
            "fairness_declarations_are_measured",
            fairness_declarations_are_measured,
        ),
        ("go_pgx_passes", go_pgx_passes),
        ("broken_fixtures_are_caught", broken_fixtures_are_caught),
    ];
    let selected: Vec<_> = tests
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    if selected.is_empty() {
        println!(
            "\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; {} filtered out\n",
            tests.len()
        );
        return;
    }
    let t0 = Instant::now();
    let mut env = match std::panic::catch_unwind(Env::start) {
        Ok(Ok(env)) => env,
        Ok(Err(why)) => {
            for (name, _) in &selected {
                println!("test {name} ... ignored ({why})");
            }
            eprintln!("skipping the conformance tests: {why}");
            println!(
                "\ntest result: ok. 0 passed; 0 failed; {} ignored; 0 measured; 0 filtered out\n",
                selected.len()
            );
            return;
        }
        Err(_) => {
            println!("\ntest result: FAILED. 0 passed; {} failed; 0 ignored; 0 measured; 0 filtered out\n", selected.len());
            std::process::exit(101);
        }
    };
    let mut failed = Vec::new();
    for (name, f) in &selected {
        let t = Instant::now();
        let ok = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut env))).is_ok();
        println!(
            "test {name} ... {} ({:.1} s)",
            if ok { "ok" } else { "FAILED" },
            t.elapsed().as_secs_f64()
        );
        if !ok {
            failed.push(*name);
        }
    }
    drop(env); // stops go-pgx and PostgreSQL by PID, removes the directory
    let passed = selected.len() - failed.len();
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.1}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        tests.len() - selected.len(),
        t0.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        std::process::exit(101);
    }
}
