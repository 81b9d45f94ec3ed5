//! Checks of the database's state after a stack's run (the stand runs them; the data lives here).

use serde::{Deserialize, Serialize};

/// Money conservation in the bank workload (source 001), checked by the stand after a stack's
/// run from the `client_openings` audit table that `contract/schema.sql`'s trigger fills.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoneyCheck {
    /// Clients in the database.
    pub clients: u64,
    /// Of those, clients created during the run (beyond the seeded ones).
    pub created: u64,
    /// Transfers recorded.
    pub transfers: u64,
    /// Sum of every balance, cents.
    pub sum_balances: i64,
    /// Sum of every opening balance, cents.
    pub sum_openings: i64,
    /// Clients with a negative balance.
    pub negative: u64,
    /// Clients whose balance ≠ opening + transfers in − transfers out (a half-applied or lost
    /// transfer).
    pub inconsistent: u64,
    /// Clients with no recorded opening (created behind the audit's back).
    pub unaudited: u64,
}

impl MoneyCheck {
    /// True when money was conserved: sums equal, no negative balance, every client consistent
    /// with its transfers, every client audited.
    pub fn conserved(&self) -> bool {
        self.sum_balances == self.sum_openings
            && self.negative == 0
            && self.inconsistent == 0
            && self.unaudited == 0
    }
    /// True when the run touched the bank at all (created clients or made transfers).
    pub fn touched(&self) -> bool {
        self.created > 0 || self.transfers > 0
    }
    /// One sentence: `money conserved: 10,412 clients (412 created), 35,120 transfers, Σ = Σ
    /// openings` or what broke.
    pub fn describe(&self) -> String {
        let head = format!(
            "{} clients ({} created during the run), {} transfers",
            self.clients, self.created, self.transfers
        );
        if self.conserved() {
            return format!("money conserved: {head}; balances sum to the openings");
        }
        let mut bad = Vec::new();
        if self.sum_balances != self.sum_openings {
            bad.push(format!(
                "balances sum to {} but openings to {} ({:+} cents)",
                self.sum_balances,
                self.sum_openings,
                self.sum_balances - self.sum_openings
            ));
        }
        if self.negative > 0 {
            bad.push(format!("{} negative balances", self.negative));
        }
        if self.inconsistent > 0 {
            bad.push(format!(
                "{} clients whose balance is not opening + transfers in − out",
                self.inconsistent
            ));
        }
        if self.unaudited > 0 {
            bad.push(format!(
                "{} clients with no recorded opening",
                self.unaudited
            ));
        }
        format!("MONEY NOT CONSERVED: {head}; {}", bad.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> MoneyCheck {
        MoneyCheck {
            clients: 10,
            created: 2,
            transfers: 5,
            sum_balances: 100,
            sum_openings: 100,
            negative: 0,
            inconsistent: 0,
            unaudited: 0,
        }
    }

    #[test]
    fn conserved_and_not() {
        assert!(ok().conserved());
        assert!(ok().describe().starts_with("money conserved"));
        let bad = MoneyCheck {
            sum_balances: 90,
            inconsistent: 1,
            ..ok()
        };
        assert!(!bad.conserved());
        let d = bad.describe();
        assert!(
            d.contains("-10 cents") && d.contains("1 clients whose balance"),
            "{d}"
        );
    }
}
