//! The magentic manager's events as terminal lines: the plan (whole, as a block, so an
//! operator reviewing it has read it), each round's choice, stalls, replans, the review's
//! answer and the end of the loop.

use fuseraft_vm::event::{Event, EventKind};

use super::lines::{one_line, Paint};
use super::neutralise;

/// The most lines of a plan shown; a longer one ends with a count of the rest.
const PLAN_LINES: usize = 40;
/// The most characters of an instruction or an error shown on its line.
const DETAIL_CHARS: usize = 160;

/// A heading and the plan under it, each line behind a bar.
fn plan_block(heading: &str, plan: &str, paint: Paint) -> String {
    let mut out = paint.header(heading);
    let lines: Vec<&str> = plan.trim().lines().collect();
    for line in lines.iter().take(PLAN_LINES) {
        out.push_str(&format!("\n    │ {}", neutralise(line.trim_end())));
    }
    if lines.len() > PLAN_LINES {
        out.push_str(&format!(
            "\n    │ … {} more lines (in the events file)",
            lines.len() - PLAN_LINES
        ));
    }
    out
}

/// The line (or block) of a `magentic_*` event, or `None` for other events.
pub fn line(event: &Event, paint: Paint) -> Option<String> {
    let text = |value: &Option<String>| value.as_deref().unwrap_or("").to_string();
    let line = match &event.kind {
        EventKind::MagenticOrientation { facts, plan } => {
            let facts = format!(
                "  ◇ manager's facts: {}",
                one_line(&text(facts), DETAIL_CHARS)
            );
            let plan = plan_block("  ◇ manager's plan:", &text(plan), paint);
            format!("{}\n{plan}", paint.dim(&facts))
        }
        EventKind::MagenticPlanRevised { plan } => {
            plan_block("  ◇ revised plan:", &text(plan), paint)
        }
        EventKind::MagenticReplan { cycle, plan, .. } => plan_block(
            &format!("  ◇ new plan (replan {cycle}):"),
            &text(plan),
            paint,
        ),
        EventKind::MagenticLedger {
            round,
            satisfied: true,
            ..
        } => paint.good(&format!("  ◇ round {}: request satisfied", round + 1)),
        EventKind::MagenticLedger {
            round,
            next_speaker,
            instruction,
            stalls,
            ..
        } => {
            let stall = if *stalls > 0 {
                format!(" (no progress, stall {stalls})")
            } else {
                String::new()
            };
            format!(
                "  ◇ round {} → {}{stall}: {}",
                round + 1,
                neutralise(&text(next_speaker)),
                one_line(&text(instruction), DETAIL_CHARS)
            )
        }
        EventKind::MagenticLedgerInvalid {
            consecutive, error, ..
        } => paint.warn(&format!(
            "  ↺ manager's ledger unusable ({consecutive}×): {}",
            one_line(error, DETAIL_CHARS)
        )),
        EventKind::MagenticStalled { stalls, cycle } => paint.warn(&format!(
            "  ! the team stalled {stalls} times: the manager replans (replan {cycle})"
        )),
        EventKind::MagenticResetLimit { resets, .. } => paint.bad(&format!(
            "  ✗ still stalled after {resets} replans: the run stops"
        )),
        EventKind::MagenticPlanReview { answer, .. } => {
            let answer = match answer.as_str() {
                "approved" => "approved",
                "redirected" => "sent back for revision",
                _ => "refused",
            };
            paint.warn(&format!("  ◇ plan {answer} by the operator"))
        }
        EventKind::MagenticRoundLimit { rounds } => {
            paint.warn(&format!("  ! the manager used its {rounds} rounds"))
        }
        EventKind::MagenticComplete { rounds, .. } => paint.good(&format!(
            "  ✓ request satisfied after {rounds} rounds: the manager's final answer is the output"
        )),
        _ => return None,
    };
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(kind: EventKind) -> String {
        line(&Event::new(0, Some("manager"), kind), Paint { on: false }).unwrap()
    }

    fn ledger(round: u32, satisfied: bool, next: &str, instruction: &str) -> EventKind {
        EventKind::MagenticLedger {
            round,
            satisfied,
            in_loop: false,
            progress: false,
            next_speaker: Some(next.into()),
            reason: None,
            instruction: Some(instruction.into()),
            stalls: 1,
        }
    }

    #[test]
    fn the_loop_reads_as_short_lines() {
        let orientation = EventKind::MagenticOrientation {
            facts: Some("Given: a list\nLimits: none".into()),
            plan: Some("1. Researcher reads.\n2. Developer codes.".into()),
        };
        assert_eq!(
            shown(orientation),
            "  ◇ manager's facts: Given: a list ⏎ Limits: none\n  ◇ manager's plan:\n    │ 1. Researcher reads.\n    │ 2. Developer codes."
        );
        assert_eq!(
            shown(ledger(0, false, "Developer", "Add paging.")),
            "  ◇ round 1 → Developer (no progress, stall 1): Add paging."
        );
        assert_eq!(
            shown(ledger(2, true, "", "")),
            "  ◇ round 3: request satisfied"
        );
        let review = EventKind::MagenticPlanReview {
            answer: "redirected".into(),
            feedback_chars: Some(4),
        };
        assert_eq!(
            shown(review),
            "  ◇ plan sent back for revision by the operator"
        );
        let start = EventKind::TurnStart {
            state: "Dev".into(),
        };
        assert!(line(&Event::new(0, None, start), Paint { on: false }).is_none());
    }

    #[test]
    fn a_long_or_hostile_plan_is_cut_and_escaped() {
        let plan = (0..50)
            .map(|n| format!("step {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let block = shown(EventKind::MagenticReplan {
            cycle: 1,
            facts: None,
            plan: Some(plan),
        });
        assert_eq!(block.lines().count(), 1 + PLAN_LINES + 1);
        assert!(block.ends_with("… 10 more lines (in the events file)"));
        let hostile = shown(EventKind::MagenticPlanRevised {
            plan: Some("\x1b]0;pwned\x07".into()),
        });
        assert!(!hostile.contains('\x1b'), "{hostile}");
    }
}
