//! A remote stack's resources, from an agent beside it (issue 15, the remote stand's first part).
//!
//! When the stack under test runs on another host (`ceiling search --url http://host:port
//! --allow-remote`), this host cannot read its CPU or memory. A `ceiling agent --sample-stack PID`
//! on that host can: the coordinator opens a session with it (token, clock probe, the same bound
//! on the offset as for generator agents), sends [`Message::Sample`] with the run's start on the
//! agent's clock, and receives one [`Message::Resource`] per second on the run's clock. The
//! samples join the local ones (the same accumulator, signals and files), so the stack's CPU, RSS
//! and CPU per request are reported as for a local stack.

use crate::coordinator::Agents;
use crate::error::{refusal, refuse, Context, Result};
use crate::session;
use crate::{read_message, write_message, Message};
use ceiling_metrics::ResourceSample;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// Samples streaming in from an agent beside a remote stack; see the module docs.
pub struct RemoteSampler {
    address: String,
    rx: Receiver<ResourceSample>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<u64>>>,
}

/// Opens a sampling session with `agents.addresses[0]` (clock offset checked against
/// `agents.max_clock_offset`) and asks for samples whose second 0 is `start_at_us` on this host's
/// clock, for at most `max`.
pub fn start(agents: &Agents, start_at_us: i64, max: Duration) -> Result<RemoteSampler> {
    let Some(addr) = agents.addresses.first().cloned() else {
        refuse!("no stack agent given");
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (r, w) = rt.block_on(async {
        let (r, mut w, o) =
            crate::coordinator::connect(&addr, &agents.token, "stack agent", " --sample-stack PID")
                .await?;
        session::check_offsets(
            std::slice::from_ref(&o),
            agents.max_clock_offset.as_micros() as i64,
        )
        .map_err(|e| refusal!("{e}"))?;
        write_message(
            &mut w,
            &Message::Sample {
                start_at_us: start_at_us + o.offset_us,
                max_s: max.as_secs().max(1),
            },
        )
        .await
        .with_context(|| format!("stack agent {addr}: asking for samples"))?;
        Ok::<_, crate::error::AgentError>((r, w))
    })?;
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name("ceiling-stack-agent".into())
        .spawn(move || rt.block_on(receive(r, w, tx, stop2)))?;
    Ok(RemoteSampler {
        address: addr,
        rx,
        stop,
        thread: Some(thread),
    })
}

/// Forwards the agent's samples until it is done, the channel ends, or `stop` (then the
/// coordinator's side is closed, which ends the agent's sampling, and what it still sends within
/// 3 s is taken). Returns the number of samples.
async fn receive(
    mut r: BufReader<tokio::net::tcp::OwnedReadHalf>,
    mut w: tokio::net::tcp::OwnedWriteHalf,
    tx: Sender<ResourceSample>,
    stop: Arc<AtomicBool>,
) -> Result<u64> {
    // A reader task, so that waiting for a message can be given up without losing half a line.
    let (mtx, mut mrx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let m = read_message(&mut r).await;
            let end = !matches!(m, Ok(Some(Message::Resource(_))));
            if mtx.send(m).is_err() || end {
                return;
            }
        }
    });
    let mut n = 0u64;
    let mut grace: Option<tokio::time::Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) && grace.is_none() {
            let _ = w.shutdown().await;
            grace = Some(tokio::time::Instant::now() + Duration::from_secs(3));
        }
        if grace.is_some_and(|g| tokio::time::Instant::now() > g) {
            return Ok(n);
        }
        let m = tokio::select! {
            m = mrx.recv() => m,
            _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
        };
        match m {
            Some(Ok(Some(Message::Resource(s)))) => {
                n += 1;
                let _ = tx.send(s);
            }
            Some(Ok(Some(Message::Done { .. }))) | Some(Ok(None)) | None => return Ok(n),
            Some(Ok(Some(Message::Refused { reason }))) => refuse!("refused: {reason}"),
            Some(Ok(Some(other))) => refuse!("unexpected message: {other:?}"),
            Some(Err(e)) => return Err(e.into()),
        }
    }
}

impl RemoteSampler {
    /// The samples that arrived since the last call.
    pub fn drain(&self) -> Vec<ResourceSample> {
        self.rx.try_iter().collect()
    }

    /// Ends the session; returns the samples not yet drained and a line for the run's notes
    /// (how many samples came, or why the session failed).
    pub fn finish(mut self) -> (Vec<ResourceSample>, String) {
        self.stop.store(true, Ordering::Relaxed);
        let res = self.thread.take().map(|t| t.join());
        let rest = self.rx.try_iter().collect();
        let note = match res {
            Some(Ok(Ok(n))) => format!(
                "the stack's CPU and memory came from the agent beside it ({}): {n} samples",
                self.address
            ),
            Some(Ok(Err(e))) => format!(
                "the stack agent {} failed: {e:#}; the stack's figures cover what arrived",
                self.address
            ),
            _ => format!(
                "the stack agent {}'s session ended abnormally",
                self.address
            ),
        };
        (rest, note)
    }
}
