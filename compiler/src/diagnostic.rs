//! The one diagnostic type every stage emits, and the table of stable codes.
//!
//! Codes are never reused. Groups: `FR0xx` schema and loading, `FR1xx` references,
//! `FR2xx` graph shape, `FR3xx` routing and matching, `FR4xx` termination and budgets,
//! `FR5xx` patterns, `FR6xx` contracts and validators, `FR9xx` meta.
//! Constructors for each diagnostic live next to the code that emits it.

use crate::source::Span;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Advice,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Advice => "advice",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $code:literal, $name:literal;)*) => {
        /// A stable diagnostic code.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as users write it, e.g. `FR001`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The kebab-case name of the problem, e.g. `unknown-key`.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            pub fn parse(text: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|code| code.as_str().eq_ignore_ascii_case(text) || code.name() == text)
            }
        }
    };
}

codes! {
    UnknownKey = "FR001", "unknown-key";
    MissingRequiredKey = "FR002", "missing-required-key";
    DuplicateName = "FR003", "duplicate-name";
    InvalidValue = "FR004", "invalid-value";
    IgnoredSection = "FR005", "ignored-section";
    IncompatibleSettings = "FR006", "incompatible-settings";
    InertKey = "FR007", "inert-key";
    SyntaxError = "FR010", "syntax-error";
    ResourceLimit = "FR011", "resource-limit";
    MissingRoot = "FR012", "missing-root";
    MissingFile = "FR013", "missing-file";
    UnsupportedFeature = "FR014", "unsupported-feature";
    McpServerStarts = "FR015", "mcp-server-starts";
    UnknownAgent = "FR101", "unknown-agent";
    UnknownState = "FR102", "unknown-state";
    UnknownInitial = "FR103", "unknown-initial";
    UnknownContract = "FR104", "unknown-contract";
    UnknownModelAlias = "FR105", "unknown-model-alias";
    UnusedDefinition = "FR106", "unused-definition";
    RecursiveAgent = "FR107", "recursive-agent";
    UnreachableState = "FR201", "unreachable-state";
    NoPathToTerminal = "FR202", "no-path-to-terminal";
    NoTerminal = "FR203", "no-terminal";
    DeadEndState = "FR204", "dead-end-state";
    TerminalHasTransitions = "FR205", "terminal-has-transitions";
    CycleWithoutExit = "FR206", "cycle-without-exit";
    DuplicateRoute = "FR301", "duplicate-route";
    ShadowedKeyword = "FR302", "shadowed-keyword";
    CatchAllNotLast = "FR303", "catch-all-not-last";
    UnconditionalExitShadows = "FR304", "unconditional-exit-shadows";
    InvalidRegex = "FR305", "invalid-regex";
    PatternAlwaysMatches = "FR306", "pattern-always-matches";
    SignalNotInstructed = "FR307", "signal-not-instructed";
    KeywordNeverMatches = "FR308", "keyword-never-matches";
    ConditionSyntax = "FR310", "condition-syntax";
    ConditionAlwaysFalse = "FR311", "condition-always-false";
    TerminationIgnored = "FR401", "termination-ignored";
    TerminationCannotFire = "FR402", "termination-cannot-fire";
    BudgetTooSmall = "FR403", "budget-too-small";
    NonPositiveBound = "FR404", "non-positive-bound";
    UnpricedModel = "FR405", "unpriced-model";
    AdversarialSelfCritique = "FR501", "adversarial-self-critique";
    InvalidFanOut = "FR502", "invalid-fan-out";
    DegenerateFanOut = "FR503", "degenerate-fan-out";
    ValidatorMissingConfig = "FR601", "validator-missing-config";
    ContractUnsatisfiable = "FR602", "contract-unsatisfiable";
    UnknownValidator = "FR603", "unknown-validator";
    UnknownPredicate = "FR604", "unknown-predicate";
    ValidatorUnsatisfiable = "FR605", "validator-unsatisfiable";
    UnusedSuppression = "FR901", "unused-suppression";
    SuppressionMissingReason = "FR902", "suppression-missing-reason";
    UnknownSuppressionCode = "FR903", "unknown-code";
}

/// A labelled span inside a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
    pub primary: bool,
}

/// One finding: what went wrong, where, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Lowercase, no trailing period, identifiers in backticks.
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    /// Consequences attached to their cause (e.g. states made unreachable by an unknown target).
    pub related: Vec<Diagnostic>,
}

impl Diagnostic {
    pub fn new(code: Code, severity: Severity, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity,
            message: message.into(),
            labels: Vec::new(),
            help: None,
            related: Vec::new(),
        }
    }

    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, Severity::Error, message)
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, Severity::Warning, message)
    }

    pub fn advice(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(code, Severity::Advice, message)
    }

    /// Adds the primary label (the first call) or a secondary one (later calls).
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        let primary = self.labels.is_empty();
        self.labels.push(Label {
            span,
            message: message.into(),
            primary,
        });
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_related(mut self, related: Diagnostic) -> Diagnostic {
        self.related.push(related);
        self
    }

    /// The primary span, if the diagnostic has one.
    pub fn span(&self) -> Option<Span> {
        self.labels
            .iter()
            .find(|label| label.primary)
            .or(self.labels.first())
            .map(|label| label.span)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// `did you mean `x`?` for the closest candidate within a small edit distance, if any.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let distance = edit_distance(&lower, &candidate.to_lowercase());
        let limit = (name.chars().count().max(3) / 3).max(1);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| format!("did you mean `{candidate}`?"))
}

/// A short "known: a, b, c" list (at most 8 names, then "and N more").
pub fn known_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        return "none are defined".to_string();
    }
    let shown: Vec<String> = names
        .iter()
        .take(8)
        .map(|name| format!("`{name}`"))
        .collect();
    let mut text = format!("known: {}", shown.join(", "));
    if names.len() > 8 {
        text.push_str(&format!(" and {} more", names.len() - 8));
    }
    text
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
