//! The optional parts of a checkpoint's `Machine` to and from their records: what model
//! calls cost (`Spend`), the fork under way (`Fork`), the compaction summary in force
//! (`Compaction`) and the magentic manager's ledger (`Magentic`), each checked against the
//! program or the history on the way in.

use fuseraft_compiler::ir::Program;

use super::records::{
    BranchRecord, CompactionRecord, ForkRecord, MagenticRecord, RetryRecord, RoleRecord,
    SpendRecord, SummaryRecord,
};
use super::{tool_call_of, tool_call_record, usage_of, usage_record};
use crate::history::Spend;
use crate::machine::{BranchDone, Compacted, Magentic};

pub(super) fn spend_record(spend: Spend) -> Option<SpendRecord> {
    (spend != Spend::default()).then_some(SpendRecord {
        usd: spend.usd,
        unpriced: spend.unpriced,
    })
}

/// A stored spend is untrusted: a negative or non-finite cost counts as nothing.
pub(super) fn spend_of(record: Option<SpendRecord>) -> Spend {
    let mut known = Spend::default();
    if let Some(record) = record {
        known.add(Spend {
            usd: record.usd,
            unpriced: record.unpriced,
        });
    }
    known
}

pub(super) fn branch_record(branch: &BranchDone) -> BranchRecord<'_> {
    BranchRecord {
        state: (&branch.state).into(),
        agent_name: (&branch.agent).into(),
        content: (&branch.text).into(),
        usage: usage_record(&branch.usage),
        tool_calls: branch.tool_calls.iter().map(tool_call_record).collect(),
        error: branch.error.as_deref().map(Into::into),
        spend: spend_record(branch.spend),
    }
}

pub(super) fn compaction_record(compacted: &Compacted) -> CompactionRecord<'_> {
    CompactionRecord {
        summary: SummaryRecord {
            agent_name: "system".into(),
            role: RoleRecord::User,
            content: (&compacted.summary).into(),
            turn_index: compacted.turn,
            is_compaction_summary: true,
        },
        through: compacted.through as u64,
        count: compacted.count,
        made_at_turn: compacted.made_at,
        recent_savings: compacted.savings.clone(),
    }
}

pub(super) fn magentic_record(magentic: &Magentic) -> MagenticRecord<'_> {
    MagenticRecord {
        next: magentic.next.as_str().into(),
        facts: magentic.facts.as_deref().map(Into::into),
        plan: magentic.plan.as_deref().map(Into::into),
        rounds: magentic.rounds,
        stalls: magentic.stalls,
        resets: magentic.resets,
        invalid_ledgers: magentic.invalid,
        retry: magentic
            .retry
            .as_ref()
            .map(|(reply, correction)| RetryRecord {
                reply: reply.into(),
                correction: correction.into(),
            }),
        feedback: magentic.feedback.as_deref().map(Into::into),
    }
}

pub(super) fn fork_of(program: &Program, fork: ForkRecord<'_>) -> Result<Vec<BranchDone>, String> {
    fork.done
        .into_iter()
        .map(|branch| {
            // A `mapreduce` run is named after its state: `Mapper #2`.
            let base = crate::machine::branch_state_name(&branch.state);
            if program.state_named(&branch.state).is_none() && program.state_named(base).is_none() {
                return Err(format!(
                    "the checkpoint's fork has a branch `{}` the program no longer has",
                    branch.state
                ));
            }
            Ok(BranchDone {
                state: branch.state.into_owned(),
                agent: branch.agent_name.into_owned(),
                text: branch.content.into_owned(),
                tool_calls: branch.tool_calls.into_iter().map(tool_call_of).collect(),
                usage: usage_of(branch.usage),
                spend: spend_of(branch.spend),
                error: branch.error.map(|error| error.into_owned()),
            })
        })
        .collect()
}

pub(super) fn compacted_of(
    record: CompactionRecord<'_>,
    history: usize,
) -> Result<Compacted, String> {
    let through = usize::try_from(record.through).unwrap_or(usize::MAX);
    if through < 1 || through > history {
        return Err(format!(
            "`Machine.Compaction.Through` ({through}) is outside the {history} stored messages"
        ));
    }
    Ok(Compacted {
        summary: record.summary.content.into_owned(),
        through,
        count: record.count,
        turn: record.summary.turn_index,
        made_at: record.made_at_turn,
        savings: record
            .recent_savings
            .into_iter()
            .map(|points| points.min(10_000))
            .take(1000)
            .collect(),
    })
}

/// An unknown `Next` is an error (a checkpoint from a newer fuseraft).
pub(super) fn magentic_of(record: MagenticRecord<'_>) -> Result<Magentic, String> {
    let next = crate::machine::MagenticStep::parse(&record.next).ok_or_else(|| {
        format!(
            "the checkpoint's magentic step `{}` is unknown",
            record.next
        )
    })?;
    let owned = |text: Option<std::borrow::Cow<'_, str>>| text.map(|text| text.into_owned());
    Ok(Magentic {
        next,
        facts: owned(record.facts),
        plan: owned(record.plan),
        rounds: record.rounds,
        stalls: record.stalls,
        resets: record.resets,
        invalid: record.invalid_ledgers,
        retry: record
            .retry
            .map(|retry| (retry.reply.into_owned(), retry.correction.into_owned())),
        feedback: owned(record.feedback),
    })
}
