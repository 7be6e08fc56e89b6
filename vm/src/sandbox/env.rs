//! The environment of every command fuseraft starts (`shell_run`, validator and contract
//! commands): built from an allow-list, never inherited whole.
//!
//! A variable reaches a child only when its name is on [`ALLOWED`] (or starts with `LC_`)
//! or the command's agent set it (`shell_set_env`, a name [`agent_may_set`] allows), and
//! even then never when it is a secret: a name registered with [`withhold`] (every
//! model's `ApiKeyEnvVar`), a well-known provider key, a name that looks like a credential
//! ([`looks_secret`]), or a variable whose value equals a withheld variable's value.
//!
//! The list keeps what shells and toolchains need to find themselves (`PATH`, `HOME`, the
//! locale, the temp dir, the homes of cargo, rustup, Go, Java, Python, Node and .NET) and
//! leaves out everything else: tokens (`GITHUB_TOKEN`, `AWS_*`), proxies (their URLs can
//! hold passwords), `LD_PRELOAD`/`LD_LIBRARY_PATH`, `SSH_AUTH_SOCK` (a key agent), and the
//! display and session buses.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};

/// Names inherited from fuseraft's own environment when set.
pub const ALLOWED: &[&str] = &[
    // The shell and the user.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "LANG",
    "LANGUAGE",
    "NO_COLOR",
    // Temporary files.
    "TMPDIR",
    "TMP",
    "TEMP",
    // Per-user base directories.
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    // Java and the JVM build tools.
    "JAVA_HOME",
    "MAVEN_HOME",
    "GRADLE_USER_HOME",
    // Python.
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    // Node.
    "NODE_PATH",
    "NVM_DIR",
    // .NET.
    "DOTNET_ROOT",
    // C and C++ toolchains.
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    // Certificates.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Provider keys withheld whatever the list says.
const WELL_KNOWN_KEYS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "COHERE_API_KEY",
    "HF_TOKEN",
];

/// Names registered by the run (every model's `ApiKeyEnvVar`), upper-cased.
static WITHHELD: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Registers variable names that must never reach a child process (for the whole process).
pub fn withhold<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) {
    let mut withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    for name in names {
        let name = name.as_ref().trim();
        if !name.is_empty() {
            withheld.insert(name.to_ascii_uppercase());
        }
    }
}

/// Whether a name looks like a credential (`*_API_KEY`, `*_TOKEN`, `*_SECRET*`, ...).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "_API_KEY",
        "_APIKEY",
        "_ACCESS_KEY",
        "_SECRET_ACCESS_KEY",
        "_AUTH_TOKEN",
        "_TOKEN",
        "_PASSWORD",
    ]
    .iter()
    .any(|suffix| upper.ends_with(suffix))
        || upper == "API_KEY"
        || upper.contains("SECRET")
}

/// Whether a name is a model's API key: a well-known provider key or a name registered with
/// [`withhold`] (every model's `ApiKeyEnvVar`).
pub fn is_model_key(name: &str) -> bool {
    let upper = name.trim().to_ascii_uppercase();
    WELL_KNOWN_KEYS.contains(&upper.as_str())
        || WITHHELD
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&upper)
}

fn withheld_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    looks_secret(&upper)
        || WELL_KNOWN_KEYS.contains(&upper.as_str())
        || WITHHELD
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&upper)
}

fn allowed_name(name: &str) -> bool {
    ALLOWED.contains(&name) || name.starts_with("LC_")
}

/// Names fuseraft sets for every command itself (`GIT_TERMINAL_PROMPT=0`, the sandbox's
/// `TMPDIR`): an agent does not change them.
const SET_BY_FUSERAFT: &[&str] = &["GIT_TERMINAL_PROMPT", "TMPDIR"];

/// Why an agent may not set `name` for its commands (`shell_set_env`), if it may not: not
/// a variable name; a secret's name (it would pass as one and is withheld anyway); a name
/// of the dynamic loader (`LD_*`, `DYLD_*`, `GLIBC_TUNABLES`), which acts in the launcher
/// before the sandbox is in place; or a name fuseraft sets for every command.
pub fn agent_may_set(name: &str) -> Result<(), String> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a variable name (letters, digits and `_`, not starting with a digit)"
        ));
    }
    let upper = name.to_ascii_uppercase();
    if withheld_name(&upper) {
        return Err(format!(
            "`{name}` looks like a credential; commands never get one"
        ));
    }
    if upper.starts_with("LD_") || upper.starts_with("DYLD_") || upper == "GLIBC_TUNABLES" {
        return Err(format!(
            "`{name}` steers the dynamic loader, which would act in the sandbox's launcher before the sandbox is in place"
        ));
    }
    if SET_BY_FUSERAFT.contains(&upper.as_str()) {
        return Err(format!("`{name}` is set by fuseraft for every command"));
    }
    Ok(())
}

