//! The claims ledger on simulated runs whose figures are known in advance: each kind of check
//! (threshold, ratio, order) holds, does not hold or is not decided exactly where the truth says,
//! and a claim whose run or shelf is missing says so instead of guessing.

use ceiling_compare::claims::{evaluate, ClaimVerdict, ClaimsFile};
use ceiling_records::RunReport;
use common::{fast_and_slow, plan, searched, simulate, CLAIMS};

mod common;

fn verdicts(file: &ClaimsFile, runs: &[RunReport]) -> Vec<(String, ClaimVerdict)> {
    evaluate(file, runs)
        .into_iter()
        .map(|r| (r.id, r.verdict))
        .collect()
}

#[test]
fn each_kind_of_claim_is_judged_where_the_truth_says() {
    let file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    let mut r = fast_and_slow();
    let v = verdicts(&file, std::slice::from_ref(&r));
    assert_eq!(
        v,
        [
            ("slow-fails-3000".to_string(), ClaimVerdict::Holds),
            ("fast-holds-3000".to_string(), ClaimVerdict::Holds),
            ("fast-twice-slow".to_string(), ClaimVerdict::Holds),
            ("fast-first".to_string(), ClaimVerdict::Holds),
            ("no-such-shelf".to_string(), ClaimVerdict::NotTestable),
            ("other-plan".to_string(), ClaimVerdict::NotTestable),
        ]
    );
    let res = evaluate(&file, std::slice::from_ref(&r));
    assert!(
        res[4].ours.contains("hold 1500, hold 3000"),
        "{}",
        res[4].ours
    );
    assert!(
        res[5].ours.contains("no run of plan `never-run`"),
        "{}",
        res[5].ours
    );
    assert_eq!(res[0].run.as_deref(), Some("20261127-000000-gates"));

    // the ratio's interval straddling the claimed 1.5: not decided; below it: does not hold
    r.stacks[0].search = Some(searched("bracketed", 2400.0, Some((1900.0, 2900.0))));
    let v = verdicts(&file, std::slice::from_ref(&r));
    assert_eq!(v[2].1, ClaimVerdict::NotDecided, "{v:?}");
    r.stacks[0].search = Some(searched("narrowed", 1600.0, Some((1550.0, 1650.0))));
    let v = verdicts(&file, std::slice::from_ref(&r));
    assert_eq!(v[2].1, ClaimVerdict::DoesNotHold, "{v:?}");
    // overlapping ceilings: the order is not decided; reversed and apart: it does not hold
    assert_eq!(v[3].1, ClaimVerdict::NotDecided, "{v:?}");
    r.stacks[0].search = Some(searched("narrowed", 1000.0, Some((950.0, 1050.0))));
    let v = verdicts(&file, std::slice::from_ref(&r));
    assert_eq!(v[3].1, ClaimVerdict::DoesNotHold, "{v:?}");

    // every claim gets a verdict, and the untestable statement is kept (the ledger's text:
    // crates/report/tests/comparisons.rs)
    assert_eq!(evaluate(&file, &[r]).len(), 6);
    assert_eq!(file.untestable.len(), 1);
}

