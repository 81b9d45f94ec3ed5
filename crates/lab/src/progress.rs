//! The lab's progress lines and live views, handed to whoever runs it: the binary prints the
//! lines on stderr and draws the views (`ceiling_report::live::TerminalView`), a test collects
//! them, a quiet caller drops them. The lab itself never prints.

use ceiling_metrics::{LiveView, ViewMaker};
use std::sync::Arc;
use std::time::Duration;

/// Where the lab's progress lines go, and who draws a measurement as it runs. Cheap to clone:
/// every step of one command shares it.
#[derive(Clone)]
pub struct Progress {
    lines: Arc<dyn Fn(&str) + Send + Sync>,
    views: Option<ViewMaker>,
}

impl Progress {
    /// Lines handed to `f`; no live view.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Progress {
        Progress {
            lines: Arc::new(f),
            views: None,
        }
    }

    /// Lines dropped, no live view.
    pub fn none() -> Progress {
        Progress::new(|_| {})
    }

    /// The same, with each measurement that is not quiet drawn by a view `views` makes.
    pub fn with_views(mut self, views: ViewMaker) -> Progress {
        self.views = Some(views);
        self
    }

    /// Hands one line on.
    pub fn say(&self, line: &str) {
        (self.lines)(line)
    }

    /// A live view for the measurement of `label`, expected to last `total`; `None` when this
    /// progress draws none.
    pub fn view(&self, label: &str, total: Option<Duration>) -> Option<Box<dyn LiveView>> {
        self.views.as_ref().map(|make| make(label, total))
    }
}

impl Default for Progress {
    fn default() -> Progress {
        Progress::none()
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_clone_hands_its_lines_to_the_same_place() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        let p = Progress::new(move |l| s.lock().unwrap().push(l.to_string()));
        let q = p.clone();
        p.say("a");
        q.say("b");
        Progress::none().say("dropped");
        assert_eq!(*seen.lock().unwrap(), ["a", "b"]);
        assert!(p.view("x", None).is_none(), "no view unless given a maker");
    }

    #[test]
    fn a_progress_with_views_makes_one_per_measurement_with_its_label_and_length() {
        struct Nothing;
        impl LiveView for Nothing {
            fn second(&mut self, _: &ceiling_metrics::LiveSecond<'_>) {}
            fn finish(&mut self) {}
        }
        let asked = Arc::new(Mutex::new(Vec::new()));
        let a = asked.clone();
        let p =
            Progress::none().with_views(Arc::new(move |label: &str, total: Option<Duration>| {
                a.lock().unwrap().push((label.to_string(), total));
                Box::new(Nothing) as Box<dyn LiveView>
            }));
        assert!(p
            .clone()
            .view("go-pgx", Some(Duration::from_secs(60)))
            .is_some());
        assert_eq!(
            *asked.lock().unwrap(),
            [("go-pgx".to_string(), Some(Duration::from_secs(60)))]
        );
    }
}
