//! The run's hard budgets: `MaxTotalTokens` and `MaxTotalCost`. Every model reply's usage
//! and cost are added here; going over either budget ends the run with outcome `budget`.
//! A call whose cost is unknown (its model has no price, or its server reported no usage)
//! cannot be held to `MaxTotalCost`: the run says so once, with a `warning` event.

use super::Machine;
use crate::event::{Budget, EventKind, Outcome};
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
                    EventKind::BudgetExceeded(Budget::Tokens {
                        tokens: total,
                        max_total_tokens: max,
                    }),
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
                EventKind::Warning {
                    message,
                    reason: Some("cost_unknown".to_string()),
                },
            );
        }
        let usd = self.run.spend.usd;
        if usd > max {
            self.emit(
                None,
                EventKind::BudgetExceeded(Budget::Cost {
                    cost_usd: usd,
                    max_total_cost: max,
                }),
            );
            let reason = format!("${usd:.4} spent, over the cost budget of ${max}");
            self.finish(Outcome::Budget, Some(reason));
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use fuseraft_compiler::ir::Program;
    use fuseraft_compiler::MemoryFiles;
    use serde_json::json;

    use crate::effect::{ModelReply, Request, Response};
    use crate::event::Outcome;
    use crate::history::Usage;
    use crate::machine::{Machine, Options};

    fn program() -> Program {
        let config = "Orchestration:\n  Name: Spend\n  MaxTotalCost: 1\n  Agents:\n    - { Name: A, Instructions: Go. }\n  Selection: { Type: roundrobin }\n  Termination: { Type: maxiterations, MaxIterations: 10 }\n";
        let files = MemoryFiles::new().with("c.yaml", config);
        fuseraft_compiler::compile(std::path::Path::new("c.yaml"), &files)
            .program
            .expect("the config compiles")
    }

    fn options() -> Options {
        Options {
            session_id: "spend000".to_string(),
            task: "t".to_string(),
            max_turns: Some(10),
            skip_prompts: true,
        }
    }

    /// Answers the next model call with a reply of this cost.
    fn answer(machine: &mut Machine<'_>, text: &str, cost: Option<f64>) {
        let Request::Model(_) = machine.step() else {
            panic!("a model call");
        };
        machine.resume(Response::Model(Ok(ModelReply {
            text: text.to_string(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 10,
                ..Usage::default()
            },
            cost,
            ..ModelReply::default()
        })));
    }

    #[test]
    fn a_resumed_run_goes_on_counting_what_was_spent() {
        let program = program();
        let mut machine = Machine::new(&program, options());
        answer(&mut machine, "first", Some(0.6));
        assert_eq!(machine.run().outcome, None, "$0.60 of $1");
        let checkpoint = machine.checkpoint().expect("between turns");
        assert_eq!(checkpoint["Machine"]["Spend"]["Usd"], json!(0.6));
        let mut resumed = Machine::restore(&program, options(), &checkpoint).unwrap();
        answer(&mut resumed, "second", Some(0.6));
        assert_eq!(resumed.run().outcome, Some(Outcome::Budget));
        let reason = resumed.run().reason.clone().unwrap_or_default();
        assert!(reason.contains("over the cost budget of $1"), "{reason}");
    }

    #[test]
    fn an_unknown_cost_is_said_once_and_a_negative_or_overflowed_spend_counts_as_nothing() {
        let program = program();
        let mut machine = Machine::new(&program, options());
        answer(&mut machine, "first", None);
        answer(&mut machine, "second", None);
        let warnings = machine
            .drain_events()
            .iter()
            .filter(|event| event.name() == "warning")
            .count();
        assert_eq!(warnings, 1);
        let checkpoint = machine.checkpoint().expect("between turns");
        assert_eq!(checkpoint["Machine"]["Spend"]["Unpriced"], json!(2));
        // Not a number at all: refused, naming the field.
        let mut corrupt = checkpoint.clone();
        corrupt["Machine"]["Spend"]["Usd"] = json!("lots");
        let error = Machine::restore(&program, options(), &corrupt)
            .err()
            .unwrap();
        assert!(error.contains("field `Machine.Spend.Usd`"), "{error}");
        // `null` is how an overflowed (infinite) sum is written.
        for usd in [json!(-5.0), json!(null), json!(f64::MAX)] {
            let mut corrupt = checkpoint.clone();
            corrupt["Machine"]["Spend"]["Usd"] = usd.clone();
            let mut resumed = Machine::restore(&program, options(), &corrupt).unwrap();
            answer(&mut resumed, "third", Some(0.1));
            let over = usd == json!(f64::MAX);
            assert_eq!(resumed.run().outcome.is_some(), over, "{usd}");
        }
    }
}
