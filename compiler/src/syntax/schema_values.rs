//! The value rules of `fuseraft schema`: each closed set the lowering accepts (selection
//! and termination types, validators, plugins, permission categories and actions, ...)
//! read from the registry the lowering reads, written as an `enum` of canonical spellings
//! for editors and a pattern folding case and separators as the parser does; the keys each
//! section requires (`required`, with `if`/`then` where the requirement depends on a
//! `Type`); the paths that lexically leave the project; the settings sections' typed keys.

use serde_json::{json, Map, Value};

use super::config_paths::PATH_SETTINGS;
use super::fuseraft as config;
use crate::ir::{
    Action, Category, CompactionMode, FailureAction, Merge, Plugin, PredicateType, Preset,
    SandboxMode, SelectionKind, Tool, Validator,
};

/// How a parser folds a written value before comparing it with its table.
#[derive(Copy, Clone)]
pub(crate) enum Fold {
    /// Surrounding blanks dropped, ASCII case ignored.
    Case,
    /// As written but for ASCII case (`Validator::parse`, `Isolation`).
    CaseUntrimmed,
    /// `Case`, and `-` and `_` interchangeable (`Security.Permissions`).
    CaseDash,
    /// `Case`, and underscores anywhere ignored (`FailureHandling` actions).
    CaseNoUnderscore,
}

/// A closed set of values: its names (from the registry) and how they are compared.
pub(crate) struct Closed {
    pub names: fn() -> Vec<&'static str>,
    pub fold: Fold,
}

pub(crate) static SELECTION_TYPES: Closed = Closed {
    names: || {
        SelectionKind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .collect()
    },
    fold: Fold::Case,
};
pub(crate) static TERMINATION_TYPES: Closed = Closed {
    names: || config::TERMINATION_TYPES.to_vec(),
    fold: Fold::Case,
};
pub(crate) static VALIDATORS: Closed = Closed {
    names: || {
        Validator::ALL
            .iter()
            .map(|validator| validator.name())
            .collect()
    },
    fold: Fold::CaseUntrimmed,
};
pub(crate) static PREDICATE_TYPES: Closed = Closed {
    names: || PredicateType::ALL.iter().map(|kind| kind.name()).collect(),
    fold: Fold::CaseUntrimmed,
};
pub(crate) static FUNCTION_CHOICES: Closed = Closed {
    names: || config::FUNCTION_CHOICES.to_vec(),
    fold: Fold::Case,
};
pub(crate) static ISOLATIONS: Closed = Closed {
    names: || config::ISOLATIONS.to_vec(),
    fold: Fold::CaseUntrimmed,
};
pub(crate) static MERGES: Closed = Closed {
    // `benchmark` is upstream's older name of `union`.
    names: || {
        let mut names: Vec<&str> = Merge::ALL.iter().map(|merge| merge.as_str()).collect();
        names.push("benchmark");
        names
    },
    fold: Fold::Case,
};
pub(crate) static FAILURE_ACTIONS: Closed = Closed {
    names: || {
        FailureAction::ALL
            .iter()
            .map(|action| action.as_str())
            .collect()
    },
    fold: Fold::CaseNoUnderscore,
};
pub(crate) static PLUGINS: Closed = Closed {
    names: || Plugin::ALL.iter().map(|plugin| plugin.as_str()).collect(),
    fold: Fold::Case,
};
pub(crate) static TRANSPORTS: Closed = Closed {
    names: || super::mcp::TRANSPORTS.to_vec(),
    fold: Fold::Case,
};
pub(crate) static HTTP_MODES: Closed = Closed {
    names: || super::mcp::HTTP_MODES.to_vec(),
    fold: Fold::Case,
};
static COMPACTION_MODES: Closed = Closed {
    names: || {
        CompactionMode::ALL
            .iter()
            .map(|mode| mode.as_str())
            .collect()
    },
    fold: Fold::Case,
};
static SANDBOX_MODES: Closed = Closed {
    names: || SandboxMode::ALL.iter().map(|mode| mode.as_str()).collect(),
    fold: Fold::Case,
};
static PRESETS: Closed = Closed {
    names: || Preset::ALL.iter().map(|preset| preset.as_str()).collect(),
    fold: Fold::CaseDash,
};
static ACTIONS: Closed = Closed {
    // `Action::parse` also takes these synonyms.
    names: || {
        let mut names: Vec<&str> = Action::ALL.iter().map(|action| action.as_str()).collect();
        names.extend(["deny", "approval", "ask"]);
        names
    },
    fold: Fold::CaseDash,
};
static CATEGORIES: Closed = Closed {
    names: || {
        Category::ALL
            .iter()
            .map(|category| category.key())
            .collect()
    },
    fold: Fold::CaseDash,
};

