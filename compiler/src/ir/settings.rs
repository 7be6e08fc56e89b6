//! The run-wide settings the VM acts on, typed once: [`Program::settle_settings`] reads the
//! written settings (`Program::settings`, dotted keys, which the `.fir` form prints) into
//! the typed sections, and both the lowering and the `.fir` parser call it, so a program
//! from either has the same sections. A value its key cannot take is a [`BadSetting`]; the
//! lowering reports it at the key's span, the parser at its line. The VM reads only the
//! sections.

use super::{compaction, verifier, Program, SandboxMode};

/// `Security`: what started processes and the file tools may touch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Security {
    /// `Security.Sandbox`: what to do where the OS sandbox is unavailable (unset: by preset).
    pub sandbox: Option<SandboxMode>,
    /// `Security.FileSystemSandboxPath`, relative to the work dir.
    pub sandbox_path: Option<String>,
    /// `Security.ReadFileSizeLimit`: the most bytes `read_file` returns.
    pub read_file_size_limit: Option<usize>,
    /// `Security.DenyRead`: paths no started process may read (`~/` is the home), one a line.
    pub deny_read: Vec<String>,
    /// `Security.ChangeEnvelope`: the globs a write, patch or delete must match (none: any).
    pub change_envelope: Vec<String>,
    /// `Security.HttpAllowedHosts`: the hosts the Http tools may reach (none: any public).
    pub http_allowed_hosts: Vec<String>,
    /// `Security.AllowPrivateHosts`: whether the Http tools may reach private addresses.
    pub allow_private_hosts: bool,
}

/// `Validation`, `ChangeTracking` and `TestSelector`: where the validators find their
/// artifacts and which commands select tests. Paths are relative to the work dir and may
/// hold `{session_id}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    /// `Validation.BriefPath`.
    pub brief_path: Option<String>,
    /// `Validation.TestReportPath`.
    pub test_report_path: Option<String>,
    /// The change log: `Validation.ChangeLogPath`, else `ChangeTracking.Path`.
    pub change_log_path: Option<String>,
    /// `Validation.TestAssertionPatterns`, one a line (none: the validators' defaults).
    pub test_assertion_patterns: Vec<String>,
    /// `TestSelector.FullSuiteCommand`.
    pub full_suite_command: Option<String>,
    /// `TestSelector.FindRelatedCommand` (`{file}` is each changed file).
    pub find_related_command: Option<String>,
}

/// One of `ApiProfiles`: a named base URL for the Http tools. `${VAR}` in the URL and the
/// headers is expanded when the run starts, from the environment it allows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiProfile {
    pub name: String,
    pub base_url: Option<String>,
    /// `DefaultHeaders.<name>`, in the order written.
    pub headers: Vec<(String, String)>,
    /// `TimeoutSeconds` (positive).
    pub timeout_seconds: Option<u64>,
}

/// A written setting whose value its key cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadSetting {
    /// The dotted key, as written.
    pub key: String,
    /// What is wrong, lowercase, the key in backticks.
    pub message: String,
    /// What the key takes, for the label under the value.
    pub expected: &'static str,
}

