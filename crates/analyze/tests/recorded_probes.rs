//! The estimator on probes a real search recorded (not simulated): what the search concluded
//! from them must follow from them.

use ceiling_analyze::{pooled_interval, samples, ProbeVerdict};

/// `ceiling search plans/000-status-mixed.toml --stacks go-pgx --start-rate 2000 --max-time 6m
/// --probe 20s --probe-trim 5s --confirm 40s --threads 4` on the 16-core device machine with the
/// parts on their own cores (bench/device-placement.sh, 2026-11-27; docs/benchmarks.md §39):
/// 23,327 RPS passed (p99 40 ms), 25,466 and 27,141 failed, 26,378 passed once (p99 250 ms) and
/// failed once (1,042 ms). The search printed 95% CI 16,000–32,000 — the first doubling's
/// bracket — because the coin flip at 26,378 lent its spread to every rate.
#[test]
fn a_16_core_search_of_go_pgx_is_bracketed_by_its_own_probes() {
    let text = include_str!("data/go-pgx-16-cores-probes.json");
    let probes: Vec<ProbeVerdict> = serde_json::from_str(text).expect("recorded probes parse");
    assert_eq!(probes.len(), 16); // 11 probes, 5 low-rate checks
    let iv = pooled_interval(&samples(&probes), 0x5EED).expect("bracketed");
    assert_eq!((iv.bracket_lo, iv.bracket_hi), (23327.0, 25466.0), "{iv:?}");
    assert!(
        iv.lo >= 23327.0 && iv.hi <= 27141.0,
        "the interval leaves the probes' own bracket: {iv:?}"
    );
    assert!(iv.estimate > iv.lo && iv.estimate < iv.hi, "{iv:?}");
    eprintln!(
        "recomputed: {:.0} (95% CI {:.0}–{:.0}, ±{:.1}%, {:?})",
        iv.estimate,
        iv.lo,
        iv.hi,
        100.0 * iv.half_width_rel(),
        iv.method
    );
}

/// A known fault, kept as its evidence (issue 35 item 7: "a result never contradicts its own
/// evidence"). `ceiling search --url slow=…,fast=… --probe 2s --probe-trim 500ms --round 3
/// --max-time 90s` (`crates/cli/tests/search_url.rs`, 2026-11-28 02:01 UTC) on a FIFO service of
/// 400 RPS capacity: 403 RPS passed three times (pooled margin 0.80) and 409 failed — the bracket —
/// yet the search then probed 136–154 RPS eighteen times (every one passing at p99 ≈ 12 ms,
/// margin ≈ 0.25) and concluded **144 RPS (95% CI 140–600)** by its pooled line, whose bursts
/// model turned the spread of 1.5-s windows into a long-run ceiling below rates whose own pooled
/// windows (18 s of them) pass by ×4. Fixed the same night: a local line whose crossing lies
/// beyond the pooled groups' isotonic bracket is re-centred on the isotonic crossing, and dropped
/// (the isotonic bootstrap instead) when it stays outside.
#[test]
fn a_search_never_concludes_below_rates_its_own_pooled_probes_pass() {
    let text = include_str!("data/fifo-400-slow-probes.json");
    let probes: Vec<ProbeVerdict> = serde_json::from_str(text).expect("recorded probes parse");
    let iv = pooled_interval(&samples(&probes), 0x5EED).expect("bracketed");
    assert_eq!((iv.bracket_lo, iv.bracket_hi), (403.0, 409.0), "{iv:?}");
    assert!(
        (380.0..=409.0).contains(&iv.estimate) && iv.lo <= 403.0 && iv.hi >= 400.0,
        "the ceiling {:.0} contradicts 136–154 RPS's pooled passes and the 403–409 bracket: {iv:?}",
        iv.estimate
    );
    eprintln!(
        "recomputed: {:.0} (95% CI {:.0}–{:.0}, {:?})",
        iv.estimate, iv.lo, iv.hi, iv.method
    );
}

