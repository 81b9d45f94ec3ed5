//! What machine and software a run was measured on: the environment fingerprint the stand takes
//! and run.json keeps (`environment`), typed once here for every crate that reads it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What machine and software a run was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// Host name.
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// The CPU below its model name, which a hypervisor may mask ("AMD EPYC" on every host):
    /// vendor, family, model and stepping from /proc/cpuinfo (`AuthenticAMD family 26 model 2
    /// stepping 1`); empty where the kernel gives none of them, and in runs recorded before it.
    pub cpu_signature: String,
    /// Logical CPUs online.
    pub logical_cpus: usize,
    /// CPUs this process may run on (sched affinity).
    pub usable_cpus: usize,
    /// Total memory, bytes.
    pub memory_bytes: u64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// OS name (`PRETTY_NAME` from /etc/os-release).
    pub os: String,
    /// PostgreSQL server version, when known.
    pub postgres: Option<String>,
    /// PgBouncer between the stacks and PostgreSQL: its version and the plan's settings (absent
    /// when the stacks connect directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgbouncer: Option<PgBouncerRecord>,
    /// First line of `--version` for each toolchain found (missing ones are absent).
    pub toolchains: BTreeMap<String, String>,
    /// `v1`, `v2`, `hybrid` or `none`.
    pub cgroup_mode: String,
    /// Which hierarchies and controllers are available.
    pub cgroups: String,
    /// The ceiling version that measured.
    pub ceiling_version: String,
}

/// What run.json records about PgBouncer (under `environment.pgbouncer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgBouncerRecord {
    /// `pgbouncer --version` (e.g. `1.18.0`).
    pub version: String,
    /// Where the binary is.
    pub path: String,
    /// The plan's settings as written into its configuration.
    pub settings: ceiling_plan::PgBouncerSettings,
    /// Its port on 127.0.0.1 (the stacks' `DB_PORT`).
    pub port: u16,
}