impl Program {
    /// Fills the typed sections (`security`, `validation`, `chatroom_path`, `api_profiles`,
    /// `routing_instructions`, `verifier`, `compaction`) from the written settings, and
    /// returns every value its key cannot take (that key keeps its default). Blank values
    /// are absent. Keys match in any case.
    pub fn settle_settings(&mut self) -> Vec<BadSetting> {
        let mut bad = Vec::new();
        self.security = Security::default();
        self.validation = Validation::default();
        self.chatroom_path = None;
        self.api_profiles = Vec::new();
        self.routing_instructions = true;
        let mut change_tracking = None;
        let written = std::mem::take(&mut self.settings);
        for (key, value) in &written {
            let text = value.trim();
            if text.is_empty() {
                continue;
            }
            let mut fail = |message: String, expected: &'static str| {
                bad.push(BadSetting {
                    key: key.clone(),
                    message,
                    expected,
                })
            };
            let owned = || Some(text.to_string());
            match key.to_ascii_lowercase().as_str() {
                "security.sandbox" => match SandboxMode::parse(text) {
                    Some(mode) => self.security.sandbox = Some(mode),
                    None => fail(format!("unknown `{key}` mode `{text}`"), "a sandbox mode"),
                },
                "security.filesystemsandboxpath" => self.security.sandbox_path = owned(),
                "security.readfilesizelimit" => match text.parse::<usize>() {
                    Ok(bytes) if bytes > 0 => self.security.read_file_size_limit = Some(bytes),
                    _ => fail(
                        format!("`{key}` must be a positive whole number of bytes, not `{text}`"),
                        "a positive whole number",
                    ),
                },
                "security.denyread" => self.security.deny_read = lines(text),
                "security.changeenvelope" => self.security.change_envelope = lines(text),
                "security.httpallowedhosts" => self.security.http_allowed_hosts = lines(text),
                "security.allowprivatehosts" => match flag(text) {
                    Some(on) => self.security.allow_private_hosts = on,
                    None => fail(not_a_flag(key, text), "`true` or `false`"),
                },
                "validation.briefpath" => self.validation.brief_path = owned(),
                "validation.testreportpath" => self.validation.test_report_path = owned(),
                "validation.changelogpath" => self.validation.change_log_path = owned(),
                "changetracking.path" => change_tracking = owned(),
                "validation.testassertionpatterns" => {
                    self.validation.test_assertion_patterns = lines(text)
                }
                "testselector.fullsuitecommand" => self.validation.full_suite_command = owned(),
                "testselector.findrelatedcommand" => self.validation.find_related_command = owned(),
                "chatroom.path" => self.chatroom_path = owned(),
                "orchestration.routinginstructions" => match flag(text) {
                    Some(on) => self.routing_instructions = on,
                    None => fail(not_a_flag(key, text), "`true` or `false`"),
                },
                lower if lower.starts_with("apiprofiles.") => {
                    self.api_profile(&key["ApiProfiles.".len()..], value)
                }
                lower if lower.starts_with("verifier.") || lower.starts_with("compaction.") => {
                    if let Some((message, expected)) = section_value(key, text) {
                        fail(message, expected);
                    }
                }
                _ => {}
            }
        }
        // `Validation.ChangeLogPath` wins over `ChangeTracking.Path`, wherever written.
        if self.validation.change_log_path.is_none() {
            self.validation.change_log_path = change_tracking;
        }
        self.settings = written;
        self.verifier = verifier::read(self);
        self.compaction = compaction::read(self);
        bad
    }

    /// One `ApiProfiles.<name>.<field>` (a field the lowering refused is left out).
    fn api_profile(&mut self, rest: &str, value: &str) {
        let Some((name, field)) = rest.split_once('.') else {
            return;
        };
        let at = match self
            .api_profiles
            .iter()
            .position(|profile| profile.name.eq_ignore_ascii_case(name))
        {
            Some(at) => at,
            None => {
                self.api_profiles.push(ApiProfile {
                    name: name.to_string(),
                    ..ApiProfile::default()
                });
                self.api_profiles.len() - 1
            }
        };
        let profile = &mut self.api_profiles[at];
        let (field, header) = match field.split_once('.') {
            Some((field, header)) => (field, Some(header)),
            None => (field, None),
        };
        match (field.to_ascii_lowercase().as_str(), header) {
            ("baseurl", None) => profile.base_url = Some(value.trim().to_string()),
            ("defaultheaders", Some(header)) => profile
                .headers
                .push((header.to_string(), value.to_string())),
            ("timeoutseconds", None) => {
                profile.timeout_seconds = value.trim().parse().ok().filter(|s| *s > 0)
            }
            _ => {}
        }
    }
}

