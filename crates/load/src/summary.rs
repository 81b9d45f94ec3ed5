//! Whole-run totals, built from the same per-second records the files get.

use ceiling_metrics::{merge_into, new_histogram, Counts, Phase, Second};
use ceiling_plan::RequestSpec;
use hdrhistogram::Histogram;

/// Totals for one request name (measured phase only).
#[derive(Debug, Clone)]
pub struct TagTotals {
    /// Request name.
    pub name: String,
    /// Latency (from intended send time in the open model).
    pub latency: Histogram<u64>,
    /// Service time (from the write).
    pub service: Histogram<u64>,
    /// Outcomes.
    pub counts: Counts,
}

/// What a run did, over its measured phase.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Per request name, plan order.
    pub tags: Vec<TagTotals>,
    /// Schedule lag (open model).
    pub lag: Histogram<u64>,
    /// Requests scheduled (open) or sent (closed).
    pub offered: u64,
    /// Requests written.
    pub sent: u64,
    /// Requests refused because the backlog was full.
    pub overflow: u64,
    /// Largest backlog seen at a second boundary.
    pub max_backlog: u64,
    /// Seconds recorded (warm-up included).
    pub seconds: u32,
    /// Seconds in the measured phase (including the last one, in which only replies may arrive).
    pub measured_seconds: u32,
    /// Seconds of the measured phase in which requests were offered: the measured duration to
    /// one second, for runs that did not run their planned length (stopped, or bounded by a count).
    pub offered_seconds: u32,
    /// Mean and max generator CPU, % of one core (measured phase).
    pub generator_cpu_mean: f64,
    /// Max generator CPU.
    pub generator_cpu_max: f64,
    /// Stopped by Ctrl-C or the hard time bound.
    pub stopped_early: bool,
    /// Connections that could not be opened (refused, unreachable or timed out), over the whole
    /// run: the requests they were for were never sent.
    pub connect_failures: u64,
    /// The first connection failure as a sentence (`connecting to 127.0.0.1:9: Connection refused
    /// (os error 111)`), if any.
    pub connect_error: Option<String>,
    /// What the connections did when a request ended as `reset`, and the idle-close retries
    /// (a coordinator adds up its agents' tallies, [`ResetTally::merge`]).
    pub resets: ResetTally,
    /// The TLS handshakes (https targets only; `None` for cleartext).
    pub tls: Option<crate::TlsTally>,
    /// The HTTP/2 connections (`None` for HTTP/1.1).
    pub h2: Option<H2Tally>,
    /// The ticked engine's I/O back end (`io_uring`, or `epoll` and why); `None` for the tokio
    /// engine.
    pub io: Option<String>,
}

/// What HTTP/2 multiplexing did over a run: the connections opened and how many streams shared
/// one at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Tally {
    /// Concurrent streams allowed per connection (the setting).
    pub streams: usize,
    /// HTTP/2 connections opened, every worker's together.
    pub connections: u64,
    /// The most requests one connection carried at once.
    pub max_streams_in_use: usize,
}

impl H2Tally {
    /// One line: `7 connections, ≤ 32 streams each (at most 32 in use on one)`.
    pub fn describe(&self) -> String {
        format!(
            "{} connection{}, ≤ {} streams each (at most {} in use on one)",
            self.connections,
            if self.connections == 1 { "" } else { "s" },
            self.streams,
            self.max_streams_in_use
        )
    }

    /// Adds another process's tally (agents): connections add, the most streams in use on one
    /// connection is the larger.
    pub fn merge(&mut self, o: &H2Tally) {
        self.streams = self.streams.max(o.streams);
        self.connections += o.connections;
        self.max_streams_in_use = self.max_streams_in_use.max(o.max_streams_in_use);
    }
}

/// The `reset` outcome taken apart by what the connection did, over a whole run, with the first
/// few as they happened: the evidence to tell a keep-alive race in the generator from a server
/// that cuts its responses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResetTally {
    /// Requests sent a second time on a new connection because the idle connection they were
    /// given (kept alive after a response, or opened ahead of the schedule and not used yet)
    /// closed before any byte of the response (the idle-close race). Not errors: only a retry
    /// that fails too counts as a reset ([`ResetKind::RetryFailed`]).
    pub retried: u64,
    /// Resets by kind, in [`ResetKind::ALL`]'s order.
    pub by_kind: [u64; 3],
    /// The first [`ResetTally::EXAMPLES`] resets.
    pub examples: Vec<ResetExample>,
}

impl ResetTally {
    /// How many resets are kept as examples.
    pub const EXAMPLES: usize = 5;

    /// Resets of one kind.
    pub fn get(&self, k: ResetKind) -> u64 {
        self.by_kind[k as usize]
    }

    /// All resets.
    pub fn resets(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    /// Counts one reset (and keeps it as an example while there are fewer than
    /// [`ResetTally::EXAMPLES`]).
    pub fn note(&mut self, e: ResetExample) {
        self.by_kind[e.kind as usize] += 1;
        if self.examples.len() < Self::EXAMPLES {
            self.examples.push(e);
        }
    }

    /// Adds another process's tally (a generator agent's): counts and retries add; its examples
    /// follow this one's while fewer than [`ResetTally::EXAMPLES`] are kept.
    pub fn merge(&mut self, other: &ResetTally) {
        self.retried += other.retried;
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a += b;
        }
        let room = Self::EXAMPLES.saturating_sub(self.examples.len());
        self.examples
            .extend(other.examples.iter().take(room).cloned());
    }

