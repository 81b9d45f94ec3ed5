//! Ctrl-C, SIGTERM and SIGHUP for the whole program — the one place they are handled.
//!
//! * The first signal cancels: [`cancelled`] turns true and [`cancel_flag`] (and every flag given
//!   to [`link`]) is set. Every blocking step of the stand polls it — a stack build, `initdb`,
//!   PostgreSQL's start-up, a `psql` call (the seeding), a stack's health wait — and stops its own
//!   child process group at once, returning [`crate::StandError::Cancelled`]; the load engine
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
static PIPE_W: AtomicI32 = AtomicI32::new(-1);

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

extern "C" fn on_signal(sig: libc::c_int) {
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    LAST.store(sig, Ordering::SeqCst);
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::SeqCst);
    }
    if n >= 3 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
    let fd = PIPE_W.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = [n.min(255) as u8];
        // SAFETY: write(2) on our own pipe is async-signal-safe.
        unsafe { libc::write(fd, b.as_ptr() as *const libc::c_void, 1) };
    }
}

/// Installs the handlers (idempotent). `force_grace` is how long the second signal lets each
/// process still running shut down gracefully before SIGKILL.
pub fn install_signal_cleanup(force_grace: Duration) -> std::io::Result<()> {
    if PIPE_W.load(Ordering::SeqCst) >= 0 {
        return Ok(());
    }
    cancel_flag();
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let rfd = fds[0];
    std::thread::Builder::new()
        .name("ceiling-signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                // SAFETY: read(2) into a local buffer from our pipe.
                let n = unsafe { libc::read(rfd, b.as_mut_ptr() as *mut libc::c_void, 1) };
                if n == 1 {
                    if b[0] == 1 {
                        set_linked();
                        eprintln!("\nceiling: stopping — writing what was measured (press Ctrl-C again to force)");
                    } else {
                        eprintln!("\nceiling: forced — stopping everything ceiling started");
                        for l in crate::cleanup_all(force_grace) {
                            eprintln!("ceiling: {l}");
                        }
                        std::process::exit(128 + LAST.load(Ordering::SeqCst));
                    }
                } else if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                } else {
                    break;
                }
            }
        })?;
    PIPE_W.store(fds[1], Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only does async-signal-safe work (atomics, write(2),
        // _exit).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}
