//! The agent's data files: what coordinators sent, kept by content digest for the agent's life.
//!
//! A `ceiling run|search` job offers its data files by SHA-256 ([`crate::Message::Offer`]); the
//! agent answers with those it lacks ([`crate::Message::Want`]) and receives only those
//! ([`crate::Message::Data`]), each checked against its digest on arrival. A search's probes are
//! sessions of their own, so a plan's 37-MB id file travels to each agent once, not once per probe.

use crate::error::{refuse, Context, Result};
use crate::OfferedFile;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Most data a coordinator may offer in one session (it holds the token, but a wrong plan should
/// not fill the agent's disk).
const MAX_SESSION_DATA: u64 = 1 << 30;

/// Most data an agent keeps between sessions; the least recently used files go first when a new
/// one would pass it (never one the current session uses).
const MAX_CACHE_BYTES: u64 = 2 << 30;

/// The data files coordinators sent to this agent, kept by content digest for the agent's life
/// — a search's probes are sessions of their own, and a plan's 37-MB id file then travels once,
/// not once per probe — in a directory of their own that goes when the agent ends. Files are named
/// by their digest (checked on arrival), never by what a coordinator called them.
pub struct DataCache {
    dir: PathBuf,
    max_bytes: u64,
    entries: BTreeMap<String, CachedFile>,
    /// Sessions begun, for least-recently-used eviction.
    sessions: u64,
    /// Files received, for unique names of partial files.
    partials: u64,
}

/// A complete file in the [`DataCache`].
struct CachedFile {
    path: PathBuf,
    bytes: u64,
    /// The last session that used it.
    used: u64,
}

/// One session's data files: every offered source's file once complete, and those being received.
#[derive(Default)]
pub struct SessionFiles {
    offered: BTreeMap<String, OfferedFile>,
    /// Source name → its complete file on this host.
    pub files: BTreeMap<String, PathBuf>,
    receiving: BTreeMap<String, Receiving>,
    /// Files received in this session.
    pub received: usize,
    /// Files this session took from the cache.
    pub from_cache: usize,
}

/// A wanted file arriving piece by piece, hashed as it is written.
struct Receiving {
    path: PathBuf,
    file: std::fs::File,
    hash: sha2::Sha256,
    bytes: u64,
}

impl Default for DataCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DataCache {
    /// An empty cache in a directory of this process's own (created when a file arrives).
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("ceiling-agent-{}-data", std::process::id()));
        Self::in_dir(dir, MAX_CACHE_BYTES)
    }

    /// A cache in `dir` (removed with the cache) holding at most `max_bytes`.
    pub fn in_dir(dir: PathBuf, max_bytes: u64) -> Self {
        DataCache {
            dir,
            max_bytes,
            entries: BTreeMap::new(),
            sessions: 0,
            partials: 0,
        }
    }

    /// Bytes of the files kept.
    pub fn bytes(&self) -> u64 {
        self.entries.values().map(|e| e.bytes).sum()
    }

    /// Takes a coordinator's offer: the session's files that this agent holds are taken from the
    /// cache, the others are returned as wanted (and room is made for them).
    pub fn begin(&mut self, offered: &[OfferedFile]) -> Result<(SessionFiles, Vec<String>)> {
        self.sessions += 1;
        let mut session = SessionFiles::default();
        let mut want = Vec::new();
        let mut wanted_bytes = 0u64;
        for f in offered {
            if f.sha256.len() != 64 || !f.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                refuse!("data source `{}`: its digest is not 64 hex digits", f.name);
            }
            if session.offered.insert(f.name.clone(), f.clone()).is_some() {
                refuse!("the coordinator offered data source `{}` twice", f.name);
            }
            match self.entries.get_mut(&f.sha256.to_ascii_lowercase()) {
                // (a file removed behind the agent's back is simply sent again)
                Some(e) if e.bytes == f.bytes && e.path.is_file() => {
                    e.used = self.sessions;
                    session.files.insert(f.name.clone(), e.path.clone());
                    session.from_cache += 1;
                }
                _ => {
                    want.push(f.name.clone());
                    wanted_bytes += f.bytes;
                }
            }
        }
        if wanted_bytes > MAX_SESSION_DATA {
            refuse!("the coordinator offered more than {MAX_SESSION_DATA} bytes of data");
        }
        // room for what is wanted: the least recently used files not in this session go first
        while self.bytes() + wanted_bytes > self.max_bytes {
            let Some(old) = self
                .entries
                .iter()
                .filter(|(_, e)| e.used != self.sessions)
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&old) {
                let _ = std::fs::remove_file(&e.path);
            }
        }
        Ok((session, want))
    }

    /// Appends a piece of a wanted source's file; its last piece checks the digest and keeps the
    /// file in the cache.
    pub fn append(
        &mut self,
        s: &mut SessionFiles,
        name: &str,
        text: &str,
        last: bool,
    ) -> Result<()> {
        use sha2::Digest as _;
        let Some(offer) = s.offered.get(name) else {
            refuse!("the coordinator sent data source `{name}`, which it did not offer");
        };
        if s.files.contains_key(name) {
            refuse!(
                "the coordinator sent data source `{name}`, which this agent holds or has received"
            );
        }
        if !s.receiving.contains_key(name) {
            std::fs::create_dir_all(&self.dir)
                .with_context(|| format!("creating {}", self.dir.display()))?;
            self.partials += 1;
            let path = self.dir.join(format!("partial-{}.csv", self.partials));
            let file = std::fs::File::create(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            let r = Receiving {
                path,
                file,
                hash: sha2::Sha256::new(),
                bytes: 0,
            };
            s.receiving.insert(name.to_string(), r);
        }
        let r = s.receiving.get_mut(name).expect("inserted above");
        r.bytes += text.len() as u64;
        if r.bytes > offer.bytes {
            refuse!(
                "data source `{name}`: more than the {} bytes offered arrived",
                offer.bytes
            );
        }
        r.file
            .write_all(text.as_bytes())
            .with_context(|| format!("writing {}", r.path.display()))?;
        r.hash.update(text.as_bytes());
        if !last {
            return Ok(());
        }
        let r = s.receiving.remove(name).expect("present above");
        let digest = crate::hex(&r.hash.finalize());
        if r.bytes != offer.bytes || digest != offer.sha256.to_ascii_lowercase() {
            let _ = std::fs::remove_file(&r.path);
            refuse!(
                "data source `{name}` arrived damaged: {} bytes with SHA-256 {digest}, offered {} bytes with {}",
                r.bytes,
                offer.bytes,
                offer.sha256
            );
        }
        drop(r.file);
        let path = self.dir.join(format!("{digest}.csv"));
        std::fs::rename(&r.path, &path).with_context(|| format!("keeping {}", path.display()))?;
        self.entries.insert(
            digest,
            CachedFile {
                path: path.clone(),
                bytes: r.bytes,
                used: self.sessions,
            },
        );
        s.files.insert(name.to_string(), path);
        s.received += 1;
        Ok(())
    }
}