/// An anchored pattern matching every spelling of `set` its parser accepts.
pub(crate) fn pattern(set: &Closed) -> String {
    let alternatives: Vec<String> = (set.names)()
        .iter()
        .map(|name| match set.fold {
            Fold::CaseNoUnderscore => name
                .chars()
                .filter(|c| *c != '_')
                .map(|c| format!("{}_*", folded_char(c)))
                .collect(),
            Fold::CaseDash => name
                .chars()
                .map(|c| match c {
                    '-' | '_' => "[-_]".to_string(),
                    c => folded_char(c),
                })
                .collect(),
            Fold::Case | Fold::CaseUntrimmed => folded(name),
        })
        .collect();
    let (blank, lead) = match set.fold {
        Fold::CaseUntrimmed => ("", ""),
        Fold::CaseNoUnderscore => ("\\s*", "_*"),
        Fold::Case | Fold::CaseDash => ("\\s*", ""),
    };
    format!("^{blank}{lead}(?:{}){blank}$", alternatives.join("|"))
}

/// A value of `set`: one of its names (completion in editors) or any spelling the parser
/// folds to one; left empty (`null`), it is absent.
pub(crate) fn one_of(set: &Closed) -> Value {
    json!({
        "anyOf": [
            { "enum": (set.names)() },
            { "type": ["string", "null"], "pattern": pattern(set) },
        ],
    })
}

/// A path the config hands fuseraft: written relative to the work dir, so an absolute one or
/// one that starts by climbing out (`..`) is refused, as `check` refuses it (FR004).
pub(crate) fn path() -> Value {
    json!({
        "type": ["string", "number", "boolean", "null"],
        "not": { "type": "string", "pattern": LEAVES },
    })
}

/// A path fuseraft itself writes (`Chatroom.Path`, `ChangeTracking.Path`): besides
/// [`path`]'s rule, never in git's metadata nor fuseraft's own state (the change log keeps
/// `.fuseraft/state/` as its own), as `check` refuses them (FR004; `check` also follows `..`).
pub(crate) fn written_path(chatroom: bool) -> Value {
    let git = "(^|/)\\.[Gg][Ii][Tt](/|$)";
    let own = if chatroom {
        "[Ss][Ee][Ss][Ss][Ii][Oo][Nn][Ss]|[Ss][Tt][Aa][Tt][Ee]|[Cc][Hh][Ee][Cc][Kk][Pp][Oo][Ii][Nn][Tt][Ss]|[Mm][Ee][Mm][Oo][Rr][Yy]"
    } else {
        "[Ss][Ee][Ss][Ss][Ii][Oo][Nn][Ss]|[Cc][Hh][Ee][Cc][Kk][Pp][Oo][Ii][Nn][Tt][Ss]|[Mm][Ee][Mm][Oo][Rr][Yy]"
    };
    let state = format!("^\\s*(\\./)*\\.[Ff][Uu][Ss][Ee][Rr][Aa][Ff][Tt]/({own})(/|$)");
    json!({
        "type": ["string", "number", "boolean", "null"],
        "not": {
            "type": "string",
            "anyOf": [{ "pattern": LEAVES }, { "pattern": git }, { "pattern": state }],
        },
    })
}

/// A path that lexically leaves where it starts: absolute, or `..` before any name.
const LEAVES: &str = "^\\s*(\\./)*(/|\\.\\.(/|$))";

/// A context source (`file:PATH`, `session_context`, ...): a `file:` path stays inside.
pub(crate) fn context_source() -> Value {
    json!({
        "type": ["string", "number", "boolean", "null"],
        "not": {
            "type": "string",
            "pattern": format!("^\\s*[Ff][Ii][Ll][Ee]\\s*:{}", &LEAVES[1..]),
        },
    })
}

/// A share written as a decimal in 0.0–1.0.
pub(crate) fn fraction() -> Value {
    json!({
        "type": ["number", "string", "null"],
        "minimum": 0,
        "maximum": 1,
        "pattern": "^\\s*\\+?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$",
    })
}

/// `Capabilities`: each plugin fuseraft runs takes only its own tags. A name of no plugin
/// fuseraft runs is left open (upstream's plugins narrow nothing here).
pub(crate) fn capabilities() -> Value {
    let mut patterns = Map::new();
    for plugin in Plugin::ALL {
        let tags: Vec<&'static str> = plugin
            .capabilities()
            .iter()
            .map(|tag| tag.as_str())
            .collect();
        patterns.insert(
            single_pattern(plugin.as_str()),
            json!({ "type": ["array", "null"], "items": own_set(tags) }),
        );
    }
    json!({ "type": ["object", "null"], "patternProperties": patterns })
}