/// The non-blank lines of `text`, trimmed.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// `true` or `false`, in any case.
pub(super) fn flag(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn not_a_flag(key: &str, text: &str) -> String {
    format!("`{key}` must be `true` or `false`, not `{text}`")
}

/// What is wrong with a `Verifier` or `Compaction` value the lowering does not judge
/// elsewhere (its `Compaction.Mode`, ratio, budget and window checks), if anything.
fn section_value(key: &str, text: &str) -> Option<(String, &'static str)> {
    let (_, name) = key.split_once('.')?;
    let whole = [
        "everynturns",
        "triggerturncount",
        "keeprecentturns",
        "maxcharsperhistorymessage",
    ];
    let flags = ["triggeronsuspicioustransition", "pinlastroutingsignal"];
    let name = name.to_ascii_lowercase();
    if whole.contains(&name.as_str()) && text.parse::<u64>().is_err() {
        return Some((
            format!("`{key}` must be a whole number, not `{text}`"),
            "a whole number",
        ));
    }
    if flags.contains(&name.as_str()) && flag(text).is_none() {
        return Some((not_a_flag(key, text), "`true` or `false`"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::print::samples;
    use super::*;

    fn settled(pairs: &[(&str, &str)]) -> (Program, Vec<BadSetting>) {
        let mut program = samples::team();
        program.settings = pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        let bad = program.settle_settings();
        (program, bad)
    }

    #[test]
    fn each_section_is_read_in_any_case_and_blank_is_absent() {
        let (program, bad) = settled(&[
            ("security.sandbox", "Warn"),
            ("Security.FileSystemSandboxPath", "src"),
            ("Security.ReadFileSizeLimit", "4096"),
            ("Security.DenyRead", "~/.secret\n\n  notes/private  "),
            ("Security.ChangeEnvelope", "src/**"),
            ("Security.AllowPrivateHosts", "TRUE"),
            ("ChangeTracking.Path", "a.jsonl"),
            ("Validation.BriefPath", "   "),
            ("TestSelector.FullSuiteCommand", "cargo test"),
            ("Chatroom.Path", "room.md"),
            ("Orchestration.RoutingInstructions", "false"),
            ("ApiProfiles.gh.BaseUrl", "https://api.github.com"),
            ("ApiProfiles.gh.DefaultHeaders.Accept", "json"),
            ("ApiProfiles.GH.TimeoutSeconds", "5"),
        ]);
        assert_eq!(bad, []);
        assert_eq!(program.security.sandbox, Some(SandboxMode::Warn));
        assert_eq!(program.security.sandbox_path.as_deref(), Some("src"));
        assert_eq!(program.security.read_file_size_limit, Some(4096));
        assert_eq!(program.security.deny_read, ["~/.secret", "notes/private"]);
        assert_eq!(program.security.change_envelope, ["src/**"]);
        assert!(program.security.allow_private_hosts);
        assert_eq!(
            program.validation.change_log_path.as_deref(),
            Some("a.jsonl")
        );
        assert_eq!(program.validation.brief_path, None);
        assert_eq!(
            program.validation.full_suite_command.as_deref(),
            Some("cargo test")
        );
        assert_eq!(program.chatroom_path.as_deref(), Some("room.md"));
        assert!(!program.routing_instructions);
        assert_eq!(
            program.api_profiles,
            [ApiProfile {
                name: "gh".to_string(),
                base_url: Some("https://api.github.com".to_string()),
                headers: vec![("Accept".to_string(), "json".to_string())],
                timeout_seconds: Some(5),
            }]
        );
    }

    #[test]
    fn the_change_log_path_is_one_rule_whatever_the_order() {
        for pairs in [
            [
                ("Validation.ChangeLogPath", "v.jsonl"),
                ("ChangeTracking.Path", "c.jsonl"),
            ],
            [
                ("ChangeTracking.Path", "c.jsonl"),
                ("Validation.ChangeLogPath", "v.jsonl"),
            ],
        ] {
            let (program, _) = settled(&pairs);
            assert_eq!(
                program.validation.change_log_path.as_deref(),
                Some("v.jsonl")
            );
        }
    }

    #[test]
    fn a_value_its_key_cannot_take_is_named_and_the_default_kept() {
        let (program, bad) = settled(&[
            ("Security.ReadFileSizeLimit", "10MB"),
            ("Security.AllowPrivateHosts", "yes please"),
            ("Orchestration.RoutingInstructions", "off"),
            ("Verifier.EveryNTurns", "often"),
            ("Compaction.PinLastRoutingSignal", "maybe"),
        ]);
        let keys: Vec<&str> = bad.iter().map(|bad| bad.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Security.ReadFileSizeLimit",
                "Security.AllowPrivateHosts",
                "Orchestration.RoutingInstructions",
                "Verifier.EveryNTurns",
                "Compaction.PinLastRoutingSignal",
            ]
        );
        assert_eq!(
            bad[0].message,
            "`Security.ReadFileSizeLimit` must be a positive whole number of bytes, not `10MB`"
        );
        assert_eq!(program.security.read_file_size_limit, None);
        assert!(!program.security.allow_private_hosts);
        assert!(program.routing_instructions);
    }
}
