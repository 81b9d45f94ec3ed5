//! The coordinator's side of a session with several agents: open every session and measure every
//! clock, refuse to start when an offset exceeds the bound, hand each agent its share (`I/N`) and a
//! common start instant on its own clock, then merge the seconds they stream back **exactly**
//! (HdrHistogram addition by second index, never averaged percentiles), in index order, as a local
//! run would emit them. An agent that vanishes is reported with what it had sent; what arrived is
//! kept. Every measurement is one [`Job`]: [`open_job`] (the clock probes and the data files),
//! then [`Session::run_job`] — `ceiling load --agents` at once, `ceiling run|search --agents` at
//! the instant the lab's samplers start from.

use crate::error::{refusal, refuse, Context, Result};
use crate::session::{self, now_us, Opened};
use crate::{data_messages, read_message, write_message, Job, Message, OfferedFile};
use ceiling_load::Summary;
use ceiling_metrics::Second;
use ceiling_plan::RequestSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// Clock probes per agent; the one with the smallest round trip gives the offset.
pub const CLOCK_PROBES: usize = 16;

/// Time between the last start message and the common start instant.
pub const START_LEAD: Duration = Duration::from_millis(1000);

/// The agents a run uses, and what the coordinator holds them to.
#[derive(Debug, Clone)]
pub struct Agents {
    /// `host:port` of each `ceiling agent`, in shard order.
    pub addresses: Vec<String>,
    /// The shared token.
    pub token: String,
    /// The largest clock offset (less half its probe's round trip) a start accepts.
    pub max_clock_offset: Duration,
}

/// One agent's part of a coordinated run.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// `host:port` as given.
    pub address: String,
    /// The name the agent gave.
    pub name: String,
    /// Agent clock − coordinator clock, µs.
    pub offset_us: i64,
    /// Round trip of the probe that gave the offset, µs.
    pub rtt_us: i64,
    /// Its share of the schedule.
    pub shard: (u64, u64),
    /// Its own seconds added up (its lag, CPU and counts: its generator verdict).
    pub summary: Summary,
    /// Its process CPU over the run, seconds (from its Done).
    pub cpu_s: f64,
    /// Why it vanished, if it did.
    pub lost: Option<String>,
    /// The first second (run clock) it no longer covered, when it vanished: it had recorded
    /// every second before this one.
    pub lost_from_s: Option<u32>,
}

/// The outcome of [`Session::run_job`].
#[derive(Debug)]
pub struct Coordinated {
    /// Every agent's seconds merged by index (what a local run's summary would be).
    pub merged: Summary,
    /// Per agent.
    pub agents: Vec<AgentRun>,
}

enum Event {
    Msg(Message),
    Gone(String),
}

/// Adds `s` into the pending second of its index. Counts, histograms and rates add; the
/// generator's CPU is the **busiest agent's** (each agent is its own process, and the shelf's
/// generator check is about one process keeping up — summing two agents' 50% would call a
/// healthy pair generator-bound).
fn merge_pending(pending: &mut BTreeMap<u32, Second>, s: Second) {
    match pending.get_mut(&s.t) {
        Some(m) => {
            let busiest = m.generator_cpu.max(s.generator_cpu);
            m.merge(&s);
            m.generator_cpu = busiest;
        }
        None => {
            pending.insert(s.t, s);
        }
    }
}

/// A channel to one agent, its two halves.
pub(crate) type Channel = (
    BufReader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
);

/// Connects to the agent at `addr` (5 s) and opens a session (token, clock probes; 10 s).
/// `what` names it in errors (`agent`, `stack agent`), `flags` completes the hint of how it is
/// started (` --sample-stack PID`).
pub(crate) async fn connect(
    addr: &str,
    token: &str,
    what: &str,
    flags: &str,
) -> Result<(
    BufReader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
    Opened,
)> {
    let s = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
        .await
        .with_context(|| format!("{what} {addr}: no answer within 5 s"))?
        .with_context(|| {
            format!("{what} {addr}: cannot connect (is `ceiling agent --listen {addr}{flags}` running?)")
        })?;
    s.set_nodelay(true)?;
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let o = tokio::time::timeout(
        Duration::from_secs(10),
        session::coordinator_open(&mut r, &mut w, token, CLOCK_PROBES),
    )
    .await
    .with_context(|| format!("{what} {addr}: handshake took more than 10 s"))?
    .with_context(|| format!("{what} {addr}"))?;
    Ok((r, w, o))
}