/// `ToolResultCharOverrides`: tool names (or `Plugin.tool`), each to a whole number.
pub(crate) fn tool_overrides() -> Value {
    let tools: Vec<String> = Tool::ALL
        .iter()
        .map(|tool| {
            let plugin = folded(tool.plugin().as_str());
            format!("(?:{plugin}[-_.])?{}", folded(tool.name()))
        })
        .collect();
    json!({
        "type": ["object", "null"],
        "propertyNames": { "pattern": format!("^(?:{})$", tools.join("|")) },
    })
}

/// An MCP server's `Name`: the characters a model API accepts in a tool name
/// (`McpServer::is_valid_name`), as its tools are offered as `<server>-<tool>`.
pub(crate) fn mcp_server_name() -> Value {
    json!({ "type": ["string", "number"], "pattern": "^[A-Za-z0-9_-]+$" })
}

/// An `http` or `https` URL with a host, or one taken whole from the environment (`${VAR}`).
pub(crate) fn http_url() -> Value {
    json!({
        "type": ["string", "null"],
        "pattern": "^\\s*([$][{]|[Hh][Tt][Tt][Pp][Ss]?://[^/])",
    })
}

/// A whole number above zero.
pub(crate) fn positive() -> Value {
    json!({
        "type": ["integer", "string"],
        "minimum": 1,
        "pattern": "^\\s*[0-9]*[1-9][0-9]*\\s*$",
    })
}

