//! `--realtime`: the generator's threads run under SCHED_FIFO while they send, as the kernel
//! records it (read from /proc, not from the engine's own word), or the run is refused before a
//! single connection is made when the process lacks the privilege.

mod support;

use ceiling_load::realtime;
use ceiling_plan::{Model, Stage};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn config(port: u16, realtime: bool, tick: Option<Duration>) -> ceiling_load::LoadConfig {
    let mut c = support::config(
        port,
        Model::Open,
        true,
        Stage::Hold {
            rate: 300.0,
            duration: Duration::from_secs(2),
        },
    );
    c.threads = 2;
    c.realtime = realtime;
    c.tick = tick;
    c
}

/// Each second's generator threads, with their scheduling policies.
type Seen = Vec<Vec<(String, u32)>>;

/// Runs the load and returns, for every second, the policies of the threads named
/// `ceiling-load-*` as /proc showed them while that second was handed over.
fn policies_during(
    cfg: ceiling_load::LoadConfig,
) -> Result<(ceiling_load::Summary, Seen), ceiling_load::LoadError> {
    let mut seen = Vec::new();
    let s = ceiling_load::run(cfg, |_| {
        seen.push(realtime::thread_policies("ceiling-load-"))
    })?;
    Ok((s, seen))
}

#[test]
fn the_generators_threads_are_fifo_while_they_send_or_the_run_is_refused_unsent() {
    let (port, accepted) = support::counting_server(Duration::ZERO);
    for tick in [None, Some(Duration::from_millis(2))] {
        let got = policies_during(config(port, true, tick));
        if !realtime::privileged() {
            let e = got.expect_err("refused without CAP_SYS_NICE").to_string();
            assert!(
                e.contains("--realtime") && e.contains("CAP_SYS_NICE"),
                "{e}"
            );
            assert_eq!(accepted.load(Ordering::SeqCst), 0, "nothing sent");
            continue;
        }
        let (summary, seen) = got.unwrap();
        let ok = summary.counts().get(ceiling_metrics::Outcome::Ok);
        assert!(ok > 400, "{tick:?}: {ok} ok");
        // both generator threads were seen (the last second may find one already gone), and
        // every generator thread seen was under SCHED_FIFO (policy 1)
        assert!(seen.len() >= 2, "{seen:?}");
        assert_eq!(
            seen.iter().map(Vec::len).max(),
            Some(2),
            "{tick:?}: {seen:?}"
        );
        for threads in &seen {
            assert!(
                threads.iter().all(|(_, p)| *p == 1),
                "{tick:?}: {threads:?}"
            );
        }
    }
    // and without the flag they are normal threads (policy 0)
    let (_, seen) = policies_during(config(port, false, None)).unwrap();
    assert!(!seen.is_empty());
    for threads in &seen {
        assert!(threads.iter().all(|(_, p)| *p == 0), "{threads:?}");
    }
}
