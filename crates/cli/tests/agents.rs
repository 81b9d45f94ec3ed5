//! Generator agents over real sockets (loopback): `ceiling agent` processes take their shares of a
//! `ceiling load --agents` schedule, the coordinator merges their seconds exactly, an agent killed
//! mid-run is reported with what it had recorded (nothing that arrived is lost), and an agent
//! refuses a wrong token and a non-loopback target.
//!
//! With root, two agents also run in network namespaces this test makes (veth pairs to the host),
//! so their load crosses real interfaces, not loopback. Not exercised: agents on other hosts.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ceiling"))
}

/// A thread-per-connection keep-alive HTTP server answering `200 ok` on loopback.
fn server() -> u16 {
    server_on("127.0.0.1")
}

/// The same server on `ip` (an address of this host).
fn server_on(ip: &str) -> u16 {
    let l = TcpListener::bind((ip, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..i + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
            });
        }
    });
    port
}

struct Agent {
    child: Child,
    addr: String,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn token_file(dir: &std::path::Path, token: &str) -> PathBuf {
    let p = dir.join(format!("token-{}", token.len()));
    std::fs::write(&p, token).unwrap();
    p
}

/// Starts `ceiling agent --once` on an ephemeral loopback port and reads the address it printed.
fn agent(token: &PathBuf) -> Agent {
    let mut cmd = Command::new(bin());
    cmd.args(["agent", "--listen", "127.0.0.1:0", "--once", "--token-file"])
        .arg(token);
    spawn_agent(cmd)
}

/// Spawns an agent command and reads the address from its first line (`… listening on ADDR …`).
fn spawn_agent(mut cmd: Command) -> Agent {
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in `{line}`"))
        .to_string();
    // keep draining its stderr so it never blocks on a full pipe
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
    });
    Agent { child, addr }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ceiling-agents-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn load(
    port: u16,
    rate: &str,
    duration: &str,
    agents: &[&Agent],
    token: &PathBuf,
) -> std::process::Output {
    let list: Vec<&str> = agents.iter().map(|a| a.addr.as_str()).collect();
    Command::new(bin())
        .args(["load", "--url"])
        .arg(format!("http://127.0.0.1:{port}/x"))
        .args(["--rate", rate, "--duration", duration, "--json", "--agents"])
        .arg(list.join(","))
        .arg("--agent-token-file")
        .arg(token)
        .output()
        .unwrap()
}

#[test]
fn two_agents_send_the_schedule_exactly_once_and_merge() {
    let dir = tmp("two");
    let tok = token_file(&dir, "0123456789abcdef-two");
    let port = server();
    let (a, b) = (agent(&tok), agent(&tok));
    let out = load(port, "400", "2s", &[&a, &b], &tok);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 400/s for 2 s: 800 intended send times, shared 400/400, each sent once
    assert_eq!(r["offered"], 800, "{r}");
    assert_eq!(r["completed"], 800, "{r}");
    assert_eq!(
        r["latency"]["count"], 800,
        "merged histogram holds every request: {r}"
    );
    let ag = r["agents"].as_array().unwrap();
    assert_eq!(ag.len(), 2);
    for (i, g) in ag.iter().enumerate() {
        assert_eq!(g["shard"], format!("{i}/2"));
        assert_eq!(g["offered"], 400, "{g}");
        assert_eq!(g["completed"], 400, "{g}");
        assert!(g["lost"].is_null());
    }
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .contains("generators kept up"),
        "{r}"
    );
}

#[test]
fn an_agent_killed_mid_run_is_reported_and_what_it_sent_is_kept() {
    let dir = tmp("kill");
    let tok = token_file(&dir, "0123456789abcdef-kill");
    let port = server();
    let a = agent(&tok);
    let mut b = agent(&tok);
    let coordinator = {
        let (aa, ba) = (a.addr.clone(), b.addr.clone());
        let tok = tok.clone();
        std::thread::spawn(move || {
            Command::new(bin())
                .args(["load", "--url"])
                .arg(format!("http://127.0.0.1:{port}/x"))
                .args(["--rate", "200", "--duration", "5s", "--json", "--agents"])
                .arg(format!("{aa},{ba}"))
                .arg("--agent-token-file")
                .arg(&tok)
                .output()
                .unwrap()
        })
    };
    // the run starts ~1 s after the handshake; kill agent b (our own child, by its handle)
    // ~2.5 s into its 5-s run
    std::thread::sleep(Duration::from_millis(3500));
    b.child.kill().unwrap();
    let out = coordinator.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "an incomplete run exits 1: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ag = r["agents"].as_array().unwrap();
    assert!(ag[0]["lost"].is_null(), "{r}");
    let lost = ag[1]["lost"].as_str().expect("agent b reported lost");
    assert!(lost.contains("arrived and is kept"), "{lost}");
    let (ca, cb) = (
        ag[0]["completed"].as_u64().unwrap(),
        ag[1]["completed"].as_u64().unwrap(),
    );
    assert_eq!(ca, 500, "the surviving agent ran its whole share: {r}");
    assert!(
        cb > 0 && cb < 500,
        "agent b's recorded seconds are in: {cb}"
    );
    assert_eq!(
        r["completed"].as_u64().unwrap(),
        ca + cb,
        "merged = what arrived"
    );
    assert!(
        r["verdict"].as_str().unwrap().starts_with("INCOMPLETE"),
        "{r}"
    );
}

