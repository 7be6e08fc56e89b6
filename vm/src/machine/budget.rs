//! The run's hard budgets: `MaxTotalTokens` and `MaxTotalCost`. Every model reply's usage
//! and cost are added here; going over either budget ends the run with outcome `budget`.
//! A call whose cost is unknown (its model has no price, or its server reported no usage)
//! cannot be held to `MaxTotalCost`: the run says so once, with a `warning` event.

use serde_json::json;

use super::Machine;
use crate::event::Outcome;
use crate::history::{Spend, Usage};

impl Machine<'_> {
    /// Adds a reply's (or a finished branch's) usage and cost; false when that ended the
    /// run over a budget.
    pub(super) fn add_usage(&mut self, usage: Usage, spend: Spend) -> bool {
        self.run.usage.add(usage);
        self.run.spend.add(spend);
        if let Some(max) = self.program.termination.max_total_tokens {
            let total = self.run.usage.total();
            if total > max {
                self.emit(
                    None,
                    "budget_exceeded",
                    json!({"tokens": total, "max_total_tokens": max}),
                );
                let reason = format!("{total} tokens used, over the budget of {max}");
                self.finish(Outcome::Budget, Some(reason));
                return false;
            }
        }
        let Some(max) = self.program.termination.max_total_cost else {
            return true;
        };
        if spend.unpriced > 0 && !self.told_cost_unknown {
            self.told_cost_unknown = true;
            let message = format!(
                "a reply's cost is unknown (its model has no price, or its server reported no usage): `MaxTotalCost` counts only the calls with a known price (${:.4} so far)",
                self.run.spend.usd
            );
            self.emit(
                None,
                "warning",
                json!({"message": message, "reason": "cost_unknown"}),
            );
        }
        let usd = self.run.spend.usd;
        if usd > max {
            self.emit(
                None,
                "budget_exceeded",
                json!({"cost_usd": usd, "max_total_cost": max}),
            );
            let reason = format!("${usd:.4} spent, over the cost budget of ${max}");
            self.finish(Outcome::Budget, Some(reason));
            return false;
        }
        true
    }
}