#[test]
fn two_searched_ceilings_are_read_as_the_search_ranks_them() {
    // Source 002's search of 2026-11-29: Níma 8,434 (8,000–9,195) over WebFlux 1,722
    // (1,684–2,000) against "4.5×, within 20%". Read as the search ranks them (log half-widths,
    // each side of its own interval: 4.18–5.36) the ratio lies within 3.6–5.4, so it holds; the
    // two intervals read as symmetric normals (±7.1% and ±9.2%: 4.33–5.47) would have called
    // it not decided, WebFlux's interval being four times longer above its estimate than below.
    const CLAIM: &str = r#"
source = "999"
seed = "999_x.txt"
[[claims]]
id = "fast-4-5x-slow"
text = "fast serves about 4.5 times what slow serves"
line = 1
plan = "gates"
kind = "ratio"
a = "fast"
b = "slow"
metric = "ceiling"
op = "~"
value = 4.5
within = 0.2
"#;
    let file: ClaimsFile = toml::from_str(CLAIM).unwrap();
    let mut r = fast_and_slow();
    r.stacks[0].search = Some(searched("bracketed", 8434.0, Some((8000.0, 9195.0))));
    r.stacks[1].search = Some(searched("bracketed", 1722.0, Some((1684.0, 2000.0))));
    let res = evaluate(&file, std::slice::from_ref(&r));
    assert_eq!(res[0].verdict, ClaimVerdict::Holds, "{}", res[0].ours);
    assert!(res[0].ours.contains("(95% CI 4.18–5.3"), "{}", res[0].ours);
    // and a claim the interval does not fit is still refused: 6.0 ± 20% is 4.8–7.2
    let file: ClaimsFile = toml::from_str(&CLAIM.replace("value = 4.5", "value = 6.0")).unwrap();
    let res = evaluate(&file, std::slice::from_ref(&r));
    assert_ne!(res[0].verdict, ClaimVerdict::Holds, "{}", res[0].ours);
}

#[test]
fn the_latest_unscaled_run_of_the_plan_answers() {
    let file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    let p = plan();
    let mut old = RunReport::new(&p, "20261101-000000-gates");
    old.stacks.push(simulate(&p, "fast", |_| 50.0));
    old.stacks.push(simulate(&p, "slow", |_| 8.0));
    let mut new = RunReport::new(&p, "20261127-000000-gates");
    new.stacks.push(simulate(&p, "fast", |_| 5.0));
    new.stacks.push(simulate(&p, "slow", |_| 8.0));
    let res = evaluate(&file, &[old.clone(), new.clone()]);
    assert_eq!(res[1].run.as_deref(), Some("20261127-000000-gates"));
    assert_eq!(res[1].verdict, ClaimVerdict::Holds);
    // a scaled run answers only when no full-length one does, and says so
    let scaled_plan = p.scaled(0.5);
    let mut scaled = RunReport::new(&scaled_plan, "20261128-000000-gates");
    scaled.stacks = new.stacks.clone();
    let res = evaluate(&file, &[old, scaled.clone()]);
    assert_eq!(res[1].run.as_deref(), Some("20261101-000000-gates"));
    let res = evaluate(&file, &[scaled]);
    assert!(
        res[1].notes.iter().any(|n| n.contains("SCALED")),
        "{:?}",
        res[1].notes
    );
}

/// A claim's `also` plans answer it as its own plan does (a plan of the levels the claims read,
/// at full length, beside the whole ladder): the latest unscaled run of either first — and a
/// run of any other plan never.
#[test]
fn a_run_of_an_also_plan_answers_before_a_scaled_run_of_the_plan() {
    let mut file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    let p = plan();
    // the plan itself ran only scaled, where fast is the slower one (1.2 s at 3000)
    let mut scaled = RunReport::new(&p.scaled(0.5), "20261128-000000-gates");
    scaled.stacks.push(simulate(
        &p,
        "fast",
        |r| if r > 2000.0 { 1200.0 } else { 5.0 },
    ));
    scaled.stacks.push(simulate(&p, "slow", |_| 8.0));
    // the levels' plan ran at full length, earlier, with the truth: fast at 5 ms
    let mut levels = p.clone();
    levels.name = "gates-levels".into();
    let mut full = RunReport::new(&levels, "20261127-000000-gates-levels");
    full.stacks.push(simulate(&levels, "fast", |_| 5.0));
    full.stacks.push(simulate(&levels, "slow", |_| 8.0));
    // and an unrelated plan's newer full-length run with the same stacks
    let mut other = p.clone();
    other.name = "other".into();
    let mut unrelated = RunReport::new(&other, "20261129-000000-other");
    unrelated.stacks = scaled.stacks.clone();
    let runs = [scaled, full, unrelated];
    let fast = |res: &[ceiling_compare::claims::ClaimResult]| {
        let r = res.iter().find(|r| r.id == "fast-holds-3000").unwrap();
        (r.run.clone().unwrap_or_default(), r.verdict)
    };
    // without `also`: the plan's own (scaled) run, the wrong figure it holds
    assert_eq!(
        fast(&evaluate(&file, &runs)),
        ("20261128-000000-gates".into(), ClaimVerdict::DoesNotHold)
    );
    for c in &mut file.claims {
        c.also = vec!["gates-levels".into()];
    }
    assert_eq!(
        fast(&evaluate(&file, &runs)),
        ("20261127-000000-gates-levels".into(), ClaimVerdict::Holds)
    );
    // with no run of either, the message names both plans
    let res = evaluate(&file, &runs[2..]);
    let r = res.iter().find(|r| r.id == "fast-holds-3000").unwrap();
    assert_eq!(r.verdict, ClaimVerdict::NotTestable);
    assert!(r.ours.contains("`gates` or `gates-levels`"), "{}", r.ours);
}

