//! CI gates on simulated runs whose figures are known in advance: each gate passes, fails or is
//! inconclusive exactly where the truth says, and never passes on a figure the run could not
//! establish.

use ceiling_compare::gate::{
    exit_code, judge_report, regressions, Gate, GateVerdict, EXIT_GATE_FAILED,
    EXIT_GATE_INCONCLUSIVE,
};
use ceiling_records::RunReport;
use common::{plan, searched, simulate};

mod common;

fn gates(list: &[&str]) -> Vec<Gate> {
    list.iter().map(|g| g.parse().unwrap()).collect()
}

fn verdicts(r: &RunReport, list: &[&str]) -> Vec<(String, GateVerdict)> {
    judge_report(&gates(list), r)
        .into_iter()
        .map(|x| (x.target, x.verdict))
        .collect()
}

#[test]
fn latency_gates_read_the_shelf_at_the_rate_asked() {
    let p = plan();
    let mut r = RunReport::new(&p, "sim");
    // fast holds 3000 RPS at 5 ms; slow takes 400 ms there
    r.stacks.push(simulate(&p, "fast", |_| 5.0));
    r.stacks.push(simulate(&p, "slow", |rate| {
        if rate > 2000.0 {
            400.0
        } else {
            8.0
        }
    }));
    assert_eq!(
        verdicts(&r, &["p99<=20ms@3000"]),
        [
            ("fast".into(), GateVerdict::Pass),
            ("slow".into(), GateVerdict::Fail)
        ]
    );
    assert_eq!(
        verdicts(&r, &["slow:p99<=20ms@1500", "errors<1%@1500"]),
        [
            ("slow".into(), GateVerdict::Pass),
            ("fast".into(), GateVerdict::Pass),
            ("slow".into(), GateVerdict::Pass)
        ]
    );
    // no shelf at 2500, no stack `ktor`: never a pass
    let res = judge_report(&gates(&["p99<=20ms@2500", "ktor:ceiling>=1"]), &r);
    assert!(
        res.iter().all(|x| x.verdict == GateVerdict::Inconclusive),
        "{res:?}"
    );
    assert!(res[0].detail.contains("1500, 3000"), "{}", res[0].detail);
    assert_eq!(exit_code(&res), Some(EXIT_GATE_INCONCLUSIVE));
    // the stepped ceilings: fast 3000 (not bracketed: a lower bound), slow 1500 (bracketed)
    let res = judge_report(&gates(&["ceiling>=2000"]), &r);
    assert_eq!(res[0].verdict, GateVerdict::Pass, "{res:?}");
    assert_eq!(res[1].verdict, GateVerdict::Fail, "{res:?}");
    assert_eq!(exit_code(&res), Some(EXIT_GATE_FAILED));
    let res = judge_report(&gates(&["fast:ceiling>=4000"]), &r);
    assert_eq!(
        res[0].verdict,
        GateVerdict::Inconclusive,
        "a lower bound below the bar: {res:?}"
    );
}

#[test]
fn a_searched_ceiling_passes_or_fails_only_when_its_whole_interval_does() {
    let p = plan();
    let mut r = RunReport::new(&p, "sim");
    let mut a = simulate(&p, "a", |_| 5.0);
    let cases = [
        (
            Some((5500.0, 5900.0)),
            "narrowed",
            5700.0,
            GateVerdict::Pass,
        ),
        (
            Some((4800.0, 5200.0)),
            "narrowed",
            5000.0,
            GateVerdict::Inconclusive,
        ),
        (
            Some((4000.0, 4500.0)),
            "narrowed",
            4250.0,
            GateVerdict::Fail,
        ),
        (None, "lower_bound", 6169.0, GateVerdict::Pass),
    ];
    for (iv, status, est, want) in cases {
        a.search = Some(searched(status, est, iv));
        r.stacks = vec![a.clone()];
        let res = judge_report(&gates(&["ceiling>=5000"]), &r);
        assert_eq!(res[0].verdict, want, "{iv:?} {status}: {res:?}");
    }
    // a lower bound of 6169 says nothing about 7000
    let res = judge_report(&gates(&["ceiling>=7000"]), &r);
    assert_eq!(res[0].verdict, GateVerdict::Inconclusive, "{res:?}");
    assert!(res[0].detail.contains("lower bound"), "{}", res[0].detail);
}

#[test]
fn a_regression_fails_only_when_it_is_significant() {
    let p = plan();
    let mut base = RunReport::new(&p, "base");
    let mut new = RunReport::new(&p, "new");
    let mut a = simulate(&p, "a", |_| 5.0);
    a.search = Some(searched("narrowed", 5700.0, Some((5500.0, 5900.0))));
    base.stacks.push(a.clone());
    // 20% lower and the intervals far apart: a significant regression
    a.search = Some(searched("narrowed", 4560.0, Some((4400.0, 4720.0))));
    new.stacks.push(a.clone());
    let cmp = ceiling_compare::compare_runs(&base, &new).unwrap();
    let res = regressions(&cmp, 0.05);
    let ceiling = res
        .iter()
        .find(|x| x.detail.starts_with("ceiling"))
        .unwrap();
    assert_eq!(ceiling.verdict, GateVerdict::Fail, "{res:?}");
    assert_eq!(exit_code(&res), Some(EXIT_GATE_FAILED));
    // 6% lower but the intervals wide: not significant, so no failure
    new.stacks[0].search = Some(searched("bracketed", 5360.0, Some((4300.0, 6400.0))));
    let cmp = ceiling_compare::compare_runs(&base, &new).unwrap();
    let res = regressions(&cmp, 0.05);
    assert!(
        res.iter().all(|x| x.verdict != GateVerdict::Fail),
        "{res:?}"
    );
    // the same run twice: nothing worse
    let cmp = ceiling_compare::compare_runs(&base, &base).unwrap();
    assert_eq!(exit_code(&regressions(&cmp, 0.05)), None);
}