    /// One line for a report: `3 connection resets: 2 cut mid-response, 1 … (first: …)`, or
    /// `None` when there was neither a reset nor a retry.
    pub fn describe(&self) -> Option<String> {
        if self.resets() == 0 && self.retried == 0 {
            return None;
        }
        let kinds: Vec<String> = ResetKind::ALL
            .iter()
            .filter(|&&k| self.get(k) > 0)
            .map(|&k| format!("{} {}", self.get(k), k.describe()))
            .collect();
        let mut line = if kinds.is_empty() {
            "no connection resets".to_string()
        } else {
            format!("{} connection resets: {}", self.resets(), kinds.join(", "))
        };
        line.push_str(&format!(
            "; {} requests retried once on a new connection: the idle connection they were given (kept alive, or opened ahead and not used yet) had been closed by the server (the idle-close race; not an error unless the retry failed)",
            self.retried
        ));
        if let Some(e) = self.examples.first() {
            line.push_str(&format!("; first: {e}"));
        }
        Some(line)
    }
}

/// What the connection did when a request ended as `reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetKind {
    /// Part of the response had arrived, then the connection closed or was reset.
    MidResponse,
    /// A connection opened for this request closed before any byte of the response.
    ClosedWhenNew,
    /// The idle-close race's retry failed too: its new connection could not be opened, or it
    /// closed before any byte as well.
    RetryFailed,
}

impl ResetKind {
    /// Every kind, in report order.
    pub const ALL: [ResetKind; 3] = [
        ResetKind::MidResponse,
        ResetKind::ClosedWhenNew,
        ResetKind::RetryFailed,
    ];

    /// The kind in words.
    pub fn describe(self) -> &'static str {
        match self {
            ResetKind::MidResponse => "cut mid-response",
            ResetKind::ClosedWhenNew => "closed before any byte on a new connection",
            ResetKind::RetryFailed => "failed again on the idle-close retry",
        }
    }
}

/// One reset as it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ResetExample {
    /// Second of the run (from the engine's start, warm-up included).
    pub t: u32,
    /// What the connection did.
    pub kind: ResetKind,
    /// Bytes of the response that had arrived.
    pub bytes: usize,
    /// Responses the connection had completed before this request (0: opened for it).
    pub served: u64,
    /// How long the connection had been idle before this request, in ms (0 when new).
    pub idle_ms: f64,
    /// Whether this was the idle-close retry's new connection.
    pub retry: bool,
    /// What the socket reported: `closed` (an orderly close, EOF) or the OS error.
    pub error: String,
}

impl std::fmt::Display for ResetExample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "t={} s, {} ({})",
            self.t,
            self.kind.describe(),
            self.error
        )?;
        if self.bytes > 0 {
            write!(f, " after {} bytes of the response", self.bytes)?;
        }
        if self.retry && self.kind != ResetKind::RetryFailed {
            // cut on the connection the retry opened (a failed retry may have opened none)
            write!(f, ", on the retry's new connection")?;
        } else if self.served > 0 || self.idle_ms > 0.0 {
            write!(
                f,
                ", on a connection that had served {} responses and sat idle {:.1} ms before it",
                self.served, self.idle_ms
            )?;
        }
        Ok(())
    }
}

impl Summary {
    /// An empty summary for a plan's request names (what a coordinator merging other processes'
    /// seconds starts from).
    pub fn new(reqs: &[RequestSpec]) -> Self {
        Summary {
            tags: reqs
                .iter()
                .map(|r| TagTotals {
                    name: r.name.clone(),
                    latency: new_histogram(),
                    service: new_histogram(),
                    counts: Counts::default(),
                })
                .collect(),
            lag: new_histogram(),
            offered: 0,
            sent: 0,
            overflow: 0,
            max_backlog: 0,
            seconds: 0,
            measured_seconds: 0,
            offered_seconds: 0,
            generator_cpu_mean: 0.0,
            generator_cpu_max: 0.0,
            stopped_early: false,
            connect_failures: 0,
            connect_error: None,
            resets: ResetTally::default(),
            tls: None,
            h2: None,
            io: None,
        }
    }

    /// Adds one recorded second (only the measured phase counts towards the totals).
    pub fn add(&mut self, s: &Second) {
        self.seconds = self.seconds.max(s.t + 1);
        if s.phase != Phase::Measure {
            return;
        }
        for (a, b) in self.tags.iter_mut().zip(&s.tags) {
            merge_into(&mut a.latency, &b.latency);
            merge_into(&mut a.service, &b.service);
            a.counts.merge(&b.counts);
        }
        merge_into(&mut self.lag, &s.lag);
        self.offered += s.offered;
        self.sent += s.sent;
        if s.offered > 0 {
            self.offered_seconds += 1;
        }
        self.overflow += s.overflow;
        self.max_backlog = self.max_backlog.max(s.backlog);
        let n = self.measured_seconds as f64;
        self.generator_cpu_mean = (self.generator_cpu_mean * n + s.generator_cpu) / (n + 1.0);
        self.generator_cpu_max = self.generator_cpu_max.max(s.generator_cpu);
        self.measured_seconds += 1;
    }

    /// Latency over all request names.
    pub fn latency(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for t in &self.tags {
            merge_into(&mut h, &t.latency);
        }
        h
    }

    /// Outcomes over all request names.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for t in &self.tags {
            c.merge(&t.counts);
        }
        c
    }
}