/// The environment for a child, from `vars` (fuseraft's own environment in practice).
pub fn filtered(vars: impl Iterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    with_agent_vars(vars, &[])
}

/// The environment for a child, from `vars` with the variables an agent set (`Some`) or
/// unset (`None`) over them: the one rule for every command. An agent's variable passes
/// when [`agent_may_set`] allows its name; every variable then passes the same secret
/// rules (a withheld name, a withheld value).
pub fn with_agent_vars(
    vars: impl Iterator<Item = (OsString, OsString)>,
    agent: &[(String, Option<String>)],
) -> Vec<(OsString, OsString)> {
    let vars: Vec<(OsString, OsString)> = vars.collect();
    let secret_values: Vec<&OsString> = vars
        .iter()
        .filter(|(name, value)| withheld_name(&name.to_string_lossy()) && value.len() >= 8)
        .map(|(_, value)| value)
        .collect();
    let set = |name: &str| agent.iter().any(|(set, _)| set == name);
    let inherited = vars.iter().filter(|(name, _)| {
        let name = name.to_string_lossy();
        allowed_name(&name) && !set(&name)
    });
    let given: Vec<(OsString, OsString)> = agent
        .iter()
        .filter(|(name, _)| agent_may_set(name).is_ok())
        .filter_map(|(name, value)| Some((OsString::from(name), OsString::from(value.as_ref()?))))
        .collect();
    inherited
        .chain(&given)
        .filter(|(name, value)| {
            !withheld_name(&name.to_string_lossy()) && !secret_values.contains(&value)
        })
        .cloned()
        .collect()
}

/// The environment for a child, from fuseraft's own.
pub fn child_env() -> Vec<(OsString, OsString)> {
    filtered(std::env::vars_os())
}

/// The environment for a command of an agent that set or unset `agent` variables.
pub fn agent_child_env(agent: &[(String, Option<String>)]) -> Vec<(OsString, OsString)> {
    with_agent_vars(std::env::vars_os(), agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    fn names(pairs: &[(&str, &str)]) -> Vec<String> {
        filtered(vars(pairs).into_iter())
            .into_iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_allowed_names_pass() {
        let kept = names(&[
            ("PATH", "/usr/bin"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("AWS_ACCESS_KEY_ID", "AKIA"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("LD_PRELOAD", "/evil.so"),
            ("RANDOM_THING", "1"),
        ]);
        assert_eq!(kept, vec!["PATH", "LC_ALL"]);
    }

    #[test]
    fn withheld_names_never_pass_even_when_allowed() {
        withhold(["pythonpath"]);
        let kept = names(&[("PYTHONPATH", "/secret-looking"), ("HOME", "/root")]);
        assert_eq!(kept, vec!["HOME"]);
    }

    #[test]
    fn an_agents_variables_pass_the_same_rule() {
        let agent = |pairs: &[(&str, Option<&str>)]| -> Vec<(String, Option<String>)> {
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.map(str::to_string)))
                .collect()
        };
        let env = with_agent_vars(
            vars(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/root"),
                ("OPENAI_API_KEY", "sk-abcdefgh12345"),
            ])
            .into_iter(),
            &agent(&[
                ("RUST_LOG", Some("debug")),
                ("HOME", None),
                ("LD_PRELOAD", Some("/tmp/x.so")),
                ("MY_TOKEN", Some("t")),
                ("LEAK", Some("sk-abcdefgh12345")),
            ]),
        );
        let env: Vec<(String, String)> = env
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect();
        assert_eq!(
            env,
            [
                ("PATH".to_string(), "/usr/bin".to_string()),
                ("RUST_LOG".to_string(), "debug".to_string())
            ]
        );
        for refused in [
            "LD_PRELOAD",
            "ld_audit",
            "DYLD_INSERT_LIBRARIES",
            "GITHUB_TOKEN",
        ] {
            assert!(agent_may_set(refused).is_err(), "{refused}");
        }
        for refused in ["TMPDIR", "GIT_TERMINAL_PROMPT", "1X", "A-B", ""] {
            assert!(agent_may_set(refused).is_err(), "{refused}");
        }
        assert!(agent_may_set("PATH").is_ok() && agent_may_set("_X1").is_ok());
    }

    #[test]
    fn a_value_equal_to_a_secret_never_passes() {
        let kept = names(&[
            ("OPENAI_API_KEY", "sk-abcdefgh12345"),
            ("TERM", "sk-abcdefgh12345"),
            ("USER", "me"),
        ]);
        assert_eq!(kept, vec!["USER"]);
    }
}
