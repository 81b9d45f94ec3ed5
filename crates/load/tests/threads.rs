//! The engine with several generator threads: the schedule is split between them and nothing is
//! sent twice or lost — open model (every intended send time exactly once across threads) and
//! closed model with fewer connections than threads (idle threads send nothing, the connections
//! still carry the whole count) and with counts that do not divide evenly.

mod support;

use ceiling_load::run;
use ceiling_metrics::Outcome;
use ceiling_plan::{Model, Stage};
use std::sync::atomic::Ordering;
use std::time::Duration;

use support::{config, counting_server};

#[test]
fn open_model_on_four_threads_sends_the_schedule_once() {
    let (port, accepted) = counting_server(Duration::ZERO);
    let mut cfg = config(
        port,
        Model::Open,
        true,
        Stage::Hold {
            rate: 400.0,
            duration: Duration::from_secs(2),
        },
    );
    cfg.threads = 4;
    let s = run(cfg, |_| {}).unwrap();
    // 400/s for 2 s on a uniform schedule: 800 intended send times, each sent exactly once
    assert_eq!(s.offered, 800, "scheduled");
    let c = s.counts();
    assert_eq!(c.get(Outcome::Ok), 800, "{c:?}");
    assert_eq!(c.total(), 800, "{c:?}");
    // keep-alive: each worker pre-opens up to 64 connections (like wrk) and reuses them, so
    // at most 4 × 64 connections carry the 800 requests
    let conns = accepted.load(Ordering::SeqCst);
    assert!(
        (1..=256).contains(&conns),
        "{conns} connections for 800 requests"
    );
}

/// A closed stage of `requests` over `connections` on `threads` workers: every request sent
/// once, over exactly `connections` connections (one per loop).
fn closed(connections: usize, threads: usize, requests: u64) {
    let (port, accepted) = counting_server(Duration::ZERO);
    let mut cfg = config(
        port,
        Model::Closed,
        true,
        Stage::Closed {
            connections,
            duration: None,
            requests: Some(requests),
        },
    );
    cfg.threads = threads;
    let s = run(cfg, |_| {}).unwrap();
    let c = s.counts();
    assert_eq!(
        (c.get(Outcome::Ok), c.total()),
        (requests, requests),
        "{c:?}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        connections as u64,
        "one connection per loop"
    );
}

#[test]
fn closed_model_with_fewer_connections_than_threads() {
    // two workers have no connection: their share of the requests must not be lost
    closed(2, 4, 101);
}

#[test]
fn closed_model_with_an_uneven_split() {
    closed(7, 3, 1001);
}
