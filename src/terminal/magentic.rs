//! The magentic manager's events as terminal lines: the plan (whole, as a block, so an
//! operator reviewing it has read it), each round's choice, stalls, replans, the review's
//! answer and the end of the loop.

use fuseraft_vm::event::Event;
use serde_json::Value as Json;

use super::lines::{one_line, Paint};
use super::neutralise;

/// The most lines of a plan shown; a longer one ends with a count of the rest.
const PLAN_LINES: usize = 40;
/// The most characters of an instruction or an error shown on its line.
const DETAIL_CHARS: usize = 160;

fn text<'a>(payload: &'a Json, key: &str) -> &'a str {
    payload.get(key).and_then(Json::as_str).unwrap_or("")
}

fn number(payload: &Json, key: &str) -> u64 {
    payload.get(key).and_then(Json::as_u64).unwrap_or(0)
}

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
    let payload = &event.payload;
    let line = match event.event_type {
        "magentic_orientation" => {
            let facts = format!(
                "  ◇ manager's facts: {}",
                one_line(text(payload, "facts"), DETAIL_CHARS)
            );
            let plan = plan_block("  ◇ manager's plan:", text(payload, "plan"), paint);
            format!("{}\n{plan}", paint.dim(&facts))
        }
        "magentic_plan_revised" => plan_block("  ◇ revised plan:", text(payload, "plan"), paint),
        "magentic_replan" => plan_block(
            &format!("  ◇ new plan (replan {}):", number(payload, "cycle")),
            text(payload, "plan"),
            paint,
        ),
        "magentic_ledger" if payload.get("satisfied") == Some(&Json::Bool(true)) => {
            paint.good(&format!(
                "  ◇ round {}: request satisfied",
                number(payload, "round") + 1
            ))
        }
        "magentic_ledger" => {
            let stalled = number(payload, "stalls");
            let stall = if stalled > 0 {
                format!(" (no progress, stall {stalled})")
            } else {
                String::new()
            };
            format!(
                "  ◇ round {} → {}{stall}: {}",
                number(payload, "round") + 1,
                neutralise(text(payload, "next_speaker")),
                one_line(text(payload, "instruction"), DETAIL_CHARS)
            )
        }
        "magentic_ledger_invalid" => paint.warn(&format!(
            "  ↺ manager's ledger unusable ({}×): {}",
            number(payload, "consecutive"),
            one_line(text(payload, "error"), DETAIL_CHARS)
        )),
        "magentic_stalled" => paint.warn(&format!(
            "  ! the team stalled {} times: the manager replans (replan {})",
            number(payload, "stalls"),
            number(payload, "cycle")
        )),
        "magentic_reset_limit" => paint.bad(&format!(
            "  ✗ still stalled after {} replans: the run stops",
            number(payload, "resets")
        )),
        "magentic_plan_review" => {
            let answer = match text(payload, "answer") {
                "approved" => "approved",
                "redirected" => "sent back for revision",
                _ => "refused",
            };
            paint.warn(&format!("  ◇ plan {answer} by the operator"))
        }
        "magentic_round_limit" => paint.warn(&format!(
            "  ! the manager used its {} rounds",
            number(payload, "rounds")
        )),
        "magentic_complete" => paint.good(&format!(
            "  ✓ request satisfied after {} rounds: the manager's final answer is the output",
            number(payload, "rounds")
        )),
        _ => return None,
    };
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(kind: &'static str, payload: Json) -> String {
        line(
            &Event::new(0, Some("manager"), kind, payload),
            Paint { on: false },
        )
        .unwrap()
    }

    #[test]
    fn the_loop_reads_as_short_lines() {
        assert_eq!(
            shown(
                "magentic_orientation",
                json!({"facts": "Given: a list\nLimits: none", "plan": "1. Researcher reads.\n2. Developer codes."})
            ),
            "  ◇ manager's facts: Given: a list ⏎ Limits: none\n  ◇ manager's plan:\n    │ 1. Researcher reads.\n    │ 2. Developer codes."
        );
        assert_eq!(
            shown(
                "magentic_ledger",
                json!({"round": 0, "satisfied": false, "next_speaker": "Developer", "instruction": "Add paging.", "stalls": 1})
            ),
            "  ◇ round 1 → Developer (no progress, stall 1): Add paging."
        );
        assert_eq!(
            shown("magentic_ledger", json!({"round": 2, "satisfied": true})),
            "  ◇ round 3: request satisfied"
        );
        assert_eq!(
            shown("magentic_plan_review", json!({"answer": "redirected"})),
            "  ◇ plan sent back for revision by the operator"
        );
        assert!(line(
            &Event::new(0, None, "turn_start", json!({})),
            Paint { on: false }
        )
        .is_none());
    }

    #[test]
    fn a_long_or_hostile_plan_is_cut_and_escaped() {
        let plan = (0..50)
            .map(|n| format!("step {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let block = shown("magentic_replan", json!({"cycle": 1, "plan": plan}));
        assert_eq!(block.lines().count(), 1 + PLAN_LINES + 1);
        assert!(block.ends_with("… 10 more lines (in the events file)"));
        let hostile = shown("magentic_plan_revised", json!({"plan": "\x1b]0;pwned\x07"}));
        assert!(!hostile.contains('\x1b'), "{hostile}");
    }
}
