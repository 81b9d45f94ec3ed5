//! `cargo run -p ceiling-verify --example verify -- http://127.0.0.1:8080 postgres://postgres@127.0.0.1:54329/ceiling [--json] [--only NAME|GROUP]...`
//! Runs the conformance suite against a running stack; exit 0 when every case passed.

use ceiling_verify::{render_text, verify, DbConfig, VerifyConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: verify BASE_URL DATABASE_URL [--json] [--only NAME|GROUP]...");
        std::process::exit(2);
    }
    let db = DbConfig::from_url(&args[1]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let mut cfg = VerifyConfig::new(args[0].clone(), db);
    let mut json = false;
    let mut it = args[2..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--only" => cfg.only.extend(it.next().cloned()),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    match verify(&cfg) {
        Ok(report) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&report).unwrap());
            } else {
                print!("{}", render_text(&report));
            }
            std::process::exit(if report.ok() { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("ceiling verify: {e}");
            std::process::exit(2);
        }
    }
}
