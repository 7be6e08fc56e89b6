//! The `Compaction` section, read from the program's settings (and its resolved model) as
//! typed values.

use super::{Model, Program};

/// `Compaction: {TriggerTurnCount, KeepRecentTurns, Model, PinLastRoutingSignal,
/// MaxCharsPerHistoryMessage}`: once the messages a request carries hold this many
/// assistant turns, the older ones are replaced in requests by a model-written summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// Compact once the compacted view holds this many assistant messages (upstream: 50).
    pub trigger_turn_count: u32,
    /// The newest messages kept verbatim after a compaction (upstream: 10, at least 1).
    pub keep_recent: u32,
    /// The summarising model; `None` uses the model of the agent about to run.
    pub model: Option<Model>,
    /// Repeat the last `handoff` keyword after the summary when the kept messages lost it.
    pub pin_last_routing_signal: bool,
    /// The most characters of one message the summariser is shown (upstream: 8000).
    pub max_chars_per_message: usize,
}

/// The default of `Compaction.TriggerTurnCount`.
pub const DEFAULT_TRIGGER_TURN_COUNT: u32 = 50;
/// The default of `Compaction.KeepRecentTurns`.
pub const DEFAULT_KEEP_RECENT: u32 = 10;
/// The default of `Compaction.MaxCharsPerHistoryMessage`.
pub const DEFAULT_MAX_CHARS_PER_MESSAGE: usize = 8000;

impl Program {
    /// The compaction policy, when the config has a `Compaction` section.
    pub fn compaction(&self) -> Option<Compaction> {
        let in_section = |key: &str| {
            key.get(..11)
                .is_some_and(|head| head.eq_ignore_ascii_case("Compaction."))
        };
        if !self.settings.iter().any(|(key, _)| in_section(key)) && self.compaction_model.is_none()
        {
            return None;
        }
        let setting = |name: &str| {
            self.settings
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(&format!("Compaction.{name}")))
                .map(|(_, value)| value.trim())
        };
        let number = |name: &str, default: u64| {
            setting(name)
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or(default)
        };
        Some(Compaction {
            trigger_turn_count: number("TriggerTurnCount", DEFAULT_TRIGGER_TURN_COUNT.into())
                .clamp(1, u32::MAX.into()) as u32,
            keep_recent: number("KeepRecentTurns", DEFAULT_KEEP_RECENT.into())
                .clamp(1, u32::MAX.into()) as u32,
            model: self.compaction_model.clone(),
            pin_last_routing_signal: setting("PinLastRoutingSignal")
                .is_none_or(|value| !value.eq_ignore_ascii_case("false")),
            max_chars_per_message: number(
                "MaxCharsPerHistoryMessage",
                DEFAULT_MAX_CHARS_PER_MESSAGE as u64,
            )
            .clamp(200, 1 << 20) as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::print::samples;
    use super::*;

    fn with_settings(settings: &[(&str, &str)]) -> Program {
        let mut program = samples::team();
        program.settings = settings
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        program
    }

    #[test]
    fn absent_without_a_section_and_upstream_defaults_with_one() {
        assert_eq!(with_settings(&[]).compaction(), None);
        let compaction = with_settings(&[("Compaction.Mode", "llm")])
            .compaction()
            .expect("a section");
        assert_eq!(compaction.trigger_turn_count, 50);
        assert_eq!(compaction.keep_recent, 10);
        assert!(compaction.pin_last_routing_signal);
        assert_eq!(compaction.max_chars_per_message, 8000);
    }

    #[test]
    fn written_values_win_and_bad_ones_fall_back_or_clamp() {
        let compaction = with_settings(&[
            ("Compaction.TriggerTurnCount", "6"),
            ("Compaction.KeepRecentTurns", "0"),
            ("Compaction.PinLastRoutingSignal", "False"),
            ("Compaction.MaxCharsPerHistoryMessage", "many"),
        ])
        .compaction()
        .expect("a section");
        assert_eq!(compaction.trigger_turn_count, 6);
        assert_eq!(compaction.keep_recent, 1, "at least one message is kept");
        assert!(!compaction.pin_last_routing_signal);
        assert_eq!(compaction.max_chars_per_message, 8000);
    }
}