/// Sessions opened with every agent (token accepted, clocks measured and within the bound, the
/// job's data delivered), waiting for their start: [`Session::run`].
pub struct Session {
    rt: tokio::runtime::Runtime,
    addresses: Vec<String>,
    opened: Vec<Opened>,
    chans: Vec<Channel>,
}

/// A data file of a job: its offer (name, SHA-256, size) and where its text comes from — held in
/// memory, or read from this host's disk only when an agent asks for it. A search opens one
/// session per probe; after the first, every agent usually holds the file, so nothing is read.
#[derive(Debug, Clone)]
pub struct DataFile {
    /// What the agents are offered.
    pub offer: OfferedFile,
    text: Text,
}

/// Where a [`DataFile`]'s text is.
#[derive(Debug, Clone)]
enum Text {
    /// Read already (the first time the file was hashed, or given by the caller).
    Held(Arc<str>),
    /// On disk; read, and checked against the offer's digest, when an agent wants it.
    OnDisk(PathBuf),
}

/// Digests of data files this process has hashed, by path, with the size and modification time
/// the file had then: a file unchanged in both is not read again to be offered.
static DIGESTS: std::sync::Mutex<BTreeMap<PathBuf, (u64, std::time::SystemTime, String)>> =
    std::sync::Mutex::new(BTreeMap::new());

impl DataFile {
    /// Source `name`'s file with this text.
    pub fn new(name: &str, text: String) -> Self {
        DataFile {
            offer: OfferedFile::of(name, &text),
            text: Text::Held(text.into()),
        }
    }

    /// Source `name`'s file at `path`. Hashed (and held) the first time this process sees it;
    /// afterwards, while its size and modification time are unchanged, offered by the digest
    /// kept then and read only if an agent wants it (and then checked against that digest).
    pub fn at_path(name: &str, path: &std::path::Path) -> Result<Self> {
        let what = || reading(name, path);
        let meta = std::fs::metadata(path).with_context(what)?;
        let stamp = (meta.len(), meta.modified().with_context(what)?);
        let known = DIGESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .filter(|(len, mtime, _)| (*len, *mtime) == stamp)
            .map(|(_, _, sha)| sha.clone());
        if let Some(sha256) = known {
            return Ok(DataFile {
                offer: OfferedFile {
                    name: name.to_string(),
                    sha256,
                    bytes: stamp.0,
                },
                text: Text::OnDisk(path.to_path_buf()),
            });
        }
        let text = std::fs::read_to_string(path).with_context(what)?;
        let file = DataFile::new(name, text);
        if file.offer.bytes == stamp.0 {
            DIGESTS.lock().unwrap_or_else(|e| e.into_inner()).insert(
                path.to_path_buf(),
                (stamp.0, stamp.1, file.offer.sha256.clone()),
            );
        }
        Ok(file)
    }

    /// The file's text as the [`Message::Data`] pieces that carry it. A file read now from disk
    /// must still have the offered digest: one changed since it was offered is refused here
    /// rather than sent under the old digest.
    fn messages(&self) -> Result<Vec<Message>> {
        let name = &self.offer.name;
        match &self.text {
            Text::Held(t) => Ok(data_messages(name, t)),
            Text::OnDisk(path) => {
                let t = std::fs::read_to_string(path).with_context(|| reading(name, path))?;
                if OfferedFile::of(name, &t) != self.offer {
                    DIGESTS
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(path);
                    refuse!(
                        "data source `{name}` ({}) changed after it was offered to the agents \
                         (its content no longer has the digest offered); run again",
                        path.display()
                    );
                }
                Ok(data_messages(name, &t))
            }
        }
    }
}

