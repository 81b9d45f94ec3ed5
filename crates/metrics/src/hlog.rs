//! HdrHistogram interval logs (format v1.3, as written by the Java `HistogramLogWriter`), one tag
//! per request name, values in microseconds. Readable by HdrHistogram's own tools
//! (`HistogramLogProcessor`, the Rust `interval_log` iterator, HdrHistogramVisualizer).

use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Writes an interval log, flushing after every batch so a crash loses at most the current second.
pub struct HlogWriter<W: Write> {
    out: W,
    ser: V2DeflateSerializer,
}

impl<W: Write> HlogWriter<W> {
    /// Writes the header: format version, StartTime/BaseTime = `start`, a comment, the legend.
    pub fn new(mut out: W, start: SystemTime, comment: &str) -> io::Result<Self> {
        let secs = start
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        writeln!(out, "#[Histogram log format version 1.3]")?;
        for line in comment.lines() {
            writeln!(out, "#{line}")?;
        }
        writeln!(out, "#[values are latencies in microseconds]")?;
        writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch)]")?;
        writeln!(out, "#[BaseTime: {secs:.3} (seconds since epoch)]")?;
        writeln!(out, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")?;
        out.flush()?;
        Ok(HlogWriter {
            out,
            ser: V2DeflateSerializer::new(),
        })
    }

    /// Continues a log whose header is already in `out` (a file opened for appending): the
    /// intervals written next keep counting from that header's BaseTime.
    pub fn appending(out: W) -> Self {
        HlogWriter {
            out,
            ser: V2DeflateSerializer::new(),
        }
    }

    /// Appends one interval (`start` seconds after BaseTime, `len` long), tagged. Empty histograms
    /// are written too, so a reader sees every second of every tag.
    pub fn write(
        &mut self,
        h: &Histogram<u64>,
        start: Duration,
        len: Duration,
        tag: &str,
    ) -> io::Result<()> {
        let tag = Tag::new(tag).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{tag}` cannot be an hlog tag"),
            )
        })?;
        let mut w = IntervalLogWriterBuilder::new().begin_log_with(&mut self.out, &mut self.ser)?;
        w.write_histogram(h, start, len, Some(tag))
            .map_err(|e| io::Error::other(format!("{e:?}")))
    }

    /// Flushes buffered intervals to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One interval read back from a log.
#[derive(Debug, Clone)]
pub struct HlogInterval {
    /// Tag (request name), if any.
    pub tag: Option<String>,
    /// Seconds after BaseTime.
    pub start: f64,
    /// Interval length in seconds.
    pub duration: f64,
    /// The decoded histogram.
    pub histogram: Histogram<u64>,
}

/// Reads every interval of a log with the `hdrhistogram` crate's own parser and decoder.
pub fn read_hlog(bytes: &[u8]) -> Result<Vec<HlogInterval>, String> {
    let mut out = Vec::new();
    visit_hlog(bytes, |tag, start, duration, h| {
        out.push(HlogInterval {
            tag: tag.map(str::to_string),
            start,
            duration,
            histogram: h.clone(),
        })
    })?;
    Ok(out)
}

/// Calls `f(tag, start, duration, histogram)` for every interval of a log, one at a time, so a
/// long run's log is read without holding every histogram in memory (`start` and `duration` in
/// seconds after BaseTime).
pub fn visit_hlog(
    bytes: &[u8],
    mut f: impl FnMut(Option<&str>, f64, f64, &Histogram<u64>),
) -> Result<(), String> {
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        match entry.map_err(|e| format!("hlog parse error: {e:?}"))? {
            LogEntry::Interval(iv) => {
                let raw = base64_decode(iv.encoded_histogram())?;
                let histogram: Histogram<u64> = de
                    .deserialize(&mut io::Cursor::new(raw))
                    .map_err(|e| format!("hlog histogram decode error: {e:?}"))?;
                f(
                    iv.tag().map(|t| t.as_str()),
                    iv.start_timestamp().as_secs_f64(),
                    iv.duration().as_secs_f64(),
                    &histogram,
                );
            }
            LogEntry::StartTime(_) | LogEntry::BaseTime(_) => {}
        }
    }
    Ok(())
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    // Standard alphabet with padding; small and dependency-free on the read path.
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return Err(format!("bad base64 byte {c:#x} in hlog")),
        } as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{new_histogram, record_us};

    #[test]
    fn round_trips_through_the_hdrhistogram_reader() {
        let mut buf = Vec::new();
        let mut w = HlogWriter::new(
            &mut buf,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            "test",
        )
        .unwrap();
        let mut a = new_histogram();
        let mut b = new_histogram();
        for i in 1..=10_000u64 {
            record_us(&mut a, i * 13 % 100_000 + 1);
            if i % 3 == 0 {
                record_us(&mut b, i * 1000);
            }
        }
        w.write(&a, Duration::from_secs(0), Duration::from_secs(1), "get")
            .unwrap();
        w.write(&b, Duration::from_secs(1), Duration::from_secs(1), "post")
            .unwrap();
        w.write(
            &new_histogram(),
            Duration::from_secs(2),
            Duration::from_secs(1),
            "get",
        )
        .unwrap();
        w.flush().unwrap();
        drop(w);
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.starts_with("#[Histogram log format version 1.3]"));
        let back = read_hlog(&buf).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].tag.as_deref(), Some("get"));
        assert_eq!(back[0].histogram, a);
        assert_eq!(back[1].histogram, b);
        assert_eq!(back[1].start, 1.0);
        assert_eq!(back[2].histogram.len(), 0);
    }
}
