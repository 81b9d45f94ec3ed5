//! Keep-alive off, end to end: every request opens its own TCP connection (a server counting the
//! connections it accepts sees exactly one per request), and the time a connection takes before
//! the request is served is inside the request's latency — in the closed model too, where the
//! latency origin is the moment the loop decided to send, before it connected.
//!
//! The server holds every new connection for `ACCEPT_DELAY` before it reads from it (an
//! application slow to take up connections), so every request with keep-alive off waits at least
//! that long; with keep-alive on only a connection's first request does.

mod support;

use ceiling_load::{run, Summary};
use ceiling_metrics::Outcome;
use ceiling_plan::{Model, Stage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::config;

const ACCEPT_DELAY: Duration = Duration::from_millis(5);

fn counting_server() -> (u16, Arc<AtomicU64>) {
    support::counting_server(ACCEPT_DELAY)
}

/// The accept delay less the histogram's bucket width (3 significant digits).
fn floor_ms() -> f64 {
    ACCEPT_DELAY.as_secs_f64() * 1000.0 * 0.99
}

fn ok(s: &Summary) -> u64 {
    s.counts().get(Outcome::Ok)
}

#[test]
fn closed_model_without_keep_alive_opens_one_connection_per_request_inside_the_latency() {
    let (port, accepted) = counting_server();
    let n = 200u64;
    let s = run(
        config(
            port,
            Model::Closed,
            false,
            Stage::Closed {
                connections: 4,
                duration: None,
                requests: Some(n),
            },
        ),
        |_| {},
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(ok(&s), n, "every request answered: {:?}", s.counts());
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        n,
        "keep-alive off: one TCP connection per request"
    );
    let t = &s.tags[0];
    let min_ms = t.latency.min() as f64 / 1000.0;
    assert!(
        min_ms >= floor_ms(),
        "every request waited for its new connection to be taken up: min latency {min_ms} ms"
    );
    // The connect is inside the latency (from before the connection was opened) and outside the
    // service time (from the write): the latency is longer for every request, so on average.
    let gap_us = t.latency.mean() - t.service.mean();
    assert!(
        gap_us > 0.0,
        "latency {:.1} µs vs service {:.1} µs: the connection's set-up is not in the latency",
        t.latency.mean(),
        t.service.mean()
    );
}

#[test]
fn closed_model_with_keep_alive_reuses_its_connections() {
    let (port, accepted) = counting_server();
    let s = run(
        config(
            port,
            Model::Closed,
            true,
            Stage::Closed {
                connections: 4,
                duration: None,
                requests: Some(200),
            },
        ),
        |_| {},
    )
    .unwrap();
    assert_eq!(ok(&s), 200);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        4,
        "one connection per loop"
    );
    // only the four first requests waited for a new connection
    let t = &s.tags[0];
    let slow = t
        .latency
        .iter_recorded()
        .filter(|v| v.value_iterated_to() >= ACCEPT_DELAY.as_micros() as u64)
        .map(|v| v.count_at_value())
        .sum::<u64>();
    // (a busy machine may stall a few more for as long; 200 would mean no reuse at all)
    assert!(
        (4..50).contains(&slow),
        "{slow} requests took the accept delay"
    );
}

#[test]
fn open_model_without_keep_alive_opens_one_connection_per_request_inside_the_latency() {
    let (port, accepted) = counting_server();
    let s = run(
        config(
            port,
            Model::Open,
            false,
            Stage::Hold {
                rate: 200.0,
                duration: Duration::from_secs(2),
            },
        ),
        |_| {},
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let done = s.counts().total();
    assert!(done >= 380, "about 400 requests: {done}");
    assert_eq!(ok(&s), done, "{:?}", s.counts());
    // no connection opened ahead of the schedule with keep-alive off
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        done,
        "one connection per request"
    );
    let min_ms = s.tags[0].latency.min() as f64 / 1000.0;
    assert!(min_ms >= floor_ms(), "min latency {min_ms} ms");
}
