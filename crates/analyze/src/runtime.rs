//! The stack's runtime over a shelf's window: live heap, GC and threads, from the per-second
//! scrapes of its `/metrics` in `signals.csv`. Source 000 reported the heap as "RAM"; ceiling
//! reports it beside RSS, each labelled for what it is.

use crate::stats::spearman;
use ceiling_metrics::{HeapKind, SignalRow, TimeseriesRow};
use serde::{Deserialize, Serialize};

/// The runtime's own figures over one window (seconds whose scrape answered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeWindow {
    /// Seconds in the window with a heap or GC figure.
    pub seconds: usize,
    /// Which runtime figure the heap columns are.
    pub heap_kind: Option<HeapKind>,
    /// Mean live heap, MiB (source 000's "RAM": the mean over the window).
    pub heap_mb_mean: Option<f64>,
    /// Smallest live heap seen, MiB: right after a collection.
    pub heap_mb_min: Option<f64>,
    /// Largest live heap seen, MiB: right before one. `max − min` is the "saw" the source saw.
    pub heap_mb_max: Option<f64>,
    /// Collections (or pauses) in the window.
    pub gc_count: Option<u64>,
    /// Stop-the-world pause time per second of the window, ms/s.
    pub gc_pause_ms_per_s: Option<f64>,
    /// Mean live threads.
    pub threads_mean: Option<f64>,
    /// What the tail moved with, second by second (`None` without per-second rows).
    #[serde(default)]
    pub tail: Option<TailFollows>,
}

/// How the per-second tail moved with the runtime and the CPU over a window: Spearman's rank
/// correlation of each second's p99 with the same second's GC pause time, live heap and stack
/// CPU. Source 000 explained WebFlux's tails by its heap "saw" and GC; these make such an
/// explanation checkable (a tail that follows the pauses, not the heap's level, or the CPU more
/// than either). A correlation, not a cause: the attribution of a failed shelf names causes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailFollows {
    /// Seconds with a p99 (requests completed) in the window.
    pub seconds: usize,
    /// ρ(p99, GC pause ms in that second); `None` with fewer than 10 paired seconds
    /// or a constant series.
    pub gc_pause: Option<f64>,
    /// ρ(p99, live heap).
    pub heap: Option<f64>,
    /// ρ(p99, the stack's CPU).
    pub cpu: Option<f64>,
}

/// [`TailFollows`] over the rows and signals with `start ≤ t < end`.
pub fn tail_follows(
    rows: &[TimeseriesRow],
    signals: &[SignalRow],
    start: u32,
    end: u32,
) -> Option<TailFollows> {
    let sig: std::collections::BTreeMap<u32, &SignalRow> = signals
        .iter()
        .filter(|s| s.t >= start && s.t < end)
        .map(|s| (s.t, s))
        .collect();
    let sel: Vec<&TimeseriesRow> = rows
        .iter()
        .filter(|r| r.t >= start && r.t < end && r.achieved_rps > 0)
        .collect();
    if sel.is_empty() {
        return None;
    }
    let pairs = |f: &dyn Fn(&TimeseriesRow, Option<&SignalRow>) -> Option<f64>| {
        sel.iter()
            .filter_map(|r| f(r, sig.get(&r.t).copied()).map(|x| (r.p99_ms, x)))
            .collect::<Vec<_>>()
    };
    Some(TailFollows {
        seconds: sel.len(),
        gc_pause: spearman(&pairs(&|_, s| s?.gc_pause_ms)),
        heap: spearman(&pairs(&|_, s| s?.heap_used_mb)),
        cpu: spearman(&pairs(&|r, _| r.stack_cpu_pct)),
    })
}

/// Aggregates the rows with `start ≤ t < end`; `None` when none of them has a runtime figure
/// (the stack exposes no `/metrics`, or none of the names ceiling reads).
pub fn runtime_window(signals: &[SignalRow], start: u32, end: u32) -> Option<RuntimeWindow> {
    let sel: Vec<&SignalRow> = signals
        .iter()
        .filter(|s| s.t >= start && s.t < end)
        .filter(|s| s.heap_used_mb.is_some() || s.gc_count.is_some() || s.threads.is_some())
        .collect();
    if sel.is_empty() {
        return None;
    }
    let heap: Vec<f64> = sel.iter().filter_map(|s| s.heap_used_mb).collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let gc: Vec<&&SignalRow> = sel.iter().filter(|s| s.gc_count.is_some()).collect();
    let threads: Vec<f64> = sel.iter().filter_map(|s| s.threads).collect();
    Some(RuntimeWindow {
        seconds: sel.len(),
        heap_kind: sel.iter().find_map(|s| s.heap_kind),
        heap_mb_mean: mean(&heap),
        heap_mb_min: heap.iter().copied().reduce(f64::min),
        heap_mb_max: heap.iter().copied().reduce(f64::max),
        gc_count: (!gc.is_empty()).then(|| gc.iter().filter_map(|s| s.gc_count).sum()),
        gc_pause_ms_per_s: (!gc.is_empty())
            .then(|| gc.iter().filter_map(|s| s.gc_pause_ms).sum::<f64>() / gc.len() as f64),
        threads_mean: mean(&threads),
        tail: None,
    })
}