/// The same FIFO service of 400 RPS capacity, searched alone (`a_bare_url_is_searched_and_printed
/// _as_json` in `crates/cli/tests/search_url.rs`, `make test` on the 2-core machine, 2026-11-28
/// 20:1x UTC): 380 RPS passed (p99 13 ms, margin 0.27), 409 failed twice (margin 1.20), 443 and
/// 600 failed by ×4 and ×13 — a cliff, and a quiet one: every passing probe near it has p99 ≈ 12
/// ms. The pooled line through that step was too shallow, so the failing probes moved down it
/// still failed at 342 RPS: the search printed **342 RPS (95% CI 339–370, "narrowed")**, wholly
/// below the 380 that passed, and spent its remaining probes at 315–357 (all passing by ×4).
/// A line that the probes' own replicates reject (lack of fit against their pure error) is not a
/// model of the knee: the isotonic bracket decides.
#[test]
fn a_quiet_cliff_is_not_concluded_below_its_own_passing_probe() {
    let text = include_str!("data/fifo-400-cliff-probes.json");
    let probes: Vec<ProbeVerdict> = serde_json::from_str(text).expect("recorded probes parse");
    let iv = pooled_interval(&samples(&probes), 0x5EED).expect("bracketed");
    assert_eq!((iv.bracket_lo, iv.bracket_hi), (380.0, 409.0), "{iv:?}");
    assert!(
        (380.0..=409.0).contains(&iv.estimate) && iv.lo <= 400.0 && iv.hi >= 400.0,
        "the ceiling {:.0} ({:.0}–{:.0}) contradicts the pass at 380 RPS and the 380–409 bracket: {iv:?}",
        iv.estimate,
        iv.lo,
        iv.hi
    );
    eprintln!(
        "recomputed: {:.0} (95% CI {:.0}–{:.0}, {:?})",
        iv.estimate, iv.lo, iv.hi, iv.method
    );
}

/// A cliff bracketed by one probe at each end is not called narrow, however close the two
/// rates: the search loop replicates a cliff's ends (`search.repeat`) before its width counts,
/// and a search its budget ended first must not be called narrower than the loop would have.
/// Recorded: `ceiling search plans/002-orders-1cpu-1gb.toml --stacks
/// helidon-nima,spring-webflux-data-r2dbc --max-time 25m --realtime` (2026-11-29 15:25 UTC,
/// benchmarks/source-002.md §78), the WebFlux service's six probes: 500, 1000 and 1184 passed
/// (1184 at p99 174 ms), 2000, 1400 and 1244 failed, the service wedged after each failure, and
/// the budget ended with one probe at each end of 1184–1244. The search printed "±2.5%,
/// narrowed".
#[test]
fn a_cliff_bracketed_by_single_probes_is_not_called_narrow() {
    use ceiling_analyze::{SearchOutcome, SearchStatus, StopReason};
    let text = include_str!("data/webflux-1cpu-probes.json");
    let probes: Vec<ProbeVerdict> = serde_json::from_str(text).expect("recorded probes parse");
    assert_eq!(probes.len(), 6);
    let conclude = |probes: Vec<ProbeVerdict>, repeat| {
        SearchOutcome::conclude(
            probes,
            vec![],
            None,
            0.05,
            repeat,
            StopReason::Budget,
            1309.5,
        )
    };

    let out = conclude(probes.clone(), 3);
    let i = out.interval.clone().expect("bracketed");
    assert_eq!((i.bracket_lo, i.bracket_hi), (1184.0, 1244.0), "{i:?}");
    assert!(i.half_width_rel() <= 0.05, "{i:?}");
    assert_eq!(out.status, SearchStatus::Bracketed, "{}", out.describe());
    let t = out.thin_ends.expect("thin ends recorded");
    assert_eq!((t.lo, t.hi, t.repeat), (1184.0, 1244.0, 3));
    assert!(t.at_lo < 1.5 && t.at_hi < 1.5, "{t:?}");
    assert!(
        out.describe()
            .contains("not narrowed: 1184 and 1244 probed 1 and 1 times"),
        "{}",
        out.describe()
    );
    // the rule is the repeat asked: one probe an end is enough when one is asked for
    assert_eq!(conclude(probes.clone(), 1).status, SearchStatus::Narrowed);
    assert!(conclude(probes.clone(), 1).thin_ends.is_none());

    // replicated ends that agree (as the loop would have probed them): narrowed
    let mut more = probes.clone();
    for p in &probes {
        if p.rate == 1184.0 || p.rate == 1244.0 {
            more.push(p.clone());
            more.push(p.clone());
        }
    }
    let out = conclude(more, 3);
    assert_eq!(out.status, SearchStatus::Narrowed, "{}", out.describe());
    assert!(out.thin_ends.is_none());

    // stored before the field existed: read as none
    let mut v = serde_json::to_value(conclude(probes, 3)).unwrap();
    v.as_object_mut().unwrap().remove("thin_ends");
    let back: SearchOutcome = serde_json::from_value(v).unwrap();
    assert!(back.thin_ends.is_none());
}
