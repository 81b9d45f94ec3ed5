//! Where the lab's parts ran: the generator, the stack and PostgreSQL on CPU sets of their own, or
//! sharing the machine's CPUs. Recorded in run.json (`placement`) and said beside every result,
//! because a part that shares cores with the stack takes CPU from it: on a small machine the
//! ceiling found is the box's (generator + stack + PostgreSQL together), not the stack's alone.

use serde::{Deserialize, Serialize};

/// How the stand laid the parts out on the machine's CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The CPUs this process could run on when the stand started (its affinity).
    pub cpus: Vec<u32>,
    /// True when the generator, the stack and PostgreSQL share CPUs (no set of their own).
    pub shared: bool,
    /// The generator's CPUs (cpuset list syntax), when it has a set of its own.
    pub generator: Option<String>,
    /// The stack's CPUs, when it has a set of its own.
    pub stack: Option<String>,
    /// PostgreSQL's CPUs (and PgBouncer's, when there is one), when it has a set of its own.
    pub postgres: Option<String>,
    /// Why this layout, in one sentence (`shared: 2 CPUs, fewer than 3 × the stack's 2 …`).
    pub reason: String,
}

impl Placement {
    /// One line for the console and the reports: `disjoint CPUs: generator 0-6, stack 7-8,
    /// PostgreSQL 9-15` or `shared: …`.
    pub fn describe(&self) -> String {
        if self.shared {
            return self.reason.clone();
        }
        let part = |name: &str, v: &Option<String>| v.as_ref().map(|c| format!("{name} on {c}"));
        let parts: Vec<String> = [
            part("generator", &self.generator),
            part("stack", &self.stack),
            part("PostgreSQL", &self.postgres),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!("disjoint CPUs: {}", parts.join(", "))
    }
}

/// `[0, 1, 2, 5, 7, 8]` as `0-2,5,7-8` (cpuset list syntax).
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_written_as_ranges() {
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_list(&[3]), "3");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn a_disjoint_placement_names_each_part() {
        let p = Placement {
            cpus: (0..16).collect(),
            shared: false,
            generator: Some("0-6".into()),
            stack: Some("7-8".into()),
            postgres: Some("9-15".into()),
            reason: String::new(),
        };
        assert_eq!(
            p.describe(),
            "disjoint CPUs: generator on 0-6, stack on 7-8, PostgreSQL on 9-15"
        );
    }
}
