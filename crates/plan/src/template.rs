//! Request templates: literal text with `${...}` placeholders.
//!
//! - `${src.col}`     one value of column `col` from a random row of data source `src`
//!   (every `${src.…}` in one request reads the same row);
//! - `${src.col*10}`  values from 10 random rows, joined by commas (source 000's batch of 10 ids);
//! - `${uuid}`        a fresh random UUID v4 (seeded, so runs repeat);
//! - `${int:A:B}`     a random integer in A..=B.

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Segment {
    /// Text copied as is.
    Literal(String),
    /// Column values from a data source.
    Column {
        /// Data source name.
        source: String,
        /// Column name.
        column: String,
        /// How many rows (joined by commas); 1 = the request's shared row.
        count: usize,
    },
    /// A random UUID v4.
    Uuid,
    /// A random integer in `lo..=hi`.
    Int {
        /// Lower bound (inclusive).
        lo: i64,
        /// Upper bound (inclusive).
        hi: i64,
    },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Template {
    /// The pieces, in order.
    pub segments: Vec<Segment>,
}

impl Template {
    /// Parses `text`; the error says which placeholder is wrong and what is allowed.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut segments = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            if start > 0 {
                segments.push(Segment::Literal(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed placeholder `${{{after}`"))?;
            segments.push(parse_placeholder(&after[..end])?);
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Literal(rest.to_string()));
        }
        Ok(Template { segments })
    }

    /// True when the template has no placeholders (it can be pre-rendered once).
    pub fn is_static(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, Segment::Literal(_)))
    }

    /// Data sources the template reads.
    pub fn sources(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Column { source, .. } => Some(source.as_str()),
            _ => None,
        })
    }
}

fn parse_placeholder(p: &str) -> Result<Segment, String> {
    let p = p.trim();
    if p == "uuid" {
        return Ok(Segment::Uuid);
    }
    if let Some(range) = p.strip_prefix("int:") {
        let (a, b) = range
            .split_once(':')
            .ok_or_else(|| format!("`${{{p}}}`: write `${{int:LOW:HIGH}}`"))?;
        let lo: i64 = a
            .trim()
            .parse()
            .map_err(|_| format!("`${{{p}}}`: `{a}` is not an integer"))?;
        let hi: i64 = b
            .trim()
            .parse()
            .map_err(|_| format!("`${{{p}}}`: `{b}` is not an integer"))?;
        if lo > hi {
            return Err(format!("`${{{p}}}`: low bound is above high bound"));
        }
        return Ok(Segment::Int { lo, hi });
    }
    let (name, count) = match p.split_once('*') {
        Some((n, c)) => {
            let c: usize = c
                .trim()
                .parse()
                .ok()
                .filter(|c| (1..=10_000).contains(c))
                .ok_or_else(|| {
                    format!("`${{{p}}}`: the count after `*` must be an integer 1..10000")
                })?;
            (n.trim(), c)
        }
        None => (p, 1),
    };
    let (source, column) = name.split_once('.').ok_or_else(|| {
        format!("unknown placeholder `${{{p}}}`: use `${{source.column}}`, `${{source.column*N}}`, `${{uuid}}` or `${{int:A:B}}`")
    })?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !ok(source) || !ok(column) {
        return Err(format!(
            "`${{{p}}}`: source and column names are letters, digits, `_` or `-`"
        ));
    }
    Ok(Segment::Column {
        source: source.to_string(),
        column: column.to_string(),
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_all_placeholder_kinds() {
        let t = Template::parse(
            r#"{"id":"${uuid}","s":${int:0:10},"b":"${ids.id*10}","x":"${ids.id}"}"#,
        )
        .unwrap();
        assert_eq!(t.segments[1], Segment::Uuid);
        assert_eq!(t.segments[3], Segment::Int { lo: 0, hi: 10 });
        assert_eq!(
            t.segments[5],
            Segment::Column {
                source: "ids".into(),
                column: "id".into(),
                count: 10
            }
        );
        assert_eq!(
            t.segments[7],
            Segment::Column {
                source: "ids".into(),
                column: "id".into(),
                count: 1
            }
        );
        assert!(Template::parse("/ping").unwrap().is_static());
    }
    #[test]
    fn rejects_bad_placeholders() {
        assert!(Template::parse("/s/${ids}")
            .unwrap_err()
            .contains("unknown placeholder"));
        assert!(Template::parse("/s/${ids.id")
            .unwrap_err()
            .contains("unclosed"));
        assert!(Template::parse("${int:5:1}").is_err());
        assert!(Template::parse("${ids.id*0}").is_err());
    }
}