impl Drop for DataCache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for SessionFiles {
    fn drop(&mut self) {
        // a session that ended mid-file leaves no partial file behind
        for r in self.receiving.values() {
            let _ = std::fs::remove_file(&r.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(tag: &str, max: u64) -> DataCache {
        let dir =
            std::env::temp_dir().join(format!("ceiling-cache-test-{}-{tag}", std::process::id()));
        DataCache::in_dir(dir, max)
    }

    /// Sends `text` as source `name` in pieces of at most 3 bytes, as the coordinator would.
    fn send(c: &mut DataCache, s: &mut SessionFiles, name: &str, text: &str) -> Result<()> {
        let b = text.as_bytes();
        let mut i = 0;
        loop {
            let j = (i + 3).min(b.len());
            c.append(
                s,
                name,
                std::str::from_utf8(&b[i..j]).unwrap(),
                j == b.len(),
            )?;
            if j == b.len() {
                return Ok(());
            }
            i = j;
        }
    }

    #[test]
    fn a_file_sent_once_is_taken_from_the_cache_by_the_next_session() {
        let mut c = cache("reuse", 1 << 20);
        let text = "id\n1\n2\n3\n";
        let offer = vec![OfferedFile::of("ids", text)];
        let (mut s1, want) = c.begin(&offer).unwrap();
        assert_eq!(want, vec!["ids".to_string()]);
        send(&mut c, &mut s1, "ids", text).unwrap();
        assert_eq!((s1.received, s1.from_cache), (1, 0));
        assert_eq!(std::fs::read_to_string(&s1.files["ids"]).unwrap(), text);
        drop(s1);
        // the same content under another source name: still the same file, nothing to send
        let (s2, want) = c.begin(&[OfferedFile::of("other", text)]).unwrap();
        assert!(want.is_empty());
        assert_eq!((s2.received, s2.from_cache), (0, 1));
        assert_eq!(std::fs::read_to_string(&s2.files["other"]).unwrap(), text);
        // a changed file is a different digest: wanted again
        let (_s3, want) = c.begin(&[OfferedFile::of("ids", "id\n9\n")]).unwrap();
        assert_eq!(want, vec!["ids".to_string()]);
        let dir = c.dir.clone();
        drop(c);
        assert!(!dir.exists(), "the cache's directory goes with it");
    }

    #[test]
    fn a_damaged_or_unoffered_file_is_refused_and_never_kept() {
        let mut c = cache("damaged", 1 << 20);
        let (mut s, _) = c.begin(&[OfferedFile::of("ids", "id\n1\n")]).unwrap();
        let e = send(&mut c, &mut s, "ids", "id\n2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("arrived damaged") && e.contains("`ids`"), "{e}");
        let e = c.append(&mut s, "x", "1\n", true).unwrap_err().to_string();
        assert!(e.contains("did not offer"), "{e}");
        drop(s);
        let (_s, want) = c.begin(&[OfferedFile::of("ids", "id\n1\n")]).unwrap();
        assert_eq!(
            want,
            vec!["ids".to_string()],
            "the damaged file was not kept"
        );
        // more bytes than offered stop at once
        let (mut s, _) = c.begin(&[OfferedFile::of("ids", "id\n1\n")]).unwrap();
        let e = send(&mut c, &mut s, "ids", "id\n1\n2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the 5 bytes"), "{e}");
    }

    #[test]
    fn a_digest_that_is_not_hex_cannot_name_a_file() {
        let mut c = cache("digest", 1 << 20);
        let mut f = OfferedFile::of("ids", "x");
        f.sha256 = format!("../../{}", "a".repeat(58));
        let e = c.begin(&[f]).err().unwrap().to_string();
        assert!(e.contains("not 64 hex digits"), "{e}");
    }

    #[test]
    fn the_least_recently_used_file_makes_room_but_never_one_in_use() {
        let mut c = cache("evict", 10);
        for (name, text) in [("a", "aaaaaa"), ("b", "bbbbbb")] {
            let (mut s, want) = c.begin(&[OfferedFile::of(name, text)]).unwrap();
            assert_eq!(want.len(), 1);
            send(&mut c, &mut s, name, text).unwrap();
        }
        // b made room by dropping a (6 + 6 > 10)
        assert_eq!(c.bytes(), 6);
        // a session using b and wanting c keeps b even past the bound
        let (_s, want) = c
            .begin(&[
                OfferedFile::of("b", "bbbbbb"),
                OfferedFile::of("c", "cccccc"),
            ])
            .unwrap();
        assert_eq!(want, vec!["c".to_string()]);
        assert_eq!(c.bytes(), 6, "b is in use and stays");
        // the next session, without b, may drop it
        let (_s, want) = c.begin(&[OfferedFile::of("a", "aaaaaa")]).unwrap();
        assert_eq!(want, vec!["a".to_string()]);
        assert_eq!(c.bytes(), 0);
    }
}
