//! What the magentic loop keeps between its steps (`Run::magentic`), and its checkpoint form
//! (`Machine.Magentic`, PascalCase like the rest of the checkpoint).

use serde_json::{json, Value};

/// What the loop does next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Step {
    /// Ask the manager what is known (orientation).
    #[default]
    Facts,
    /// Ask the manager for the plan (orientation).
    Plan,
    /// Put the plan to the operator (`EnablePlanReview`).
    Review,
    /// Ask the manager to revise the plan with the operator's feedback.
    Revise,
    /// Ask the manager for the round's progress ledger.
    Ledger,
    /// After a stall: ask the manager to update the facts...
    ReplanFacts,
    /// ...and then the plan.
    ReplanPlan,
    /// The request is satisfied: ask the manager for the final answer.
    Final,
}

impl Step {
    const ALL: [Step; 8] = [
        Step::Facts,
        Step::Plan,
        Step::Review,
        Step::Revise,
        Step::Ledger,
        Step::ReplanFacts,
        Step::ReplanPlan,
        Step::Final,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Facts => "facts",
            Step::Plan => "plan",
            Step::Review => "review",
            Step::Revise => "revise",
            Step::Ledger => "ledger",
            Step::ReplanFacts => "replan_facts",
            Step::ReplanPlan => "replan_plan",
            Step::Final => "final",
        }
    }

    pub fn parse(text: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|step| step.as_str() == text)
    }
}

/// The manager's ledger: its facts and plan, and the loop's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Magentic {
    pub next: Step,
    pub facts: Option<String>,
    pub plan: Option<String>,
    /// Rounds handed to an agent, over the whole run.
    pub rounds: u32,
    /// Stalls since the last replan (or since progress was last made).
    pub stalls: u32,
    /// Replans so far.
    pub resets: u32,
    /// Unusable ledgers in a row.
    pub invalid: u32,
    /// The last unusable ledger and the correction the manager gets with its next question.
    pub retry: Option<(String, String)>,
    /// The operator's feedback on the plan, waiting for the revision.
    pub feedback: Option<String>,
}

impl Magentic {
    /// Clears the failure counts (stalls, replans, unusable ledgers) for a resumed run that
    /// had stopped; the rounds used stay.
    pub fn forgive(&mut self) {
        self.stalls = 0;
        self.resets = 0;
        self.invalid = 0;
        self.retry = None;
    }

    pub fn to_json(&self) -> Value {
        json!({
            "Next": self.next.as_str(),
            "Facts": self.facts,
            "Plan": self.plan,
            "Rounds": self.rounds,
            "Stalls": self.stalls,
            "Resets": self.resets,
            "InvalidLedgers": self.invalid,
            "Retry": self.retry.as_ref().map(|(reply, correction)| json!({"Reply": reply, "Correction": correction})),
            "Feedback": self.feedback,
        })
    }

    /// Reads the checkpoint form; an unknown `Next` is an error (a checkpoint from a newer
    /// fuseraft), missing counters are 0.
    pub fn from_json(value: &Value) -> Result<Magentic, String> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let count = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_u64)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let next = text("Next").unwrap_or_default();
        let next = Step::parse(&next)
            .ok_or_else(|| format!("the checkpoint's magentic step `{next}` is unknown"))?;
        let retry = value.get("Retry").and_then(|retry| {
            let reply = retry.get("Reply")?.as_str()?;
            let correction = retry.get("Correction")?.as_str()?;
            Some((reply.to_string(), correction.to_string()))
        });
        Ok(Magentic {
            next,
            facts: text("Facts"),
            plan: text("Plan"),
            rounds: count("Rounds"),
            stalls: count("Stalls"),
            resets: count("Resets"),
            invalid: count("InvalidLedgers"),
            retry,
            feedback: text("Feedback"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_survives_its_checkpoint_form() {
        let ledger = Magentic {
            next: Step::ReplanPlan,
            facts: Some("facts".into()),
            plan: Some("plan".into()),
            rounds: 4,
            stalls: 1,
            resets: 1,
            invalid: 2,
            retry: Some(("oops".into(), "answer again".into())),
            feedback: Some("smaller steps".into()),
        };
        assert_eq!(Magentic::from_json(&ledger.to_json()), Ok(ledger));
        for step in Step::ALL {
            assert_eq!(Step::parse(step.as_str()), Some(step));
        }
    }

    #[test]
    fn an_unknown_step_is_refused() {
        let error = Magentic::from_json(&json!({"Next": "dance"})).unwrap_err();
        assert!(error.contains("`dance`"), "{error}");
    }
}
