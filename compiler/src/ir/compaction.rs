//! The `Compaction` section, read from the program's settings (and its resolved model) as
//! typed values.

use super::{Model, Program};

/// `Compaction: {Mode, TriggerTurnCount, KeepRecentTurns, Model, PinLastRoutingSignal,
/// MaxCharsPerHistoryMessage, TokenBudget, AntiThrash*}`: once the messages a request
/// carries hold this many assistant turns (or, in `window` mode, this many estimated
/// tokens), the older ones are replaced in requests by a summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// How the summary is made.
    pub mode: CompactionMode,
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
    /// `window` mode: the estimated tokens (characters / 4) the verbatim history may hold
    /// (upstream: 80000).
    pub token_budget: u64,
    /// `AntiThrashMinSavingsRatio`: a compaction saving less than this share of the
    /// request's messages counts as thrashing (upstream: 0.10; 0 = off).
    pub anti_thrash_min_savings: f64,
    /// `AntiThrashWindow`: after this many thrashing compactions in a row, compaction by
    /// turn count stops (upstream: 10; 0 = off).
    pub anti_thrash_window: u32,
}

/// `Compaction.Mode`: how the older history is replaced. An unknown name is refused by the
/// lowering (`FR004`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompactionMode {
    /// A model call writes the summary (upstream's default).
    Llm,
    /// A summary built with no model call from the run's state and change log.
    Lossless,
    /// The `lossless` reconstruction followed by a model-written summary.
    Hybrid,
    /// No summary: the oldest messages leave requests until they fit `TokenBudget`.
    Window,
    /// A list of the compacted turns' operations (each tool call, applied or failed) with
    /// no model call: upstream reads its intent log, fuseraft the calls the history keeps.
    Intent,
}

impl CompactionMode {
    pub const ALL: &'static [CompactionMode] = &[
        CompactionMode::Llm,
        CompactionMode::Lossless,
        CompactionMode::Hybrid,
        CompactionMode::Window,
        CompactionMode::Intent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CompactionMode::Llm => "llm",
            CompactionMode::Lossless => "lossless",
            CompactionMode::Hybrid => "hybrid",
            CompactionMode::Window => "window",
            CompactionMode::Intent => "intent",
        }
    }

    /// The mode a written name stands for (ASCII case-insensitive).
    pub fn parse(name: &str) -> Option<CompactionMode> {
        CompactionMode::ALL
            .iter()
            .copied()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

/// The default of `Compaction.TriggerTurnCount`.
pub const DEFAULT_TRIGGER_TURN_COUNT: u32 = 50;
/// The default of `Compaction.KeepRecentTurns`.
pub const DEFAULT_KEEP_RECENT: u32 = 10;
/// The default of `Compaction.MaxCharsPerHistoryMessage`.
pub const DEFAULT_MAX_CHARS_PER_MESSAGE: usize = 8000;
/// The default of `Compaction.TokenBudget`.
pub const DEFAULT_TOKEN_BUDGET: u64 = 80_000;
/// The default of `Compaction.AntiThrashMinSavingsRatio`.
pub const DEFAULT_ANTI_THRASH_MIN_SAVINGS: f64 = 0.10;
/// The default of `Compaction.AntiThrashWindow`.
pub const DEFAULT_ANTI_THRASH_WINDOW: u32 = 10;

/// The compaction policy, when the config has a `Compaction` section (or names a model).
pub(super) fn read(program: &Program) -> Option<Compaction> {
    let in_section = |key: &str| {
        key.get(..11)
            .is_some_and(|head| head.eq_ignore_ascii_case("Compaction."))
    };
    if !program.settings.iter().any(|(key, _)| in_section(key))
        && program.compaction_model.is_none()
    {
        return None;
    }
    let setting = |name: &str| super::verifier::setting(program, &format!("Compaction.{name}"));
    let number = |name: &str, default: u64| {
        setting(name)
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let ratio = setting("AntiThrashMinSavingsRatio")
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|ratio| (0.0..=1.0).contains(ratio))
        .unwrap_or(DEFAULT_ANTI_THRASH_MIN_SAVINGS);
    Some(Compaction {
        mode: setting("Mode")
            .and_then(CompactionMode::parse)
            .unwrap_or(CompactionMode::Llm),
        trigger_turn_count: number("TriggerTurnCount", DEFAULT_TRIGGER_TURN_COUNT.into())
            .clamp(1, u32::MAX.into()) as u32,
        keep_recent: number("KeepRecentTurns", DEFAULT_KEEP_RECENT.into()).clamp(1, u32::MAX.into())
            as u32,
        model: program.compaction_model.clone(),
        pin_last_routing_signal: setting("PinLastRoutingSignal")
            .and_then(super::settings::flag)
            .unwrap_or(true),
        max_chars_per_message: number(
            "MaxCharsPerHistoryMessage",
            DEFAULT_MAX_CHARS_PER_MESSAGE as u64,
        )
        .clamp(200, 1 << 20) as usize,
        token_budget: number("TokenBudget", DEFAULT_TOKEN_BUDGET).max(1),
        anti_thrash_min_savings: ratio,
        anti_thrash_window: number("AntiThrashWindow", DEFAULT_ANTI_THRASH_WINDOW.into()).min(1000)
            as u32,
    })
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
        program.settle_settings();
        program
    }

    #[test]
    fn absent_without_a_section_and_upstream_defaults_with_one() {
        assert_eq!(with_settings(&[]).compaction, None);
        let compaction = with_settings(&[("Compaction.Mode", "llm")])
            .compaction
            .expect("a section");
        assert_eq!(compaction.trigger_turn_count, 50);
        assert_eq!(compaction.keep_recent, 10);
        assert!(compaction.pin_last_routing_signal);
        assert_eq!(compaction.max_chars_per_message, 8000);
        assert_eq!(compaction.mode, CompactionMode::Llm);
        assert_eq!(compaction.token_budget, 80_000);
        assert_eq!(compaction.anti_thrash_min_savings, 0.10);
        assert_eq!(compaction.anti_thrash_window, 10);
    }

    #[test]
    fn modes_and_window_settings_are_read() {
        let compaction = with_settings(&[
            ("Compaction.Mode", "Lossless"),
            ("Compaction.TokenBudget", "1200"),
            ("Compaction.AntiThrashMinSavingsRatio", "0.25"),
            ("Compaction.AntiThrashWindow", "3"),
        ])
        .compaction
        .expect("a section");
        assert_eq!(compaction.mode, CompactionMode::Lossless);
        assert_eq!(compaction.token_budget, 1200);
        assert_eq!(compaction.anti_thrash_min_savings, 0.25);
        assert_eq!(compaction.anti_thrash_window, 3);
        for mode in CompactionMode::ALL {
            assert_eq!(CompactionMode::parse(mode.as_str()), Some(*mode));
        }
        assert_eq!(CompactionMode::parse("losless"), None);
    }

    #[test]
    fn written_values_win_and_bad_ones_fall_back_or_clamp() {
        let compaction = with_settings(&[
            ("Compaction.TriggerTurnCount", "6"),
            ("Compaction.KeepRecentTurns", "0"),
            ("Compaction.PinLastRoutingSignal", "False"),
            ("Compaction.MaxCharsPerHistoryMessage", "many"),
        ])
        .compaction
        .expect("a section");
        assert_eq!(compaction.trigger_turn_count, 6);
        assert_eq!(compaction.keep_recent, 1, "at least one message is kept");
        assert!(!compaction.pin_last_routing_signal);
        assert_eq!(compaction.max_chars_per_message, 8000);
    }
}
