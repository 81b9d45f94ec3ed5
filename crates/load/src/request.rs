//! Turns the plan's request templates into HTTP/1.1 request bytes.
//!
//! Data columns are loaded once into one contiguous string per column (1,000,000 UUIDs cost 36 MB,
//! not 60 MB of separate `String`s). Static requests are rendered once and shared; templated ones
//! are rendered into a reused buffer. Every random choice comes from one seeded ChaCha8 stream, so
//! the same seed sends the same requests in the same order.

use ceiling_plan::{RequestSpec, Segment, Template};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

/// A CSV column held compactly.
#[derive(Debug, Default)]
pub struct Column {
    text: String,
    ends: Vec<u32>,
}

impl Column {
    fn get(&self, row: usize) -> &str {
        let start = if row == 0 {
            0
        } else {
            self.ends[row - 1] as usize
        };
        &self.text[start..self.ends[row] as usize]
    }
}

/// A loaded CSV file: named columns with the same number of rows.
#[derive(Debug)]
pub struct Table {
    columns: HashMap<String, Column>,
    rows: usize,
}

/// An error loading a data source, naming the file and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DataError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// Loads a CSV with a header row.
pub fn load_table(path: &Path) -> Result<Table, DataError> {
    let err = |m: String| DataError {
        path: path.to_path_buf(),
        message: m,
    };
    let mut rdr =
        csv::Reader::from_path(path).map_err(|e| err(format!("cannot read data file: {e}")))?;
    let headers: Vec<String> = rdr
        .headers()
        .map_err(|e| err(format!("bad CSV header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    if headers.is_empty() {
        return Err(err("the CSV has no header row".into()));
    }
    let mut cols: Vec<Column> = headers.iter().map(|_| Column::default()).collect();
    let mut rows = 0usize;
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| err(format!("line {}: {e}", i + 2)))?;
        for (c, v) in cols.iter_mut().zip(rec.iter()) {
            c.text.push_str(v);
            c.ends.push(c.text.len() as u32);
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(err("the CSV has a header but no rows".into()));
    }
    Ok(Table {
        columns: headers.into_iter().zip(cols).collect(),
        rows,
    })
}

/// Request bytes ready to write.
#[derive(Clone)]
pub enum Wire {
    /// Rendered once for the whole run.
    Static(Rc<[u8]>),
    /// Rendered for this request.
    Owned(Vec<u8>),
}

impl Wire {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Wire::Static(b) => b,
            Wire::Owned(v) => v,
        }
    }
}

struct Compiled {
    /// `METHOD /base`, rendered once.
    head: String,
    path: Template,
    headers: Vec<(String, Template)>,
    body: Option<Template>,
    /// It carries a Content-Length (a body, or a method that takes one).
    post_like: bool,
    fixed: Option<Rc<[u8]>>,
}

/// The weighted mix, compiled against its data.
pub struct Mix {
    reqs: Vec<Compiled>,
    cumulative: Vec<u64>,
    total_weight: u64,
    tables: HashMap<String, Arc<Table>>,
    keep_alive: bool,
    /// ` HTTP/1.1`, Host and User-Agent: the same for every request, rendered once.
    after_path: String,
    /// The row each data source gives the request being rendered (by its table's address: no
    /// allocation per request).
    row_cache: Vec<(usize, usize)>,
    /// Kept between requests so that rendering allocates only the request's own bytes.
    scratch: String,
    body_scratch: String,
}

