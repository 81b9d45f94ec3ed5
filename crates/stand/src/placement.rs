//! How the stand lays the lab's parts out on the machine's CPUs (`stand.placement`).
//!
//! On a machine with the cores, the generator, the stack and PostgreSQL each get a CPU set of
//! their own, so what one part spends is not taken from another and the ceiling found is the
//! stack's (still under the plan's CPU quota). On a machine without them (this project's 2-core
//! boxes) they share, and the placement says so: a ceiling found there is the box's.

use ceiling_metrics::{cpu_list, Placement};
use ceiling_plan::PlacementMode;

/// Cores the stack is given when the plan sets no CPU quota (the sources' 2 vCPU).
pub const DEFAULT_STACK_CORES: usize = 2;

/// Lays out `cpus` (this process's affinity) for a stack of `stack_cpus` cores (the plan's CPU
/// quota, rounded up) and, when `embedded_db`, PostgreSQL.
///
/// The rule: the stack gets its cores; the generator and PostgreSQL split the rest (the generator
/// the lower half, PostgreSQL the upper; PgBouncer goes with PostgreSQL). Disjoint sets only when
/// each of the three gets at least the stack's count (`cpus ≥ 3 × stack`; with an external
/// database, `≥ 2 ×`): a PostgreSQL or generator squeezed onto fewer cores than the stack would
/// move the ceiling more than sharing does. Otherwise every part may use every CPU, said so.
pub fn place(
    cpus: &[u32],
    stack_cpus: Option<f64>,
    mode: PlacementMode,
    embedded_db: bool,
) -> Placement {
    let n = cpus.len();
    let s = stack_cpus
        .map(|c| c.ceil().max(1.0) as usize)
        .unwrap_or(DEFAULT_STACK_CORES);
    let parts = if embedded_db { 3 } else { 2 };
    let who = if embedded_db {
        "the generator, the stack and PostgreSQL"
    } else {
        "the generator and the stack"
    };
    let shared = |reason: String| Placement {
        cpus: cpus.to_vec(),
        shared: true,
        generator: None,
        stack: None,
        postgres: None,
        reason,
    };
    if mode == PlacementMode::Shared {
        return shared(format!(
            "shared (the plan's stand.placement = \"shared\"): {who} may all run on CPUs {}",
            cpu_list(cpus)
        ));
    }
    if n < parts * s {
        return shared(format!(
            "shared: {who} run on the same {n} CPU{} ({}), fewer than {parts} × the stack's {s} — \
             a ceiling found here is the box's (all of them together), not the stack's alone",
            if n == 1 { "" } else { "s" },
            cpu_list(cpus)
        ));
    }
    let rest = n - s;
    let g = if embedded_db { rest / 2 } else { rest };
    let generator = &cpus[..g];
    let stack = &cpus[g..g + s];
    let postgres = &cpus[g + s..];
    Placement {
        cpus: cpus.to_vec(),
        shared: false,
        generator: Some(cpu_list(generator)),
        stack: Some(cpu_list(stack)),
        postgres: (embedded_db && !postgres.is_empty()).then(|| cpu_list(postgres)),
        reason: format!(
            "{n} CPUs: {s} for the stack, the rest split between {}",
            if embedded_db {
                "the generator and PostgreSQL"
            } else {
                "the generator (the database is not the stand's)"
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(n: u32) -> Vec<u32> {
        (0..n).collect()
    }

    #[test]
    fn a_two_core_box_shares_and_says_the_ceiling_is_the_boxs() {
        let p = place(&cpus(2), Some(2.0), PlacementMode::Auto, true);
        assert!(p.shared);
        assert_eq!((p.generator, p.stack, p.postgres), (None, None, None));
        assert!(p.reason.contains("the box's"), "{}", p.reason);
        assert!(p.reason.contains("(0-1)"), "{}", p.reason);
    }

    #[test]
    fn sixteen_cores_give_each_part_its_own_set() {
        let p = place(&cpus(16), Some(2.0), PlacementMode::Auto, true);
        assert!(!p.shared);
        assert_eq!(p.generator.as_deref(), Some("0-6"));
        assert_eq!(p.stack.as_deref(), Some("7-8"));
        assert_eq!(p.postgres.as_deref(), Some("9-15"));
        assert_eq!(
            p.describe(),
            "disjoint CPUs: generator on 0-6, stack on 7-8, PostgreSQL on 9-15"
        );
    }

    #[test]
    fn the_sets_never_overlap_and_cover_what_the_process_may_use() {
        // an affinity with holes (a cpuset the user gave ceiling itself)
        let allowed: Vec<u32> = vec![0, 2, 3, 5, 6, 7, 9, 10, 11];
        for quota in [0.5, 1.0, 1.5, 2.0, 3.0] {
            let p = place(&allowed, Some(quota), PlacementMode::Auto, true);
            if p.shared {
                continue;
            }
            let mut seen: Vec<u32> = Vec::new();
            for set in [&p.generator, &p.stack, &p.postgres].into_iter().flatten() {
                let v = ceiling_supervise::parse_cpu_list(set).unwrap();
                assert!(v.iter().all(|c| !seen.contains(c)), "{p:?}");
                seen.extend(v);
            }
            seen.sort();
            assert_eq!(seen, allowed, "{p:?}");
            let stack = ceiling_supervise::parse_cpu_list(p.stack.as_deref().unwrap()).unwrap();
            assert_eq!(stack.len(), quota.ceil() as usize, "{p:?}");
        }
    }

    #[test]
    fn too_few_cores_for_three_sets_share() {
        // 5 cores, a 2-core stack: PostgreSQL and the generator would get 1–2 each
        assert!(place(&cpus(5), Some(2.0), PlacementMode::Auto, true).shared);
        assert!(!place(&cpus(6), Some(2.0), PlacementMode::Auto, true).shared);
        // with an external database only the generator needs a set of its own
        let p = place(&cpus(4), Some(2.0), PlacementMode::Auto, false);
        assert!(!p.shared);
        assert_eq!(
            (p.generator.as_deref(), p.stack.as_deref(), p.postgres),
            (Some("0-1"), Some("2-3"), None)
        );
    }

    #[test]
    fn the_plan_can_ask_to_share() {
        let p = place(&cpus(16), Some(2.0), PlacementMode::Shared, true);
        assert!(p.shared);
        assert!(p.reason.contains("stand.placement"), "{}", p.reason);
    }
}