/// The context of an error reading a data file for the agents.
fn reading(name: &str, path: &std::path::Path) -> String {
    format!(
        "reading data source `{name}` ({}) to send to the agents",
        path.display()
    )
}

/// Offers `data` to one agent and sends the files it asks for. `pieces[i]` holds `data[i]`'s
/// messages once a first agent has wanted it, so a file is read and split once per session.
async fn deliver<R, W>(
    r: &mut R,
    w: &mut W,
    addr: &str,
    data: &[DataFile],
    pieces: &mut [Option<Vec<Message>>],
) -> Result<()>
where
    R: tokio::io::AsyncBufRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let offer = Message::Offer {
        files: data.iter().map(|f| f.offer.clone()).collect(),
    };
    write_message(w, &offer)
        .await
        .with_context(|| format!("agent {addr}: offering the job's data"))?;
    let answer = tokio::time::timeout(Duration::from_secs(30), read_message(r))
        .await
        .with_context(|| format!("agent {addr}: no answer to the data offer within 30 s"))?
        .with_context(|| format!("agent {addr}: reading its answer to the data offer"))?;
    let names = match answer {
        Some(Message::Want { names }) => names,
        Some(Message::Refused { reason }) => {
            refuse!("agent {addr} refused the job's data: {reason}")
        }
        Some(m) => refuse!(
            "agent {addr}: expected its answer to the data offer, got {}",
            m.kind()
        ),
        None => refuse!("agent {addr} closed the channel at the data offer"),
    };
    if let Some(n) = names
        .iter()
        .find(|n| !data.iter().any(|f| &f.offer.name == *n))
    {
        refuse!("agent {addr} asked for data source `{n}`, which was not offered");
    }
    for (f, p) in data.iter().zip(pieces.iter_mut()) {
        if !names.contains(&f.offer.name) {
            continue;
        }
        if p.is_none() {
            *p = Some(f.messages()?);
        }
        for m in p.iter().flatten() {
            write_message(w, m)
                .await
                .with_context(|| format!("agent {addr}: sending data source `{}`", f.offer.name))?;
        }
    }
    Ok(())
}