impl Mix {
    /// Compiles `specs`; `tables` must hold every source the templates use. Column names are checked.
    pub fn new(
        specs: &[RequestSpec],
        tables: HashMap<String, Arc<Table>>,
        host: &str,
        base_path: &str,
        keep_alive: bool,
    ) -> Result<Mix, String> {
        let mut reqs = Vec::new();
        let mut cumulative = Vec::new();
        let mut acc = 0u64;
        for s in specs {
            let all = std::iter::once(&s.path)
                .chain(s.headers.iter().map(|(_, t)| t))
                .chain(s.body.as_ref());
            for t in all {
                for seg in &t.segments {
                    if let Segment::Column { source, column, .. } = seg {
                        let table = tables.get(source).ok_or_else(|| {
                            format!("request `{}`: data source `{source}` is not loaded", s.name)
                        })?;
                        if !table.columns.contains_key(column) {
                            let mut have: Vec<_> = table.columns.keys().cloned().collect();
                            have.sort();
                            return Err(format!("request `{}`: data source `{source}` has no column `{column}` (it has: {})", s.name, have.join(", ")));
                        }
                    }
                }
            }
            acc += s.weight as u64;
            cumulative.push(acc);
            reqs.push(Compiled {
                head: format!("{} {}", s.method, base_path.trim_end_matches('/')),
                path: s.path.clone(),
                headers: s.headers.clone(),
                body: s.body.clone(),
                post_like: s.body.is_some()
                    || matches!(s.method.as_str(), "POST" | "PUT" | "PATCH"),
                fixed: None,
            });
        }
        let mut mix = Mix {
            reqs,
            cumulative,
            total_weight: acc,
            tables,
            keep_alive,
            after_path: format!(
                " HTTP/1.1\r\nHost: {host}\r\nUser-Agent: ceiling/{}\r\n",
                env!("CARGO_PKG_VERSION")
            ),
            row_cache: Vec::new(),
            scratch: String::with_capacity(256),
            body_scratch: String::new(),
        };
        for i in 0..mix.reqs.len() {
            let r = &mix.reqs[i];
            if r.path.is_static()
                && r.headers.iter().all(|(_, t)| t.is_static())
                && r.body.as_ref().is_none_or(Template::is_static)
            {
                let mut buf = Vec::new();
                let mut rng = rand::SeedableRng::seed_from_u64(0);
                mix.render_into(i, &mut rng, &mut buf);
                mix.reqs[i].fixed = Some(buf.into());
            }
        }
        Ok(mix)
    }

    /// Picks a request index by weight.
    #[inline]
    pub fn pick(&self, rng: &mut ChaCha8Rng) -> usize {
        if self.reqs.len() == 1 {
            return 0;
        }
        let x = rng.gen_range(0..self.total_weight);
        self.cumulative.partition_point(|&c| c <= x)
    }

    /// The bytes of request `i`, rendering templates with `rng`.
    pub fn render(&mut self, i: usize, rng: &mut ChaCha8Rng) -> Wire {
        if let Some(f) = &self.reqs[i].fixed {
            return Wire::Static(f.clone());
        }
        let mut buf = Vec::with_capacity(256);
        self.render_into(i, rng, &mut buf);
        Wire::Owned(buf)
    }

    fn render_into(&mut self, i: usize, rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
        self.row_cache.clear();
        let mut s = std::mem::take(&mut self.scratch);
        let mut body = std::mem::take(&mut self.body_scratch);
        s.clear();
        body.clear();
        let r = &self.reqs[i];
        s.push_str(&r.head);
        expand(&r.path, &self.tables, &mut self.row_cache, rng, &mut s);
        s.push_str(&self.after_path);
        for (k, v) in &r.headers {
            s.push_str(k);
            s.push_str(": ");
            expand(v, &self.tables, &mut self.row_cache, rng, &mut s);
            s.push_str("\r\n");
        }
        if !self.keep_alive {
            s.push_str("Connection: close\r\n");
        }
        if let Some(b) = &r.body {
            expand(b, &self.tables, &mut self.row_cache, rng, &mut body);
        }
        if r.post_like {
            let _ = write!(s, "Content-Length: {}\r\n", body.len());
        }
        s.push_str("\r\n");
        out.clear();
        out.reserve(s.len() + body.len());
        out.extend_from_slice(s.as_bytes());
        out.extend_from_slice(body.as_bytes());
        self.scratch = s;
        self.body_scratch = body;
    }
}

