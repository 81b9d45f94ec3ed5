//! Ctrl-C, SIGTERM and SIGHUP for the whole program — the one place they are handled.
//!
//! * The first signal cancels: [`cancelled`] turns true and [`cancel_flag`] (and every flag given
//!   to [`link`]) is set. Every blocking step of the stand polls it — a stack build, `initdb`,
//!   PostgreSQL's start-up, a `psql` call (the seeding), a stack's health wait — and stops its own
//!   child process group at once, returning [`crate::SuperviseError::Cancelled`]; the load engine
//!   and the conformance suite stop on the flag too. The caller then writes what it has, and the
//!   owners stop what they started (stacks, PostgreSQL, cgroups) as they are dropped.
//! * The second signal forces: a helper thread stops everything still registered
//!   ([`crate::cleanup_all`] with a short grace) and exits with status 128 + signal.
//! * A third signal exits at once from the handler, in case even that hangs.
//!
//! Children never see the terminal's Ctrl-C themselves: each runs in its own process group, so
//! only ceiling decides how they stop.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static LINKED: Mutex<Vec<Arc<AtomicBool>>> = Mutex::new(Vec::new());
static COUNT: AtomicU32 = AtomicU32::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);

/// The process-wide cancel flag: set by the first signal (or [`cancel`]). Hand it to the load
/// engine as its stop flag.
pub fn cancel_flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

/// True once the run was cancelled.
pub fn cancelled() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// Cancels the run as a first Ctrl-C would (also sets every [`link`]ed flag).
pub fn cancel() {
    cancel_flag().store(true, Ordering::SeqCst);
    set_linked();
}

/// Also sets `flag` when the run is cancelled (at once if it already was): for code that keeps a
/// stop flag of its own.
pub fn link(flag: Arc<AtomicBool>) {
    if cancelled() {
        flag.store(true, Ordering::SeqCst);
    }
    LINKED.lock().unwrap_or_else(|e| e.into_inner()).push(flag);
}

/// The signal that cancelled the run (2 = SIGINT, 15 = SIGTERM), if a signal did.
pub fn interrupted() -> Option<i32> {
    match LAST.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

fn set_linked() {
    for f in LINKED.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        f.store(true, Ordering::SeqCst);
    }
}

/// Installs the handlers (idempotent). `force_grace` is how long the second signal lets each
/// process still running shut down gracefully before SIGKILL.
///
/// signal-hook does the async-signal-safe part: in the handler itself it sets the cancel flag
/// and, once the run is being forced, exits at once (the third signal); everything else runs on
/// a thread fed by signal-hook's self-pipe.
pub fn install_signal_cleanup(force_grace: Duration) -> std::io::Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let flag = cancel_flag();
    let forcing = Arc::new(AtomicBool::new(false));
    let sigs = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    for sig in sigs {
        // registered first, so it runs before the flag below: exits only while forcing
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, forcing.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    let mut signals = signal_hook::iterator::Signals::new(sigs)?;
    std::thread::Builder::new()
        .name("ceiling-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                LAST.store(sig, Ordering::SeqCst);
                let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
                if n == 1 {
                    set_linked();
                    eprintln!("\nceiling: stopping — writing what was measured (press Ctrl-C again to force)");
                } else {
                    forcing.store(true, Ordering::SeqCst);
                    eprintln!("\nceiling: forced — stopping everything ceiling started");
                    for l in crate::cleanup_all(force_grace) {
                        eprintln!("ceiling: {l}");
                    }
                    std::process::exit(128 + sig);
                }
            }
        })?;
    let _ = INSTALLED.set(());
    Ok(())
}