/// Opens a session with every agent: connects, presents the token, probes the clocks, refuses
/// when an offset exceeds `agents.max_clock_offset` (naming the agent), then offers every agent
/// the job's `data` and sends each the files it lacks, so that no agent's start waits on another's
/// transfer.
pub fn open(agents: &Agents, data: &[DataFile]) -> Result<Session> {
    if agents.addresses.is_empty() {
        refuse!("no agents given");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (opened, chans) = rt.block_on(async {
        let mut opened: Vec<Opened> = Vec::new();
        let mut chans = Vec::new();
        for addr in &agents.addresses {
            let (r, w, o) = connect(addr, &agents.token, "agent", "").await?;
            opened.push(o);
            chans.push((r, w));
        }
        session::check_offsets(&opened, agents.max_clock_offset.as_micros() as i64)
            .map_err(|e| refusal!("{e}"))?;
        if !data.is_empty() {
            let mut pieces = vec![None; data.len()];
            for (i, (r, w)) in chans.iter_mut().enumerate() {
                deliver(r, w, &agents.addresses[i], data, &mut pieces).await?;
            }
        }
        Ok::<_, crate::error::AgentError>((opened, chans))
    })?;
    Ok(Session {
        rt,
        addresses: agents.addresses.clone(),
        opened,
        chans,
    })
}

impl Session {
    /// Starts every agent at `start_at_us` (this host's clock, µs since the Unix epoch; each
    /// agent is sent it on its own clock through its measured offset) with `start(shard, that
    /// instant)`, and merges the seconds they stream into `on_second` in index order. `stop` set
    /// (Ctrl-C, a halt) half-closes every channel, which ends the agents' runs; what they send
    /// after that is still read. Bounded by `hard_limit` plus the lead and a margin.
    pub fn run(
        self,
        start_at_us: i64,
        start: impl Fn((u64, u64), i64) -> Message,
        requests: &[RequestSpec],
        hard_limit: Duration,
        stop: &Arc<AtomicBool>,
        mut on_second: impl FnMut(&Second),
    ) -> Result<Coordinated> {
        let Session {
            rt,
            addresses,
            opened,
            chans,
        } = self;
        let n = addresses.len() as u64;
        let lead = Duration::from_micros((start_at_us - now_us()).max(0) as u64);
        rt.block_on(async move {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Event)>();
            let mut writers = Vec::new();
            for (i, ((mut r, mut w), o)) in chans.into_iter().zip(&opened).enumerate() {
                let m = start((i as u64, n), start_at_us + o.offset_us);
                write_message(&mut w, &m)
                    .await
                    .with_context(|| format!("agent {}: sending its start", addresses[i]))?;
                writers.push(w);
                let tx = tx.clone();
                tokio::spawn(async move {
                    loop {
                        match read_message(&mut r).await {
                            Ok(Some(m)) => {
                                let done =
                                    matches!(m, Message::Done { .. } | Message::Refused { .. });
                                if tx.send((i, Event::Msg(m))).is_err() || done {
                                    return;
                                }
                            }
                            Ok(None) => {
                                let _ = tx.send((
                                    i,
                                    Event::Gone("closed the channel before it was done".into()),
                                ));
                                return;
                            }
                            Err(e) => {
                                let _ = tx.send((i, Event::Gone(format!("channel error: {e}"))));
                                return;
                            }
                        }
                    }
                });
            }
            drop(tx);

            let mut runs: Vec<AgentRun> = addresses
                .iter()
                .zip(&opened)
                .enumerate()
                .map(|(i, (addr, o))| AgentRun {
                    address: addr.clone(),
                    name: o.agent.clone(),
                    offset_us: o.offset_us,
                    rtt_us: o.rtt_us,
                    shard: (i as u64, n),
                    summary: Summary::new(requests),
                    cpu_s: 0.0,
                    lost: None,
                    lost_from_s: None,
                })
                .collect();
            let mut finished = vec![false; runs.len()];
            let mut last_t: Vec<Option<u32>> = vec![None; runs.len()];
            let mut pending: BTreeMap<u32, Second> = BTreeMap::new();
            let mut merged = Summary::new(requests);
            let (mut failures, mut first_error, mut stopped_early) = (0u64, None::<String>, false);
            let mut refusals = Vec::new();
            let deadline =
                tokio::time::Instant::now() + hard_limit + lead + Duration::from_secs(15);
            let mut half_closed = false;
            loop {
                if finished.iter().all(|f| *f) {
                    break;
                }
                if stop.load(Ordering::Relaxed) && !half_closed {
                    // Tell every agent (EOF on its channel) and keep reading what they send.
                    half_closed = true;
                    for w in &mut writers {
                        let _ = w.shutdown().await;
                    }
                }
                let ev = tokio::select! {
                    ev = rx.recv() => ev,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    _ = tokio::time::sleep_until(deadline) => None,
                };
                let Some((i, ev)) = ev else {
                    for (k, f) in finished.iter_mut().enumerate() {
                        if !*f {
                            *f = true;
                            runs[k].lost = Some(format!(
                            "no word from it by the run's time bound (last second recorded: {})",
                            last_t[k].map_or("none".into(), |t| t.to_string())
                        ));
                            runs[k].lost_from_s = Some(last_t[k].map_or(0, |t| t + 1));
                        }
                    }
                    break;
                };
                match ev {
                    Event::Msg(Message::Second(w)) => {
                        let s = w.to_second().map_err(|e| {
                            refusal!(
                                "agent {}: a second that does not decode: {e}",
                                runs[i].address
                            )
                        })?;
                        runs[i].summary.add(&s);
                        last_t[i] = Some(s.t);
                        merge_pending(&mut pending, s);
                    }
                    Event::Msg(Message::Done {
                        connect_failures,
                        connect_error,
                        stopped_early: se,
                        cpu_s,
                        resets,
                        tls,
                        h2,
                        io,
                        ..
                    }) => {
                        finished[i] = true;
                        if let Some(io) = io {
                            let said = format!("{}: {io}", runs[i].name);
                            merged.io = Some(match merged.io.take() {
                                Some(m) => format!("{m}; {said}"),
                                None => said,
                            });
                            runs[i].summary.io = Some(io);
                        }
                        if se && !stop.load(Ordering::Relaxed) {
                            // it stopped on its side (a signal, its own time bound) while the
                            // run went on: the rest of its share was never sent
                            runs[i].lost = Some(format!(
                                "stopped early on its side (a signal or its own time bound) after {} s; its record of {} measured requests is kept",
                                last_t[i].map_or(0, |t| t + 1),
                                runs[i].summary.sent
                            ));
                            runs[i].lost_from_s = Some(last_t[i].map_or(0, |t| t + 1));
                        }
                        runs[i].cpu_s = cpu_s;
                        runs[i].summary.connect_failures = connect_failures;
                        runs[i].summary.connect_error = connect_error.clone();
                        runs[i].summary.stopped_early = se;
                        runs[i].summary.resets = resets.to_tally();
                        merged.resets.merge(&runs[i].summary.resets);
                        if let Some(w) = tls {
                            let t = w.to_tally().map_err(|e| {
                                refusal!(
                                    "agent {}: a TLS tally that does not decode: {e}",
                                    runs[i].address
                                )
                            })?;
                            match &mut merged.tls {
                                Some(m) => m.merge(&t),
                                None => merged.tls = Some(t.clone()),
                            }
                            runs[i].summary.tls = Some(t);
                        }
                        if let Some(w) = h2 {
                            let t = w.to_tally();
                            match &mut merged.h2 {
                                Some(m) => m.merge(&t),
                                None => merged.h2 = Some(t),
                            }
                            runs[i].summary.h2 = Some(t);
                        }
                        failures += connect_failures;
                        if first_error.is_none() {
                            first_error = connect_error;
                        }
                        stopped_early |= se;
                    }
                    Event::Msg(Message::Refused { reason }) => {
                        finished[i] = true;
                        refusals.push(format!("agent {}: {reason}", runs[i].address));
                        // Without this agent the schedule is incomplete: stop the others.
                        stop.store(true, Ordering::Relaxed);
                    }
                    Event::Msg(other) => {
                        finished[i] = true;
                        runs[i].lost = Some(format!("sent an unexpected message: {other:?}"));
                        runs[i].lost_from_s = Some(last_t[i].map_or(0, |t| t + 1));
                    }
                    Event::Gone(why) => {
                        finished[i] = true;
                        runs[i].lost = Some(format!(
                        "{why}; its record of {} measured requests over {} s arrived and is kept",
                        runs[i].summary.sent,
                        last_t[i].map_or(0, |t| t + 1)
                    ));
                        runs[i].lost_from_s = Some(last_t[i].map_or(0, |t| t + 1));
                    }
                }
                // A second is complete when every agent still running has recorded it.
                let complete = (0..runs.len())
                    .filter(|k| !finished[*k])
                    .map(|k| last_t[k])
                    .min()
                    .unwrap_or(Some(u32::MAX));
                if let Some(upto) = complete {
                    while let Some(e) = pending.first_entry() {
                        if *e.key() > upto {
                            break;
                        }
                        let s = e.remove();
                        merged.add(&s);
                        on_second(&s);
                    }
                }
            }
            for (_, s) in std::mem::take(&mut pending) {
                merged.add(&s);
                on_second(&s);
            }
            if !refusals.is_empty() {
                refuse!("{}", refusals.join("; "));
            }
            merged.connect_failures = failures;
            merged.connect_error = first_error;
            merged.stopped_early =
                stopped_early || half_closed || runs.iter().any(|g| g.lost.is_some());
            Ok(Coordinated {
                merged,
                agents: runs,
            })
        })
    }
}