#[test]
fn agents_refuse_a_wrong_token_and_a_remote_target() {
    let dir = tmp("refuse");
    let good = token_file(&dir, "0123456789abcdef-good");
    let bad = token_file(&dir, "0123456789abcdef-bad-token");
    let port = server();
    let a = agent(&good);
    let out = load(port, "100", "1s", &[&a], &bad);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wrong token"), "{err}");

    let b = agent(&good);
    // the coordinator allows a remote target; the agent (started without --allow-remote) does not
    let out = Command::new(bin())
        .args(["load", "--url", "http://192.0.2.7:8080/", "--allow-remote"])
        .args(["--rate", "100", "--duration", "1s", "--agents", &b.addr])
        .arg("--agent-token-file")
        .arg(&good)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not loopback") && err.contains("this agent's rule"),
        "{err}"
    );
}

/// A network namespace this test made, with a veth pair to the host: deleted (with its link) on drop.
struct Netns {
    name: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Namespace `k` of this test: `10.213.<net>.2` inside, `10.213.<net>.1` on the host's end, and
/// a default route through the host, so the namespace reaches the host's other test addresses.
fn netns(k: u32) -> Option<(Netns, String, String)> {
    let pid = std::process::id();
    let net = (pid % 120) * 2 + k;
    let name = format!("ceiling-ag{k}-{pid}");
    let (host_if, ns_if) = (
        format!("cgh{k}{}", pid % 100_000),
        format!("cgn{k}{}", pid % 100_000),
    );
    if !ip(&["netns", "add", &name]) {
        return None;
    }
    let ns = Netns { name: name.clone() };
    let (host_ip, ns_ip) = (format!("10.213.{net}.1"), format!("10.213.{net}.2"));
    let ok = ip(&[
        "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
    ]) && ip(&["link", "set", &ns_if, "netns", &name])
        && ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &host_if])
        && ip(&["link", "set", &host_if, "up"])
        && ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{ns_ip}/30"),
            "dev",
            &ns_if,
        ])
        && ip(&["-n", &name, "link", "set", &ns_if, "up"])
        && ip(&["-n", &name, "link", "set", "lo", "up"])
        && ip(&["-n", &name, "route", "add", "default", "via", &host_ip]);
    ok.then_some((ns, host_ip, ns_ip))
}

/// Starts `ceiling agent --once --allow-remote` inside namespace `ns` on `addr:0`.
fn agent_in(ns: &Netns, addr: &str, token: &PathBuf) -> Agent {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.name])
        .arg(bin())
        .args(["agent", "--once", "--allow-remote", "--listen"])
        .arg(format!("{addr}:0"))
        .arg("--token-file")
        .arg(token);
    spawn_agent(cmd)
}

#[test]
fn agents_in_their_own_network_namespaces_share_the_schedule() {
    // root and iproute2 are needed to make namespaces; without them this test says so and passes
    // nothing off as tested
    let Some((ns_a, host_a, in_a)) = netns(0) else {
        eprintln!("skipped: cannot create a network namespace here (needs root and iproute2)");
        return;
    };
    let (ns_b, _host_b, in_b) = netns(1).expect("a second namespace");
    let dir = tmp("netns");
    let tok = token_file(&dir, "0123456789abcdef-netns");
    // the service listens on the host's end of namespace a's link: both agents reach it over
    // their own veth (b through its default route), never over loopback
    let port = server_on(&host_a);
    let (a, b) = (agent_in(&ns_a, &in_a, &tok), agent_in(&ns_b, &in_b, &tok));
    let out = Command::new(bin())
        .args(["load", "--allow-remote", "--url"])
        .arg(format!("http://{host_a}:{port}/x"))
        .args(["--rate", "400", "--duration", "2s", "--json", "--agents"])
        .arg(format!("{},{}", a.addr, b.addr))
        .arg("--agent-token-file")
        .arg(&tok)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (r["offered"].as_u64(), r["completed"].as_u64()),
        (Some(800), Some(800)),
        "{r}"
    );
    for g in r["agents"].as_array().unwrap() {
        assert_eq!(g["completed"], 400, "{g}");
        // one kernel, one clock: the measured offset is within the probe's error
        let (off, rtt) = (
            g["clock_offset_us"].as_i64().unwrap(),
            g["clock_rtt_us"].as_i64().unwrap(),
        );
        assert!(off.abs() <= rtt / 2 + 100, "offset {off} µs, rtt {rtt} µs");
    }
    drop((a, b));
}
