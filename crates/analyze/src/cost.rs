//! What the ceilings cost (a plan's `[cost]`, source 002's table): instances of the plan's size
//! needed per service for one load, and their yearly price. Arithmetic only; the numbers it
//! multiplies are the run's measured ceilings.

use ceiling_plan::CostSettings;
use serde::{Deserialize, Serialize};

/// Hours in a (non-leap) year, as the source's table (1.51 RUB/h → 13,227.60 RUB/year).
pub const HOURS_PER_YEAR: f64 = 8760.0;

/// One stack's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// Stack.
    pub stack: String,
    /// Its measured RPS@SLO (0 = none passed).
    pub ceiling_rps: f64,
    /// What one instance is given to serve: ceiling × working load.
    pub per_instance_rps: f64,
    /// Instances per service; `None` when the stack has no ceiling (it cannot serve the load
    /// within the SLO at any count).
    pub instances: Option<u32>,
    /// Yearly price of those instances for every service.
    pub yearly: Option<f64>,
}

/// The table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostTable {
    /// Currency of every price.
    pub currency: String,
    /// The load each service must serve, RPS.
    pub target_rps: f64,
    /// Where the target came from (`3 instances of helidon-nima` or `the plan's target_rps`).
    pub target_from: String,
    /// vCPUs and GiB of one instance.
    pub cpus: f64,
    /// GiB of one instance (priced as GB).
    pub memory_gb: f64,
    /// Price of one instance for a year.
    pub instance_year: f64,
    /// Services priced.
    pub services: u32,
    /// One row per stack, in the run's order.
    pub rows: Vec<CostRow>,
}

/// Instances per service and yearly prices for stacks with the given ceilings (`(stack, RPS@SLO)`),
/// at instances of `cpus` vCPUs and `memory_gb` GB, each loaded to `working_load` of its ceiling.
/// Errors when the target load cannot be known (the reference stack was not measured or has no
/// ceiling).
pub fn cost_table(
    settings: &CostSettings,
    cpus: f64,
    memory_gb: f64,
    working_load: f64,
    ceilings: &[(String, f64)],
) -> Result<CostTable, String> {
    let per_instance = |c: f64| c * working_load;
    let (target_rps, target_from) = match (&settings.reference, settings.target_rps) {
        (_, Some(t)) => (t, "the plan's target_rps".to_string()),
        (Some(r), None) => {
            let c = ceilings
                .iter()
                .find(|(s, _)| s == r)
                .map(|(_, c)| *c)
                .ok_or_else(|| format!("the reference stack `{r}` was not measured in this run"))?;
            if c <= 0.0 {
                return Err(format!(
                    "the reference stack `{r}` has no ceiling in this run (no shelf passed), so the load to price is unknown"
                ));
            }
            (
                per_instance(c) * settings.min_instances as f64,
                format!(
                    "what {} instance(s) of {r} serve at {:.0}% of its ceiling",
                    settings.min_instances,
                    working_load * 100.0
                ),
            )
        }
        (None, None) => return Err("[cost] names neither a reference nor a target_rps".into()),
    };
    let instance_year = (settings.cpu_hour * cpus + settings.gb_hour * memory_gb) * HOURS_PER_YEAR;
    let rows = ceilings
        .iter()
        .map(|(stack, c)| {
            let per = per_instance(*c);
            let instances = (per > 0.0).then(|| {
                // a hair below an integer is that integer: the reference's own count must come
                // out as min_instances, not one more from rounding
                let need = (target_rps / per - 1e-9).ceil().max(1.0) as u32;
                need.max(settings.min_instances)
            });
            CostRow {
                stack: stack.clone(),
                ceiling_rps: *c,
                per_instance_rps: per,
                instances,
                yearly: instances.map(|n| n as f64 * settings.services as f64 * instance_year),
            }
        })
        .collect();
    Ok(CostTable {
        currency: settings.currency.clone(),
        target_rps,
        target_from,
        cpus,
        memory_gb,
        instance_year,
        services: settings.services,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source_002(reference: Option<&str>, target: Option<f64>) -> CostSettings {
        CostSettings {
            currency: "RUB".into(),
            cpu_hour: 1.12,
            gb_hour: 0.39,
            services: 10,
            min_instances: 3,
            reference: reference.map(str::to_string),
            target_rps: target,
        }
    }

    #[test]
    fn the_sources_own_numbers_give_the_sources_table() {
        // truth: source 002's table — Níma 3 instances, Spring 4.5× slower → the source rounded
        // to 15 ("4–5 times"); 1 CPU + 1 GB at 1.51 RUB/h = 13,227.60 RUB/year; 10 services
        let ceilings = vec![
            ("helidon-nima".to_string(), 4500.0),
            ("spring-webflux-data-r2dbc".to_string(), 1000.0),
        ];
        let t = cost_table(
            &source_002(Some("helidon-nima"), None),
            1.0,
            1.0,
            0.7,
            &ceilings,
        )
        .unwrap();
        assert!(
            (t.instance_year - 13_227.6).abs() < 1e-6,
            "{}",
            t.instance_year
        );
        assert_eq!(t.rows[0].instances, Some(3));
        assert!((t.rows[0].yearly.unwrap() - 396_828.0).abs() < 1e-3);
        // 4.5× the reference's load per instance: 13.5 → 14 instances (the source wrote 15)
        assert_eq!(t.rows[1].instances, Some(14));
        assert!((t.rows[1].yearly.unwrap() - 14.0 * 132_276.0).abs() < 1e-3);
        // at 5× it is the source's 15 and its 1,984,140 RUB
        let five = vec![ceilings[0].clone(), ("spring".to_string(), 900.0)];
        let t = cost_table(
            &source_002(Some("helidon-nima"), None),
            1.0,
            1.0,
            0.7,
            &five,
        )
        .unwrap();
        assert_eq!(t.rows[1].instances, Some(15));
        assert!((t.rows[1].yearly.unwrap() - 1_984_140.0).abs() < 1e-3);
    }

    #[test]
    fn a_fixed_target_a_floor_and_a_stack_without_a_ceiling() {
        let ceilings = vec![
            ("fast".to_string(), 10_000.0),
            ("slow".to_string(), 700.0),
            ("none".to_string(), 0.0),
        ];
        let t = cost_table(&source_002(None, Some(2100.0)), 2.0, 2.0, 0.7, &ceilings).unwrap();
        // fast needs 0.3 of an instance: the floor of 3 applies
        assert_eq!(t.rows[0].instances, Some(3));
        // slow serves 490 per instance: 2100 / 490 = 4.29 → 5
        assert_eq!(t.rows[1].instances, Some(5));
        assert_eq!((t.rows[2].instances, t.rows[2].yearly), (None, None));
        assert!((t.instance_year - (1.12 * 2.0 + 0.39 * 2.0) * 8760.0).abs() < 1e-6);
    }

    #[test]
    fn an_unknown_target_is_an_error_not_a_number() {
        let c = vec![("a".to_string(), 100.0), ("ref".to_string(), 0.0)];
        let e = cost_table(&source_002(Some("ref"), None), 1.0, 1.0, 0.7, &c).unwrap_err();
        assert!(e.contains("no ceiling"), "{e}");
        let e = cost_table(&source_002(Some("gone"), None), 1.0, 1.0, 0.7, &c).unwrap_err();
        assert!(e.contains("not measured"), "{e}");
    }
}
