//! Reports: terminal tables, summary.md, run.json, CSV, self-contained HTML