/// What `ceiling claims` says a new run changes: exactly the claims whose verdict moved, each
/// with where it came from and the run that moved it; a figure that moves without its verdict is
/// no change, and a claim new to its file is said to be so.
#[test]
fn the_verdicts_a_new_run_changes_are_exactly_those_that_moved() {
    use ceiling_compare::claims::changed_verdicts;
    let file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    let old = fast_and_slow();
    let before = evaluate(&file, std::slice::from_ref(&old));
    // the same judgement: nothing moved
    assert!(changed_verdicts(&before, &before).is_empty());
    // a newer run in which fast takes 20 ms at every rate: "fast serves 3000 within 10 ms" no
    // longer holds; slow's verdicts stay as they were
    let p = plan();
    let mut new = RunReport::new(&p, "20261128-000000-gates");
    new.stacks.push(simulate(&p, "fast", |_| 20.0));
    new.stacks.push(old.stacks[1].clone());
    new.stacks[0].search = old.stacks[0].search.clone();
    let after = evaluate(&file, &[old.clone(), new]);
    let moved = changed_verdicts(&before, &after);
    let expect: Vec<(String, ClaimVerdict)> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b.verdict != a.verdict)
        .map(|(_, a)| (a.id.clone(), a.verdict))
        .collect();
    assert!(
        expect
            .iter()
            .any(|(id, v)| id == "fast-holds-3000" && *v == ClaimVerdict::DoesNotHold),
        "{expect:?}"
    );
    assert!(
        !expect.iter().any(|(id, _)| id == "slow-fails-3000"),
        "{expect:?}"
    );
    assert_eq!(
        moved
            .iter()
            .map(|c| (c.id.clone(), c.to))
            .collect::<Vec<_>>(),
        expect
    );
    let c = moved.iter().find(|c| c.id == "fast-holds-3000").unwrap();
    assert_eq!(c.from, Some(ClaimVerdict::Holds));
    assert_eq!(c.run.as_deref(), Some("20261128-000000-gates"));
    // a claim the ledger did not have
    let moved = changed_verdicts(&before[1..], &before);
    assert_eq!(moved.len(), 1);
    assert_eq!(
        (moved[0].id.as_str(), moved[0].from),
        (before[0].id.as_str(), None)
    );
}

