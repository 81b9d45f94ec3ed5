//! Every plan shipped in `plans/` parses and validates.
#[test]
fn every_shipped_plan_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let plan = ceiling_plan::load_plan(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!plan.stages.is_empty(), "{}", p.display());
            n += 1;
        }
    }
    assert!(n >= 5, "expected the source plans in {}", dir.display());
}
