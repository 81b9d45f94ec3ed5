//! The environment fingerprint recorded in run.json.

pub use ceiling_metrics::Environment;
use ceiling_supervise::cgroup::CgroupSystem;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Collects the fingerprint. Toolchain version commands run in parallel (about a second in
/// total, dominated by `mvn -v`); `postgres` is the server version if the caller knows it.
pub fn fingerprint(postgres: Option<&str>, cgroups: &CgroupSystem) -> Environment {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let logical_cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let usable_cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(logical_cpus);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string();
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let tools: [(&str, &[&str]); 9] = [
        ("go", &["version"]),
        ("java", &["-version"]),
        ("mvn", &["-v"]),
        ("node", &["--version"]),
        ("python3", &["--version"]),
        ("rustc", &["--version"]),
        ("cargo", &["--version"]),
        ("psql", &["--version"]),
        ("docker", &["--version"]),
    ];
    let handles: Vec<_> = tools
        .iter()
        .map(|(t, args)| {
            let t = t.to_string();
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            std::thread::spawn(move || (t.clone(), tool_version(&t, &args)))
        })
        .collect();
    let mut toolchains = BTreeMap::new();
    for h in handles {
        if let Ok((t, Some(v))) = h.join() {
            toolchains.insert(t, v);
        }
    }
    Environment {
        hostname,
        cpu_model,
        logical_cpus,
        usable_cpus,
        memory_bytes,
        kernel,
        os,
        postgres: postgres.map(|s| s.to_string()),
        pgbouncer: None,
        toolchains,
        cgroup_mode: cgroups.mode().to_string(),
        cgroups: cgroups.describe(),
        ceiling_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// First non-empty line of `<tool> <args>` (stdout, else stderr), ANSI codes removed; `None` when
/// the tool is missing, fails, or takes more than 15 s.
fn tool_version(tool: &str, args: &[String]) -> Option<String> {
    ceiling_supervise::process::which(tool)?;
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    let text = strip_ansi(&String::from_utf8_lossy(&text));
    text.lines()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .map(|l| l.to_string())
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi() {
        assert_eq!(
            strip_ansi("\u{1b}[1mApache Maven 3.8.7\u{1b}[m"),
            "Apache Maven 3.8.7"
        );
    }

    #[test]
    fn fingerprint_has_basics() {
        let f = fingerprint(Some("15.18"), &CgroupSystem::detect());
        assert!(f.logical_cpus >= 1);
        assert!(f.memory_bytes > 0);
        assert!(!f.kernel.is_empty());
        assert!(f.toolchains.contains_key("rustc"), "{:?}", f.toolchains);
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["postgres"], "15.18");
    }
}