/// The keys of `Security.Permissions`: `Preset`, and each category to an action. The
/// canonical keys are `properties` (for completion), every spelling the parser folds is a
/// pattern, and any other key is refused naming the canonical ones.
fn permissions() -> Value {
    let mut canonical = vec!["Preset"];
    canonical.extend((CATEGORIES.names)());
    let mut properties = Map::new();
    let mut patterns = Map::new();
    properties.insert("Preset".into(), one_of(&PRESETS));
    patterns.insert(single_pattern("Preset"), one_of(&PRESETS));
    for category in (CATEGORIES.names)() {
        properties.insert(category.into(), one_of(&ACTIONS));
    }
    patterns.insert(pattern(&CATEGORIES), one_of(&ACTIONS));
    let spellings: Vec<&String> = patterns.keys().collect();
    let names = json!({
        "anyOf": [
            { "enum": canonical },
            { "pattern": spellings.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|") },
        ],
    });
    json!({
        "type": ["object", "null"],
        "properties": properties,
        "patternProperties": patterns,
        "propertyNames": names,
    })
}

/// The schema of a settings section's key whose value fuseraft judges, if it does.
pub(crate) fn setting(section: &str, key: &str) -> Option<Value> {
    let dotted = format!("{section}.{key}");
    if dotted == "Chatroom.Path" || dotted == "ChangeTracking.Path" {
        return Some(written_path(dotted == "Chatroom.Path"));
    }
    if PATH_SETTINGS.contains(&dotted.as_str()) {
        return Some(path());
    }
    Some(match dotted.as_str() {
        "Security.Permissions" => permissions(),
        "Security.Sandbox" => one_of(&SANDBOX_MODES),
        "Compaction.Mode" => one_of(&COMPACTION_MODES),
        "Compaction.AntiThrashMinSavingsRatio" => fraction(),
        _ => return None,
    })
}

/// A closed set of tags, matched trimmed and case-insensitively.
fn own_set(names: Vec<&'static str>) -> Value {
    let alternatives: Vec<String> = names.iter().map(|name| folded(name)).collect();
    json!({
        "anyOf": [
            { "enum": names },
            {
                "type": ["string", "null"],
                "pattern": format!("^\\s*(?:{})\\s*$", alternatives.join("|")),
            },
        ],
    })
}

/// `name` with each letter matching either case.
fn folded(name: &str) -> String {
    name.chars().map(folded_char).collect()
}

/// `c` as a pattern: a letter in either case, a digit as itself, anything else in a class of
/// its own (`[-]`, `[.]`: the same in every regex dialect a validator may use).
fn folded_char(c: char) -> String {
    match c {
        c if c.is_ascii_alphabetic() => {
            format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
        }
        c if c.is_ascii_alphanumeric() => c.to_string(),
        c => format!("[{c}]"),
    }
}

/// An anchored pattern matching `name` trimmed and case-insensitively.
fn single_pattern(name: &str) -> String {
    format!("^\\s*{}\\s*$", folded(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(set: &Closed, text: &str) -> bool {
        regex::Regex::new(&pattern(set))
            .expect("the pattern compiles")
            .is_match(text)
    }

    #[test]
    fn the_spellings_the_parsers_fold_match_and_typos_do_not() {
        for (set, accepted, refused) in [
            (&SELECTION_TYPES, " StateMachine ", "statemachin"),
            (&TERMINATION_TYPES, "MaxIterations", "regx"),
            (&VALIDATORS, "requireshellpass", " RequireShellPass"),
            (&FAILURE_ACTIONS, "ActivateRecovery", "activate-recovery"),
            (&FAILURE_ACTIONS, "escalate_to_human", "escalate"),
            (&PRESETS, "Locked_Down", "lockdown"),
            (&ACTIONS, "Require_Approval", "blocked"),
            (&CATEGORIES, "git-write", "git_wirte"),
            (&MERGES, "semantic_diff", "semanticdiff"),
        ] {
            assert!(matches(set, accepted), "`{accepted}` is refused");
            assert!(!matches(set, refused), "`{refused}` is accepted");
        }
    }

    /// Each closed set is the one its parser reads: every name parses, and each parser's
    /// table is in the set.
    #[test]
    fn every_name_of_a_closed_set_parses() {
        type Parses = fn(&str) -> bool;
        let parsers: [(&Closed, Parses); 10] = [
            (&SELECTION_TYPES, |text| {
                SelectionKind::parse(text).is_some()
            }),
            (&VALIDATORS, |text| Validator::parse(text).is_some()),
            (&PREDICATE_TYPES, |text| {
                PredicateType::parse(text).is_some()
            }),
            (&MERGES, |text| Merge::parse(text).is_some()),
            (&FAILURE_ACTIONS, |text| {
                FailureAction::parse(text).is_some()
            }),
            (&PLUGINS, |text| Plugin::parse(text).is_some()),
            (&COMPACTION_MODES, |text| {
                CompactionMode::parse(text).is_some()
            }),
            (&SANDBOX_MODES, |text| SandboxMode::parse(text).is_some()),
            (&PRESETS, |text| Preset::parse(text).is_some()),
            (&ACTIONS, |text| Action::parse(text).is_some()),
        ];
        for (set, parses) in parsers {
            for name in (set.names)() {
                assert!(parses(name), "`{name}` does not parse");
                assert!(
                    matches(set, name),
                    "`{name}` does not match its own pattern"
                );
            }
        }
        for name in (CATEGORIES.names)() {
            assert!(Category::parse(name).is_some(), "`{name}`");
        }
    }

    /// The lowering's errors with `yaml` (an agent `A` is added).
    fn invalid_values(yaml: &str) -> Vec<String> {
        let text = format!("Orchestration:\n  Agents:\n    - Name: A\n{yaml}");
        let files = crate::source::MemoryFiles::new().with("c.yaml", text);
        let compiled = crate::compile(std::path::Path::new("c.yaml"), &files);
        compiled
            .diagnostics
            .iter()
            .filter(|diag| diag.is_error())
            .map(|diag| diag.message.clone())
            .collect()
    }

    /// The sets the lowering matches by string (no `ir` enum of their own): each name is
    /// accepted where the lowering reads it.
    #[test]
    fn every_name_the_lowering_matches_by_string_lowers() {
        for name in (FUNCTION_CHOICES.names)() {
            let found = invalid_values(&format!("      FunctionChoice: {name}\n"));
            assert!(found.is_empty(), "{name}: {found:?}");
        }
        for name in (ISOLATIONS.names)() {
            let found = invalid_values(&format!("      Isolation: {name}\n"));
            assert!(found.is_empty(), "{name}: {found:?}");
        }
        for name in (TERMINATION_TYPES.names)() {
            let termination = format!(
                "  Termination:\n    Type: {name}\n    Pattern: DONE\n    MaxIterations: 3\n    Strategies: [{{ Type: maxiterations, MaxIterations: 2 }}]\n    Condition: {{ Field: done, Is: 'true' }}\n    MaxTokens: 100\n"
            );
            let found = invalid_values(&termination);
            assert!(
                !found
                    .iter()
                    .any(|message| message.contains("termination type")),
                "{name}: {found:?}"
            );
        }
        for name in (HTTP_MODES.names)() {
            let server = format!(
                "  McpServers:\n    - Name: web\n      Transport: http\n      Url: https://example.com/mcp\n      TransportMode: {name}\n"
            );
            let found = invalid_values(&server);
            assert!(found.is_empty(), "{name}: {found:?}");
        }
    }

    #[test]
    fn paths_that_leave_the_project_are_refused() {
        let leaves = regex::Regex::new(LEAVES).expect("the pattern compiles");
        for path in ["/etc/passwd", "..", "../x", "./../x", " /"] {
            assert!(leaves.is_match(path), "{path}");
            let path = std::path::Path::new(path.trim());
            assert!(super::super::config_paths::leaves_lexically(path));
        }
        for path in ["a/../b", ".fuseraft/x", "..x", "~/x", "logs"] {
            assert!(!leaves.is_match(path), "{path}");
        }
    }
}
