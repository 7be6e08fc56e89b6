//! `${VAR}` in an MCP server's `Url`, `Headers`, `Env` and `Args`: expanded only for the
//! variables the user allowed (the CLI's `--mcp-env NAME` and user-level list, registered
//! with [`allow`]), never for a model's API key. A config is shared text: without this, a
//! cloned repository's config could send `${GITHUB_TOKEN}` to a host of its choosing.
//! Expanded values are kept so that any message showing the server's text can redact them.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use fuseraft_compiler::ir::{McpServer, McpTransport};

/// The names the user allowed, upper-cased, for the whole process.
static ALLOWED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Allows `${NAME}` of each name to expand (for the whole process).
pub fn allow<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) {
    let mut allowed = ALLOWED.lock().unwrap_or_else(PoisonError::into_inner);
    for name in names {
        let name = name.as_ref().trim();
        if !name.is_empty() {
            allowed.insert(name.to_ascii_uppercase());
        }
    }
}

fn allowed(name: &str) -> bool {
    ALLOWED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&name.to_ascii_uppercase())
}

/// One `${VAR}` a server's text names: where (`Url`, `Headers`, `Env`, `Args`) and which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub field: &'static str,
    pub name: String,
}

/// Every `${VAR}` `server` names, in order.
pub fn references(server: &McpServer) -> Vec<Reference> {
    let mut texts: Vec<(&'static str, &str)> = Vec::new();
    match &server.transport {
        McpTransport::Stdio { args, env, .. } => {
            texts.extend(args.iter().map(|arg| ("Args", arg.as_str())));
            texts.extend(env.iter().map(|(_, value)| ("Env", value.as_str())));
        }
        McpTransport::Http { url, headers } => {
            texts.push(("Url", url.as_str()));
            texts.extend(headers.iter().map(|(_, value)| ("Headers", value.as_str())));
        }
    }
    let mut out = Vec::new();
    for (field, text) in texts {
        for name in names_in(text) {
            out.push(Reference {
                field,
                name: name.to_string(),
            });
        }
    }
    out
}

fn names_in(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        names.push(&after[..end]);
        rest = &after[end + 1..];
    }
    names
}

/// Why `${name}` may not expand, or `None` when it may: a model's key never; any other
/// variable only once the user allowed it.
pub fn refusal(name: &str) -> Option<String> {
    if crate::sandbox::env::is_model_key(name) {
        return Some(format!(
            "`${{{name}}}` names a model API key, which is never sent to an MCP server"
        ));
    }
    if allowed(name) {
        return None;
    }
    let kind = if crate::sandbox::env::looks_secret(name) {
        "a credential-like variable"
    } else {
        "a variable"
    };
    Some(format!(
        "`${{{name}}}` is {kind} of your environment, which a config may not send to an MCP server unless you allow it: pass `--mcp-env {name}`"
    ))
}

/// Text with its `${VAR}`s expanded, and the values put in (for [`redact`]).
pub(crate) struct Expanded {
    pub text: String,
    pub values: Vec<String>,
}

/// `text` with each `${VAR}` replaced by that variable (unset: empty, as upstream); `Err`
/// for a variable [`refusal`] refuses.
pub(crate) fn expand(text: &str) -> Result<Expanded, String> {
    let mut out = String::with_capacity(text.len());
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(Expanded { text: out, values });
        };
        let name = &after[..end];
        if let Some(reason) = refusal(name) {
            return Err(reason);
        }
        let value = std::env::var(name).unwrap_or_default();
        out.push_str(&value);
        if !value.is_empty() {
            values.push(value);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Expanded { text: out, values })
}

/// `message` with every expanded value replaced by `***`.
pub(super) fn redact(message: String, values: &[String]) -> String {
    values.iter().fold(message, |message, value| {
        if value.is_empty() {
            message
        } else {
            message.replace(value.as_str(), "***")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_variables_expand_and_model_keys_never_do() {
        crate::sandbox::env::withhold(["MY_MODEL_KEY_FOR_MCP_TEST"]);
        allow([
            "FUSERAFT_SURELY_UNSET_VARIABLE",
            "MY_MODEL_KEY_FOR_MCP_TEST",
        ]);
        let expanded = expand("Bearer ${FUSERAFT_SURELY_UNSET_VARIABLE}!").unwrap();
        assert_eq!(expanded.text, "Bearer !");
        assert_eq!(expand("a ${unterminated").unwrap().text, "a ${unterminated");
        for text in ["${OPENAI_API_KEY}", "x ${my_model_key_for_mcp_test} y"] {
            let error = expand(text).err().unwrap();
            assert!(error.contains("model API key"), "{error}");
        }
        let error = expand("${GITHUB_TOKEN}").err().unwrap();
        assert!(error.contains("credential-like"), "{error}");
        assert!(error.contains("`--mcp-env GITHUB_TOKEN`"), "{error}");
        let error = expand("${HOME}").err().unwrap();
        assert!(error.contains("`--mcp-env HOME`"), "{error}");
        assert_eq!(
            redact("at https://h/?t=s3cret".into(), &["s3cret".into()]),
            "at https://h/?t=***"
        );
    }
}
