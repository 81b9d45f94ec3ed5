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
    let cpu_signature = cpu_signature(&cpuinfo);
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
        cpu_signature,
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

/// Vendor, family, model and stepping of the first processor in `cpuinfo` (/proc/cpuinfo's
/// text), in that order, each field that is there: two hosts that both call themselves "AMD EPYC"
/// may be CPUs generations apart, and a run's CPU per request moves with that.
fn cpu_signature(cpuinfo: &str) -> String {
    let first = || cpuinfo.lines().take_while(|l| !l.trim().is_empty());
    let field = |key: &str| {
        first().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    [
        ("vendor_id", ""),
        ("cpu family", "family "),
        ("model", "model "),
        ("stepping", "stepping "),
    ]
    .iter()
    .filter_map(|(key, label)| field(key).map(|v| format!("{label}{v}")))
    .collect::<Vec<_>>()
    .join(" ")
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
    fn the_cpu_signature_reads_the_first_processor_exactly() {
        // "model name" must not be read as "model"; the second processor is not read
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n";
        assert_eq!(
            cpu_signature(text),
            "AuthenticAMD family 26 model 2 stepping 1"
        );
        // a model name before the model, a missing stepping, an ARM kernel's text
        let text = "vendor_id : AuthenticAMD\nmodel name : AMD EPYC\ncpu family : 25\nmodel : 1\n";
        assert_eq!(cpu_signature(text), "AuthenticAMD family 25 model 1");
        assert_eq!(
            cpu_signature("processor : 0\nBogoMIPS : 50.00\nCPU implementer : 0x41\n"),
            ""
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