fn expand(
    t: &Template,
    tables: &HashMap<String, Arc<Table>>,
    rows: &mut Vec<(usize, usize)>,
    rng: &mut ChaCha8Rng,
    out: &mut String,
) {
    for seg in &t.segments {
        match seg {
            Segment::Literal(l) => out.push_str(l),
            Segment::Uuid => {
                let v: u128 = rng.gen();
                let v = (v & !(0xF000u128 << 64) | (0x4000u128 << 64)) & !(0xC000u128 << 48)
                    | (0x8000u128 << 48);
                let _ = write!(
                    out,
                    "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                    (v >> 96) as u32,
                    (v >> 80) as u16,
                    (v >> 64) as u16,
                    (v >> 48) as u16,
                    v & 0xFFFF_FFFF_FFFF
                );
            }
            Segment::Int { lo, hi } => {
                let _ = write!(out, "{}", rng.gen_range(*lo..=*hi));
            }
            Segment::Column {
                source,
                column,
                count,
            } => {
                let table = &tables[source];
                let col = &table.columns[column];
                if *count == 1 {
                    // Every single-value placeholder of one source in one request reads the same row.
                    let key = Arc::as_ptr(table) as usize;
                    let row = match rows.iter().find(|(s, _)| *s == key) {
                        Some((_, r)) => *r,
                        None => {
                            let r = rng.gen_range(0..table.rows);
                            rows.push((key, r));
                            r
                        }
                    };
                    out.push_str(col.get(row));
                } else {
                    for k in 0..*count {
                        if k > 0 {
                            out.push(',');
                        }
                        out.push_str(col.get(rng.gen_range(0..table.rows)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn spec(name: &str, path: &str, body: Option<&str>) -> RequestSpec {
        RequestSpec {
            name: name.into(),
            weight: 1,
            method: if body.is_some() {
                "POST".into()
            } else {
                "GET".into()
            },
            path: Template::parse(path).unwrap(),
            headers: vec![],
            body: body.map(|b| Template::parse(b).unwrap()),
            expect: vec![],
        }
    }

    #[test]
    fn renders_rows_batches_and_bodies() {
        let dir = std::env::temp_dir().join(format!("ceiling-req-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ids.csv");
        std::fs::write(&p, "id,n\na,1\nb,2\nc,3\n").unwrap();
        let mut tables = HashMap::new();
        tables.insert("ids".to_string(), Arc::new(load_table(&p).unwrap()));
        let specs = vec![
            spec("one", "/s/${ids.id}?n=${ids.n}", None),
            spec("batch", "/s?ids=${ids.id*10}", None),
            spec("post", "/s", Some(r#"{"id":"${uuid}","v":${int:5:5}}"#)),
            spec("ping", "/ping", None),
        ];
        let mut mix = Mix::new(&specs, tables, "127.0.0.1:80", "", true).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let one = String::from_utf8(mix.render(0, &mut rng).as_bytes().to_vec()).unwrap();
        let (id, n) = one.split_once("?n=").unwrap();
        let row = ["a", "b", "c"]
            .iter()
            .position(|x| id.ends_with(&format!("/s/{x}")))
            .expect(&one);
        assert!(
            n.starts_with(&format!("{} HTTP/1.1\r\n", row + 1)),
            "same row for one request: {one}"
        );
        let batch = String::from_utf8(mix.render(1, &mut rng).as_bytes().to_vec()).unwrap();
        assert_eq!(
            batch
                .split(' ')
                .nth(1)
                .unwrap()
                .trim_start_matches("/s?ids=")
                .split(',')
                .count(),
            10
        );
        let post = String::from_utf8(mix.render(2, &mut rng).as_bytes().to_vec()).unwrap();
        let body = post.split("\r\n\r\n").nth(1).unwrap();
        assert!(post.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert_eq!(
            body.len(),
            r#"{"id":"00000000-0000-4000-8000-000000000000","v":5}"#.len()
        );
        assert!(matches!(mix.render(3, &mut rng), Wire::Static(_)));
        let bad = Mix::new(
            &[spec("x", "/${ids.nope}", None)],
            HashMap::from([("ids".to_string(), Arc::new(load_table(&p).unwrap()))]),
            "h",
            "",
            true,
        );
        assert!(bad
            .err()
            .unwrap()
            .contains("has no column `nope` (it has: id, n)"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn weighted_pick_follows_weights() {
        let mut specs = vec![spec("a", "/a", None), spec("b", "/b", None)];
        specs[0].weight = 70;
        specs[1].weight = 30;
        let mix = Mix::new(&specs, HashMap::new(), "h", "", true).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let a = (0..100_000).filter(|_| mix.pick(&mut rng) == 0).count();
        assert!((69_000..71_000).contains(&a), "{a}");
    }
}
