//! What a live view is handed as a measurement runs: one [`LiveSecond`] a second. The lab records
//! and judges; drawing is the output layer's (`ceiling_report::live::TerminalView` draws the
//! progress bar, the sparklines and the stage's verdict on stderr). A test hands its own view.

use crate::TimeseriesRow;
use std::sync::Arc;
use std::time::Duration;

/// One recorded second, as a live view receives it.
#[derive(Debug, Clone, Copy)]
pub struct LiveSecond<'a> {
    /// The row written to `timeseries.csv` for this second.
    pub row: &'a TimeseriesRow,
    /// Seconds since this view's measurement began (a round continuing a stack's clock counts
    /// from the round's own start).
    pub elapsed: u32,
    /// The current stage so far against the SLO, when the recorder was given one.
    pub stage: Option<&'a StageVerdict>,
}

/// The current stage's requests so far against the SLO: latency merged over every second and
/// every request name of the stage, and its error rate.
#[derive(Debug, Clone, PartialEq)]
pub struct StageVerdict {
    /// Seconds of the stage so far.
    pub seconds: u32,
    /// Each limit of the SLO: (percentile, measured ms, limit ms).
    pub percentiles: Vec<(f64, f64, f64)>,
    /// Errors over requests so far (0 with no request).
    pub error_rate: f64,
    /// The SLO's bound on the error rate (a fraction; must stay below it).
    pub max_error_rate: f64,
}

impl StageVerdict {
    /// Every limit holds so far.
    pub fn holds(&self) -> bool {
        self.percentiles.iter().all(|&(_, v, l)| v <= l) && self.error_rate < self.max_error_rate
    }
}

/// Draws a measurement as it runs. Called from the thread that records the seconds.
pub trait LiveView: Send {
    /// One second has been recorded.
    fn second(&mut self, s: &LiveSecond<'_>);
    /// The measurement ended: clear what was drawn.
    fn finish(&mut self);
}

/// Makes the live view of one measurement from its label (a stack, `load`, a repetition) and its
/// expected length (`None`: open-ended).
pub type ViewMaker = Arc<dyn Fn(&str, Option<Duration>) -> Box<dyn LiveView> + Send + Sync>;
