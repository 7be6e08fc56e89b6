//! What the magentic loop keeps between its steps (`Run::magentic`), and its checkpoint form
//! (`Machine.Magentic`, `checkpoint::records::MagenticRecord`).

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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_reads_back_from_its_name() {
        for step in Step::ALL {
            assert_eq!(Step::parse(step.as_str()), Some(step));
        }
        assert_eq!(Step::parse("dance"), None);
    }
}
