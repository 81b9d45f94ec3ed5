//! docs/fairness.md is the stacks' `[fairness]` tables side by side; this test keeps the two equal
//! (`CEILING_BLESS=1` rewrites the file from the stack.toml files).

use ceiling_stand::{fairness_markdown, list_stacks, StackSpec};
use std::path::Path;

#[test]
fn docs_fairness_md_is_the_stack_toml_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let stacks = root.join("stacks");
    let specs: Vec<StackSpec> = list_stacks(&stacks)
        .iter()
        .map(|n| StackSpec::load(&stacks, n).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert!(specs.len() >= 5, "{} stacks", specs.len());
    let want = fairness_markdown(&specs);
    let file = root.join("docs/fairness.md");
    if std::env::var_os("CEILING_BLESS").is_some() {
        std::fs::write(&file, &want).unwrap();
    }
    let have = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        have == want,
        "docs/fairness.md differs from the stacks' [fairness] tables; run \
         `CEILING_BLESS=1 cargo test -p ceiling-stand --test fairness` and review the diff"
    );
}