/// Fills every shelf's [`crate::ShelfResult::runtime`] from the recorded signals (valid shelves
/// too: the heap of a passing shelf is what source 000 tabulated), with what its tail followed
/// from the per-second `rows`.
pub fn runtime_analysis(
    a: &mut crate::StackAnalysis,
    rows: &[TimeseriesRow],
    signals: &[SignalRow],
) {
    for s in &mut a.shelves {
        s.runtime = match (s.window.kept_start_s, s.window.kept_end_s) {
            (Some(k0), Some(k1)) if k1 > k0 => {
                let (t0, t1) = (k0.floor().max(0.0) as u32, k1.ceil() as u32);
                runtime_window(signals, t0, t1).map(|mut w| {
                    w.tail = tail_follows(rows, signals, t0, t1);
                    w
                })
            }
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JVM heap sawing between 100 and 300 MiB with one collection every 4 s, known in advance.
    fn sawing() -> Vec<SignalRow> {
        (0..20)
            .map(|t| {
                let mut r = SignalRow::new(t);
                r.heap_used_mb = Some(100.0 + 50.0 * (t % 5) as f64);
                r.heap_kind = Some(HeapKind::JvmHeapUsed);
                let collects = t % 5 == 4;
                r.gc_count = Some(collects as u64);
                r.gc_pause_ms = Some(if collects { 20.0 } else { 0.0 });
                r.threads = Some(40.0);
                r
            })
            .collect()
    }

    #[test]
    fn window_reports_the_saw_and_the_pauses() {
        let w = runtime_window(&sawing(), 0, 10).unwrap();
        assert_eq!(w.seconds, 10);
        assert_eq!(w.heap_kind, Some(HeapKind::JvmHeapUsed));
        assert_eq!(w.heap_mb_min, Some(100.0));
        assert_eq!(w.heap_mb_max, Some(300.0));
        assert_eq!(w.heap_mb_mean, Some(200.0));
        assert_eq!(w.gc_count, Some(2));
        assert_eq!(w.gc_pause_ms_per_s, Some(4.0));
        assert_eq!(w.threads_mean, Some(40.0));
    }

    #[test]
    fn the_tail_follows_the_pauses_of_a_sawing_heap_not_its_level() {
        // truth: p99 is 50 ms in the seconds with a collection and 5 ms otherwise; the heap's
        // level rises through each cycle and falls after the collection, so it ranks the slow
        // seconds highest but also the two before them: a weaker relation
        let sig = sawing();
        let rows: Vec<TimeseriesRow> = sig
            .iter()
            .map(|s| TimeseriesRow {
                t: s.t,
                achieved_rps: 100,
                p99_ms: if s.gc_count == Some(1) { 50.0 } else { 5.0 },
                stack_cpu_pct: Some(40.0 + (s.t % 3) as f64),
                ..Default::default()
            })
            .collect();
        let f = tail_follows(&rows, &sig, 0, 20).unwrap();
        assert_eq!(f.seconds, 20);
        assert!((f.gc_pause.unwrap() - 1.0).abs() < 1e-12, "{f:?}");
        let heap = f.heap.unwrap();
        assert!(heap > 0.3 && heap < 0.9, "{f:?}");
        assert!(f.cpu.unwrap().abs() < 0.3, "{f:?}");
        // and it reaches the shelf through runtime_analysis' window
        let w = runtime_window(&sig, 0, 20).unwrap();
        assert_eq!(w.tail, None, "runtime_window alone has no rows");
    }

    #[test]
    fn no_runtime_figures_is_none_not_zero() {
        let rows: Vec<SignalRow> = (0..5).map(SignalRow::new).collect();
        assert_eq!(runtime_window(&rows, 0, 5), None);
        // a heap without GC counters leaves the GC columns empty
        let mut r = SignalRow::new(0);
        r.heap_used_mb = Some(8.0);
        let w = runtime_window(&[r], 0, 1).unwrap();
        assert_eq!(w.gc_count, None);
        assert_eq!(w.gc_pause_ms_per_s, None);
        assert_eq!(w.heap_kind, None);
    }
}
