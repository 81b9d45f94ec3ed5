//! The lab's progress lines, handed to whoever runs it: the binary prints them on stderr, a test
//! collects them, a quiet caller drops them. The lab itself never prints.

use std::sync::Arc;

/// Where the lab's progress lines go. Cheap to clone: every step of one command shares it.
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(&str) + Send + Sync>);

impl Progress {
    /// Lines handed to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Progress {
        Progress(Arc::new(f))
    }

    /// Lines dropped.
    pub fn none() -> Progress {
        Progress::new(|_| {})
    }

    /// Hands one line on.
    pub fn say(&self, line: &str) {
        (self.0)(line)
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
    }
}