/// The ledger's evidence: a digest of each cited run judges every claim exactly as the full run
/// does, so a checkout without `results/` regenerates the same ledger; the evidence directory
/// holds the cited runs and, pruned, nothing else.
#[test]
fn a_ledger_regenerates_from_its_evidence_alone() {
    use ceiling_compare::claims::{keep_evidence, load_ledger_runs};
    let file: ClaimsFile = toml::from_str(CLAIMS).unwrap();
    let p = plan();
    let r = fast_and_slow();
    assert!(
        r.stacks[0]
            .shelves
            .iter()
            .any(|s| !s.per_request.is_empty()),
        "the simulated run must carry the bulk a digest drops, or this test proves nothing"
    );

    let dir = std::env::temp_dir().join(format!("ceiling-claims-evidence-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (results, evidence) = (dir.join("results"), dir.join("evidence"));
    std::fs::create_dir_all(results.join(&r.run_id)).unwrap();
    std::fs::write(results.join(&r.run_id).join("run.json"), r.to_json()).unwrap();
    // a stray digest no claim cites, and an unreadable file
    std::fs::create_dir_all(&evidence).unwrap();
    let mut stray = RunReport::new(&p, "20250101-000000-gates");
    stray.stacks = r.stacks.clone();
    std::fs::write(evidence.join("20250101-000000-gates.json"), stray.to_json()).unwrap();
    std::fs::write(evidence.join("broken.json"), "{").unwrap();

    let full = load_ledger_runs(&results, &evidence);
    assert_eq!((full.from_results, full.from_evidence), (1, 1));
    assert_eq!(full.unreadable.len(), 1, "{:?}", full.unreadable);
    let judged = vec![(file.clone(), evaluate(&file, &full.runs))];
    let ledger_full = serde_json::to_string(&judged[0].1).unwrap();

    // a subset (`--source`) writes its digests and removes nothing
    let kept = keep_evidence(&judged, &full.runs, &evidence, false).unwrap();
    assert_eq!(kept.written, ["20261127-000000-gates"]);
    assert!(kept.removed.is_empty());
    assert!(evidence.join("20250101-000000-gates.json").is_file());
    // the whole ledger prunes what no claim cites; writing again changes nothing
    let kept = keep_evidence(&judged, &full.runs, &evidence, true).unwrap();
    assert!(kept.written.is_empty(), "{kept:?}");
    assert_eq!(kept.removed, ["20250101-000000-gates", "broken"]);
    let again = keep_evidence(&judged, &full.runs, &evidence, true).unwrap();
    assert_eq!(again, Default::default());

    // the digest is smaller, says what it is, and judges the same
    let digest_text = std::fs::read_to_string(evidence.join("20261127-000000-gates.json")).unwrap();
    assert!(
        digest_text.len() < r.to_json().len(),
        "the digest is not smaller"
    );
    let digest = RunReport::from_json(&digest_text).unwrap();
    assert!(digest
        .stacks
        .iter()
        .all(|a| a.shelves.iter().all(|s| s.per_request.is_empty())));
    assert!(digest
        .warnings
        .iter()
        .any(|w| w.message.contains("a digest of run")));
    assert_eq!(
        digest.digest().to_json(),
        digest.to_json(),
        "digesting a digest changes it"
    );

    // a fresh checkout: no results, the evidence only
    let fresh = load_ledger_runs(&dir.join("no-results"), &evidence);
    assert_eq!((fresh.from_results, fresh.from_evidence), (0, 1));
    let ledger_fresh = serde_json::to_string(&evaluate(&file, &fresh.runs)).unwrap();
    assert_eq!(
        ledger_fresh, ledger_full,
        "the ledger changed when judged on its evidence alone"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A ratio whose denominator is another plan's figure (source 004's keep-alive impact) or
/// another level's (one stack at two levels): each side from its own run and point, both runs
/// cited and kept as evidence, and a missing denominator run said, not guessed.
#[test]
fn a_ratio_across_plans_or_points_takes_each_side_from_its_own_run() {
    use ceiling_compare::claims::keep_evidence;
    const CROSS: &str = r#"
source = "999"
seed = "999_x.txt"

[[claims]]
id = "fast-quarter-of-its-other-plan"
text = "fast's p99 at 1500 is a quarter of what it is in the other plan"
line = 30
plan = "gates"
kind = "ratio"
a = "fast"
b = "fast"
b_plan = "gates-other"
metric = "p99_ms"
point = "hold 1500"
op = "~"
value = 0.25
within = 0.05

[[claims]]
id = "fast-faster-in-the-other-plan"
text = "fast is slower in the other plan"
line = 31
plan = "gates"
kind = "ratio"
a = "fast"
b = "fast"
b_plan = "gates-other"
metric = "p99_ms"
point = "hold 1500"
op = ">"
value = 1

[[claims]]
id = "slow-breaks-between-levels"
text = "slow's p99 grows over 100x from 1500 to 3000"
line = 32
plan = "gates"
kind = "ratio"
a = "slow"
b = "slow"
point = "hold 3000"
b_point = "hold 1500"
metric = "p99_ms"
op = ">="
value = 100

[[claims]]
id = "no-denominator-run"
text = "needs a plan nobody ran for its denominator"
line = 33
plan = "gates"
kind = "ratio"
a = "fast"
b = "fast"
b_plan = "never-run"
metric = "p99_ms"
point = "hold 1500"
op = ">"
value = 1
"#;
    let file: ClaimsFile = toml::from_str(CROSS).unwrap();
    // gates: fast 5 ms everywhere, slow 8 ms at 1500 and 1200 ms at 3000 (ratio 150);
    // gates-other: fast 20 ms (fast's ratio across the plans: 0.25)
    let gates = fast_and_slow();
    let mut p = plan();
    p.name = "gates-other".into();
    let mut other = RunReport::new(&p, "20261127-010000-gates-other");
    other.stacks.push(simulate(&p, "fast", |_| 20.0));
    let runs = [gates.clone(), other.clone()];
    let res = evaluate(&file, &runs);
    let v: Vec<_> = res.iter().map(|r| (r.id.as_str(), r.verdict)).collect();
    assert_eq!(
        v,
        [
            ("fast-quarter-of-its-other-plan", ClaimVerdict::Holds),
            ("fast-faster-in-the-other-plan", ClaimVerdict::DoesNotHold),
            ("slow-breaks-between-levels", ClaimVerdict::Holds),
            ("no-denominator-run", ClaimVerdict::NotTestable),
        ]
    );
    // each side is named with its plan and point, and both runs are cited
    assert!(
        res[0].ours.contains("fast (gates, hold 1500)")
            && res[0].ours.contains("fast (gates-other, hold 1500)"),
        "{}",
        res[0].ours
    );
    assert_eq!(res[0].run.as_deref(), Some("20261127-000000-gates"));
    assert_eq!(res[0].b_run.as_deref(), Some("20261127-010000-gates-other"));
    // two points of one run: one run cited
    assert!(
        res[2].ours.contains("slow (gates, hold 3000)")
            && res[2].ours.contains("slow (gates, hold 1500)"),
        "{}",
        res[2].ours
    );
    assert_eq!(res[2].b_run, None);
    assert!(
        res[3].ours.contains("no run of plan `never-run` with fast"),
        "{}",
        res[3].ours
    );
    // the ledger cites both runs (above), and keeps both as evidence
    let judged = vec![(file.clone(), res)];
    let dir = std::env::temp_dir().join(format!("ceiling-claims-cross-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let kept = keep_evidence(&judged, &runs, &dir, true).unwrap();
    assert_eq!(
        kept.written,
        ["20261127-000000-gates", "20261127-010000-gates-other"]
    );
    std::fs::remove_dir_all(&dir).ok();
    // without the other plan's run the cross-plan claims are not testable, the in-run one still is
    let res = evaluate(&file, &[gates]);
    assert_eq!(res[0].verdict, ClaimVerdict::NotTestable);
    assert!(
        res[0].ours.contains("no run of plan `gates-other`"),
        "{}",
        res[0].ours
    );
    assert_eq!(res[2].verdict, ClaimVerdict::Holds);
}

/// Every shipped claims file reads, and each claim can be answered by a plan that exists and
/// names its stacks: a typo in a plan or stack name would leave a claim "not testable here"
/// for ever, looking like a missing run.
#[test]
fn every_shipped_claim_names_plans_and_stacks_that_exist() {
    use ceiling_compare::claims::{load_claims, ClaimKind};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("plans/published/claims");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let mut ids = std::collections::BTreeSet::new();
    for f in &files {
        let file = load_claims(f).unwrap_or_else(|e| panic!("{e}"));
        for c in &file.claims {
            let at = format!("{}: claim {}", f.display(), c.id);
            assert!(ids.insert(c.id.clone()), "{at}: id used twice");
            // (plan, stacks it must name) for each side of the claim
            let mut need: Vec<(String, Vec<String>)> = Vec::new();
            let Some(plan) = &c.plan else { continue };
            match c.kind {
                ClaimKind::Threshold => {
                    let s = c.stack.clone().unwrap_or_else(|| panic!("{at}: no stack"));
                    assert!(c.value.is_some(), "{at}: no value");
                    need.push((plan.clone(), vec![s]));
                }
                ClaimKind::Ratio => {
                    let a = c.a.clone().unwrap_or_else(|| panic!("{at}: no a"));
                    let b = c.b.clone().unwrap_or_else(|| panic!("{at}: no b"));
                    assert!(c.value.is_some(), "{at}: no value");
                    need.push((plan.clone(), vec![a]));
                    need.push((c.b_plan.clone().unwrap_or(plan.clone()), vec![b]));
                }
                ClaimKind::Order => {
                    assert!(c.stacks.len() >= 2, "{at}: an order of fewer than two");
                    need.push((plan.clone(), c.stacks.clone()));
                }
            }
            if c.metric != "ceiling" {
                assert!(c.point.is_some(), "{at}: `{}` needs a point", c.metric);
            }
            // an `also` plan answers what the claim's plan answers: it must run the same stacks
            let own: Vec<_> = need.iter().filter(|(p, _)| p == plan).cloned().collect();
            for also in &c.also {
                assert_ne!(also, plan, "{at}: `also` repeats the plan");
                need.extend(own.iter().map(|(_, s)| (also.clone(), s.clone())));
            }
            for (p, stacks) in need {
                let path = root.join(format!("plans/{p}.toml"));
                let plan = ceiling_plan::load_plan(&path)
                    .unwrap_or_else(|e| panic!("{at}: plan `{p}`: {e}"));
                for s in stacks {
                    assert!(
                        plan.target.stacks.contains(&s),
                        "{at}: plan `{p}` does not run `{s}` (it runs {:?})",
                        plan.target.stacks
                    );
                }
            }
        }
    }
}

/// A level the generator could not drive: its latency says nothing of the stack (not testable),
/// its throughput is what the stack did at least — a lower bound that proves "at least" on its
/// own side of a claim and "at most" across a ratio, and decides nothing else.
#[test]
fn a_generator_bound_level_is_a_lower_bound_on_throughput_and_silent_on_latency() {
    use ceiling_analyze::{Reason, Verdict};
    const BOUND: &str = r#"
source = "999"
seed = "999_x.txt"

[[claims]]
id = "fast-p99-at-3000"
text = "fast's p99 at 3000 is within 10 ms"
line = 40
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "p99_ms"
point = "hold 3000"
op = "<="
value = 10

[[claims]]
id = "fast-serves-2000"
text = "fast serves at least 2000 RPS at the 3000 shelf"
line = 41
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "rps"
point = "hold 3000"
op = ">="
value = 2000

[[claims]]
id = "fast-below-4000"
text = "fast serves at most 4000 RPS there"
line = 42
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "rps"
point = "hold 3000"
op = "<="
value = 4000

[[claims]]
id = "slow-1-5x-fast"
text = "slow serves 1.5x fast's RPS there"
line = 43
plan = "gates"
kind = "ratio"
a = "slow"
b = "fast"
metric = "rps"
point = "hold 3000"
op = ">="
value = 1.5

[[claims]]
id = "fast-0-9x-slow"
text = "fast serves at least 0.9x slow's RPS there"
line = 44
plan = "gates"
kind = "ratio"
a = "fast"
b = "slow"
metric = "rps"
point = "hold 3000"
op = ">="
value = 0.9

[[claims]]
id = "slow-about-2x-fast"
text = "slow serves about twice fast's RPS there"
line = 46
plan = "gates"
kind = "ratio"
a = "slow"
b = "fast"
metric = "rps"
point = "hold 3000"
op = "~"
value = 2.0

[[claims]]
id = "fast-about-1000"
text = "fast serves about 1000 RPS there"
line = 47
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "rps"
point = "hold 3000"
op = "~"
value = 1000

[[claims]]
id = "fast-about-5000"
text = "fast serves about 5000 RPS there"
line = 48
plan = "gates"
kind = "threshold"
stack = "fast"
metric = "rps"
point = "hold 3000"
op = "~"
value = 5000

[[claims]]
id = "fast-over-slow-order"
text = "fast > slow at 3000"
line = 45
plan = "gates"
kind = "order"
stacks = ["fast", "slow"]
metric = "rps"
point = "hold 3000"
"#;
    let file: ClaimsFile = toml::from_str(BOUND).unwrap();
    let mut r = fast_and_slow();
    // before: fast's 3000 shelf is valid, 5 ms, 3000 RPS — everything decided on values
    let v = verdicts(&file, std::slice::from_ref(&r));
    assert_eq!(v[0].1, ClaimVerdict::Holds, "{v:?}");
    assert_eq!(v[2].1, ClaimVerdict::Holds, "{v:?}");
    // the generator could not keep up with fast at 3000
    for s in r.stacks[0]
        .shelves
        .iter_mut()
        .filter(|s| s.label == "hold 3000")
    {
        s.verdict = Verdict::Invalid;
        s.reasons = vec![Reason::GeneratorCpu {
            mean_pct: 99.0,
            max_pct: 90.0,
        }];
    }
    let res = evaluate(&file, std::slice::from_ref(&r));
    let v: Vec<_> = res.iter().map(|x| (x.id.as_str(), x.verdict)).collect();
    assert_eq!(
        v,
        [
            ("fast-p99-at-3000", ClaimVerdict::NotTestable),
            ("fast-serves-2000", ClaimVerdict::Holds),
            ("fast-below-4000", ClaimVerdict::NotDecided),
            // slow/fast ≤ 3000/3000 = 1.0 < 1.5: the lower bound in the denominator proves it
            ("slow-1-5x-fast", ClaimVerdict::DoesNotHold),
            // fast/slow ≥ 1.0 ≥ 0.9: the lower bound in the numerator proves it
            ("fast-0-9x-slow", ClaimVerdict::Holds),
            // about 2x: at most 1.0 — refuted; about 1000: at least 3000 — refuted; about 5000:
            // at least 3000 says nothing
            ("slow-about-2x-fast", ClaimVerdict::DoesNotHold),
            ("fast-about-1000", ClaimVerdict::DoesNotHold),
            ("fast-about-5000", ClaimVerdict::NotDecided),
            // fast ≥ 3000 against slow's 3000: not apart, not decided
            ("fast-over-slow-order", ClaimVerdict::NotDecided),
        ]
    );
    assert!(res[0].ours.contains("generator-bound"), "{}", res[0].ours);
    assert!(res[1].ours.contains("≥ 3000"), "{}", res[1].ours);
}

#[test]
fn an_interleaved_runs_stacks_are_compared_paired_by_round() {
    // Two stacks measured in 5 interleaved rounds while the machine drifts by ±40% from round
    // to round: in every round `a` serves 1.08–1.12× what `b` serves (the truth: a > b by
    // ~10%). Read as two unpaired intervals the drift swamps it (not decided); paired by round
    // it cancels and the claims hold. The same figures in a run that did not interleave
    // (`interleaved_rounds` = 1) must not be paired.
    const PAIRED: &str = r#"
source = "999"
seed = "999_x.txt"

[[claims]]
id = "a-over-b"
text = "a serves at least 1.05x what b serves"
line = 50
plan = "gates"
kind = "ratio"
a = "a"
b = "b"
metric = "rps"
point = "hold 3000"
op = ">="
value = 1.05

[[claims]]
id = "a-first"
text = "a > b"
line = 51
plan = "gates"
kind = "order"
stacks = ["a", "b"]
metric = "rps"
point = "hold 3000"

[[claims]]
id = "b-first"
text = "b > a"
line = 52
plan = "gates"
kind = "order"
stacks = ["b", "a"]
metric = "rps"
point = "hold 3000"
"#;
    let file: ClaimsFile = toml::from_str(PAIRED).unwrap();
    let drift = [1.0, 0.6, 1.4, 0.8, 1.2];
    let ratio = [1.10, 1.12, 1.08, 1.11, 1.09];
    let p = plan();
    let run = |interleaved: u32| {
        let mut r = RunReport::new(&p, "20261128-000000-gates");
        r.plan.interleaved_rounds = interleaved;
        for (name, k) in [("a", true), ("b", false)] {
            let mut st = simulate(&p, name, |_| 5.0);
            let one = st
                .shelves
                .iter()
                .find(|s| s.label == "hold 3000")
                .cloned()
                .unwrap();
            st.shelves.retain(|s| s.label != "hold 3000");
            for (i, d) in drift.iter().enumerate() {
                let mut s = one.clone();
                s.repetition = i as u32;
                s.achieved_rps = 2000.0 * d * if k { ratio[i] } else { 1.0 };
                st.shelves.push(s);
            }
            r.stacks.push(st);
        }
        r
    };
    let paired = evaluate(&file, &[run(5)]);
    let v: Vec<_> = paired.iter().map(|r| (r.id.as_str(), r.verdict)).collect();
    assert_eq!(
        v,
        [
            ("a-over-b", ClaimVerdict::Holds),
            ("a-first", ClaimVerdict::Holds),
            ("b-first", ClaimVerdict::DoesNotHold)
        ],
        "{paired:#?}"
    );
    assert!(
        paired[0].ours.contains("paired over 5 rounds"),
        "{}",
        paired[0].ours
    );
    let unpaired = evaluate(&file, &[run(1)]);
    let v: Vec<_> = unpaired
        .iter()
        .map(|r| (r.id.as_str(), r.verdict))
        .collect();
    assert_eq!(
        v,
        [
            ("a-over-b", ClaimVerdict::NotDecided),
            ("a-first", ClaimVerdict::NotDecided),
            ("b-first", ClaimVerdict::NotDecided)
        ],
        "{unpaired:#?}"
    );
    assert!(!unpaired[0].ours.contains("paired"), "{}", unpaired[0].ours);
}

#[test]
fn an_order_of_two_single_values_is_decided_only_when_they_are_apart() {
    // Source 000's "an inflated max-threads over a small pool makes p99 jump" on one scaled run
    // of each (2026-11-29): threads200 2.97 ms against 2.93 ms — read as an order it "held" on a
    // 1.4% difference, one run's noise. Two single values decide an order only when they are more
    // than 10% apart (or the claim's own `within`).
    const ORDER: &str = r#"
source = "999"
seed = "999_x.txt"

[[claims]]
id = "slow-p99-over-fast"
text = "slow's p99 is above fast's at 1500"
line = 60
plan = "gates"
kind = "order"
stacks = ["slow", "fast"]
metric = "p99_ms"
point = "hold 1500"

[[claims]]
id = "slow-p99-over-fast-1pct"
text = "the same, where 1% apart is enough"
line = 61
plan = "gates"
kind = "order"
stacks = ["slow", "fast"]
metric = "p99_ms"
point = "hold 1500"
within = 0.01
"#;
    let file: ClaimsFile = toml::from_str(ORDER).unwrap();
    let mut r = fast_and_slow();
    let mut set = |slow: f64, fast: f64| {
        for st in r.stacks.iter_mut() {
            let v = if st.stack == "slow" { slow } else { fast };
            for s in st.shelves.iter_mut().filter(|s| s.label == "hold 1500") {
                s.latency.p99_ms = v;
            }
        }
        let res = evaluate(&file, std::slice::from_ref(&r));
        (res[0].clone(), res[1].verdict)
    };
    let (close, one_pct) = set(2.97, 2.93);
    assert_eq!(close.verdict, ClaimVerdict::NotDecided, "{}", close.ours);
    assert!(
        close.ours.contains("within 10% of each other"),
        "{}",
        close.ours
    );
    assert_eq!(one_pct, ClaimVerdict::Holds);
    // WebFlux's 3.53 against Ktor's 2.49 ms the same day: apart, in the claimed order
    assert_eq!(set(3.53, 2.49).0.verdict, ClaimVerdict::Holds);
    // apart the other way: refuted by both
    let (rev, rev_1pct) = set(2.49, 3.53);
    assert_eq!(
        (rev.verdict, rev_1pct),
        (ClaimVerdict::DoesNotHold, ClaimVerdict::DoesNotHold)
    );
}