/// Opens the agents' sessions for one measurement of `ceiling run|search` and offers each of
/// them every data file of the job (`data`: source name → path on this host); an agent that
/// holds a file from an earlier session (the same content) is not sent it again, and a file this
/// process hashed before and that has not changed since is not read again unless sent
/// ([`DataFile::at_path`]). Start it with
/// [`Session::run_job`].
pub fn open_job(agents: &Agents, data: &BTreeMap<String, PathBuf>) -> Result<Session> {
    let files = data
        .iter()
        .map(|(name, path)| DataFile::at_path(name, path))
        .collect::<Result<Vec<_>>>()?;
    open(agents, &files)
}

impl Session {
    /// Runs `job` on the opened agents, each its share, all starting at `start_at_us` (this
    /// host's clock). See [`Session::run`].
    pub fn run_job(
        self,
        start_at_us: i64,
        job: &Job,
        stop: &Arc<AtomicBool>,
        on_second: impl FnMut(&Second),
    ) -> Result<Coordinated> {
        self.run(
            start_at_us,
            |shard, start_at_us| Message::Run {
                job: Box::new(job.clone()),
                shard,
                start_at_us,
            },
            &job.requests,
            Duration::from_millis(job.hard_limit_ms),
            stop,
            on_second,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ceiling_metrics::Phase;

    #[test]
    fn merged_seconds_add_counts_and_keep_the_busiest_generator() {
        let mut pending = BTreeMap::new();
        let mut a = Second::new(3, Phase::Measure, 0, 1);
        a.offered = 100;
        a.sent = 100;
        a.generator_cpu = 40.0;
        let mut b = Second::new(3, Phase::Measure, 0, 1);
        b.offered = 120;
        b.sent = 110;
        b.generator_cpu = 55.0;
        merge_pending(&mut pending, a);
        merge_pending(&mut pending, b);
        let m = &pending[&3];
        assert_eq!((m.offered, m.sent), (220, 210));
        assert_eq!(m.generator_cpu, 55.0);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ceiling-coordinator-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn an_unchanged_data_file_is_offered_by_its_kept_digest_and_read_only_when_sent() {
        let path = scratch("ids-unchanged.csv");
        std::fs::write(&path, "id\n1\n2\n").unwrap();
        let first = DataFile::at_path("ids", &path).unwrap();
        assert!(
            matches!(first.text, Text::Held(_)),
            "first sight hashes and holds"
        );
        let again = DataFile::at_path("ids", &path).unwrap();
        assert!(
            matches!(again.text, Text::OnDisk(_)),
            "second sight reads nothing"
        );
        assert_eq!(again.offer, first.offer);
        assert_eq!(again.offer, OfferedFile::of("ids", "id\n1\n2\n"));
        let sent = again.messages().unwrap();
        assert_eq!(
            serde_json::to_string(&sent).unwrap(),
            serde_json::to_string(&data_messages("ids", "id\n1\n2\n")).unwrap()
        );
        // A new content (new size) is hashed anew.
        std::fs::write(&path, "id\n1\n2\n3\n").unwrap();
        let changed = DataFile::at_path("ids", &path).unwrap();
        assert_eq!(changed.offer, OfferedFile::of("ids", "id\n1\n2\n3\n"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_data_file_changed_after_its_offer_is_refused_not_sent_under_the_old_digest() {
        let path = scratch("ids-changed.csv");
        std::fs::write(&path, "id\n1\n").unwrap();
        DataFile::at_path("ids", &path).unwrap();
        let offered = DataFile::at_path("ids", &path).unwrap();
        // The same size and modification time, another content: the kept digest is stale, and
        // only the read at sending time can tell.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, "id\n7\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let e = offered.messages().unwrap_err().to_string();
        assert!(e.contains("changed after it was offered"), "{e}");
        // The stale digest is forgotten: the next offer hashes the file again.
        let next = DataFile::at_path("ids", &path).unwrap();
        assert_eq!(next.offer, OfferedFile::of("ids", "id\n7\n"));
        std::fs::remove_file(&path).unwrap();
    }
}
