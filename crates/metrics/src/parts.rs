//! The parts of the stand a run measures and limits, and the record of which limits were applied.
//!
//! These types cross crates: the stand produces them, the analysis and the report read them, and
//! `run.json` stores them. They live here, in the shared data model, so every crate speaks the same
//! typed language instead of matching JSON keys or bare strings (a key that no producer ever wrote
//! once hid the "LIMITS NOT APPLIED" notice for good).

use serde::{Deserialize, Serialize};
use std::fmt;

/// One measured or limited part of a run. Serialised as `stack`, `postgres`, `pgbouncer`,
/// `generator` (the names run.json, `timeseries.csv` and the cgroup names use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The stack under test (its whole process tree).
    Stack,
    /// The stand's PostgreSQL (postmaster and backends).
    Postgres,
    /// The stand's PgBouncer, between the stacks and PostgreSQL when the plan asks for it.
    Pgbouncer,
    /// The load generator (this process).
    Generator,
}

impl Role {
    /// Every role, in report order.
    pub const ALL: [Role; 4] = [
        Role::Stack,
        Role::Postgres,
        Role::Pgbouncer,
        Role::Generator,
    ];

    /// The serialised name: `stack`, `postgres`, `pgbouncer`, `generator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Stack => "stack",
            Role::Postgres => "postgres",
            Role::Pgbouncer => "pgbouncer",
            Role::Generator => "generator",
        }
    }

    /// The name for sentences: `the stack`, `PostgreSQL`, `PgBouncer`, `the generator`.
    pub fn title(self) -> &'static str {
        match self {
            Role::Stack => "the stack",
            Role::Postgres => "PostgreSQL",
            Role::Pgbouncer => "PgBouncer",
            Role::Generator => "the generator",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a role (stack, postgres, pgbouncer or generator)"))
    }
}

/// Resource limits for one process tree (like docker's `cpus`, `mem_limit`, `cpuset`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// CPU quota in cores (1.5 = 150 ms of CPU per 100 ms period).
    pub cpus: Option<f64>,
    /// Memory limit in MiB.
    pub memory_mb: Option<u64>,
    /// CPUs to pin to, in cpuset list syntax (`"0"`, `"1-3,5"`).
    pub cpuset: Option<String>,
}

impl Limits {
    /// True when nothing is requested.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.memory_mb.is_none() && self.cpuset.is_none()
    }
}

/// What was actually applied for one process tree, and why anything requested was not. The stand
/// fills it when it creates a cgroup; run.json stores it under `limits`; the report says what was
/// not applied ([`LimitsApplied::not_applied_note`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitsApplied {
    /// Whose limits these are.
    pub who: Role,
    /// What was asked for.
    pub requested: Limits,
    /// CPU quota in force (cores), if any.
    pub cpus: Option<f64>,
    /// Memory limit in force (MiB), if any.
    pub memory_mb: Option<u64>,
    /// cpuset in force, if any.
    pub cpuset: Option<String>,
    /// How: e.g. `cgroup v1 (cpu, cpuacct, memory)`, `cgroup v2 (cpu, memory)` or `none`.
    pub mechanism: String,
    /// The cgroup directories created.
    #[serde(default)]
    pub groups: Vec<String>,
    /// One line per requested limit that could not be applied, with the reason. Empty = all applied.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Informational lines (e.g. a v2 controller could not be enabled, so v1 was used).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl LimitsApplied {
    /// An empty record for `who`: nothing requested, nothing applied.
    pub fn new(who: Role, requested: &Limits) -> LimitsApplied {
        LimitsApplied {
            who,
            requested: requested.clone(),
            cpus: None,
            memory_mb: None,
            cpuset: None,
            mechanism: String::new(),
            groups: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// True when every requested limit is in force.
    pub fn fully_applied(&self) -> bool {
        self.problems.is_empty()
    }

    /// What was requested but is not in force, in one line (`cpus: no usable `cpu` cgroup
    /// controller…; memory_mb: …`), or `None` when everything requested was applied.
    pub fn not_applied_note(&self) -> Option<String> {
        (!self.fully_applied()).then(|| self.problems.join("; "))
    }

    /// One line for the console: `stack: cpus=2 memory=1024MiB via cgroup v1 (cpu, memory)` or the
    /// problems.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpus {
            parts.push(format!("cpus={c}"));
        }
        if let Some(m) = self.memory_mb {
            parts.push(format!("memory={m}MiB"));
        }
        if let Some(s) = &self.cpuset {
            parts.push(format!("cpuset={s}"));
        }
        let applied = if parts.is_empty() {
            if self.requested.is_empty() {
                "no limits requested".to_string()
            } else {
                "no limits applied".to_string()
            }
        } else {
            format!("{} via {}", parts.join(" "), self.mechanism)
        };
        match self.not_applied_note() {
            None => format!("{}: {applied}", self.who),
            Some(n) => format!("{}: {applied}; NOT APPLIED: {n}", self.who),
        }
    }

    /// A record for when no cgroup could be created at all: every requested limit is a problem
    /// with `reason`.
    pub fn not_applied(who: Role, requested: &Limits, reason: &str) -> LimitsApplied {
        let mut la = LimitsApplied::new(who, requested);
        la.mechanism = "none".into();
        if requested.cpus.is_some() {
            la.problems.push(format!("cpus: {reason}"));
        }
        if requested.memory_mb.is_some() {
            la.problems.push(format!("memory_mb: {reason}"));
        }
        if requested.cpuset.is_some() {
            la.problems.push(format!("cpuset: {reason}"));
        }
        la
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_are_the_old_strings() {
        for (r, s) in [
            (Role::Stack, "\"stack\""),
            (Role::Postgres, "\"postgres\""),
            (Role::Pgbouncer, "\"pgbouncer\""),
            (Role::Generator, "\"generator\""),
        ] {
            assert_eq!(serde_json::to_string(&r).unwrap(), s);
            assert_eq!(serde_json::from_str::<Role>(s).unwrap(), r);
            assert_eq!(format!("\"{r}\""), s);
            assert_eq!(s.trim_matches('"').parse::<Role>().unwrap(), r);
        }
        assert!("db".parse::<Role>().is_err());
    }

    #[test]
    fn not_applied_note_names_each_problem() {
        let req = Limits {
            cpus: Some(2.0),
            memory_mb: Some(512),
            cpuset: None,
        };
        let la = LimitsApplied::not_applied(Role::Stack, &req, "no cgroups");
        assert!(!la.fully_applied());
        assert_eq!(
            la.not_applied_note().as_deref(),
            Some("cpus: no cgroups; memory_mb: no cgroups")
        );
        assert!(la.summary().contains("NOT APPLIED"), "{}", la.summary());
        let ok = LimitsApplied::new(Role::Postgres, &Limits::default());
        assert_eq!(ok.not_applied_note(), None);
        assert_eq!(ok.summary(), "postgres: no limits requested");
    }
}
