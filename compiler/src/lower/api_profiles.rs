//! Checking `ApiProfiles`, the Http plugin's named profiles, which stay dotted settings
//! (`ApiProfiles.github.BaseUrl`) for the VM: a profile's keys are `BaseUrl`,
//! `DefaultHeaders` and `TimeoutSeconds`; every profile has a base URL, an http or https
//! one; a timeout is a positive whole number of seconds. A misspelled key is a warning, a
//! value the VM could not use an error.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::syntax::fuseraft::Config;

const PREFIX: &str = "ApiProfiles.";
use crate::syntax::fuseraft::API_PROFILE_KEYS as KEYS;

pub(super) fn check_api_profiles(config: &Config, builder: &mut Builder<'_>) {
    // Each profile seen, with the span of its first key and whether it has a `BaseUrl`.
    let mut profiles: Vec<(String, crate::source::Span, bool)> = Vec::new();
    for (key, value) in &config.settings {
        let Some(rest) = key
            .get(..PREFIX.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(PREFIX))
            .map(|_| &key[PREFIX.len()..])
        else {
            continue;
        };
        let Some((name, field)) = rest.split_once('.') else {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("API profile `{rest}` must be a mapping"),
                )
                .with_label(value.span, "a profile is not a single value")
                .with_help("write `BaseUrl`, `DefaultHeaders` and `TimeoutSeconds` under it"),
            );
            continue;
        };
        let at = match profiles
            .iter()
            .position(|(known, ..)| known.eq_ignore_ascii_case(name))
        {
            Some(at) => at,
            None => {
                profiles.push((name.to_string(), value.span, false));
                profiles.len() - 1
            }
        };
        let (field, header) = match field.split_once('.') {
            Some((field, header)) => (field, Some(header)),
            None => (field, None),
        };
        match (field.to_ascii_lowercase().as_str(), header) {
            ("baseurl", None) => {
                profiles[at].2 = true;
                if !is_http_url(&value.value) {
                    builder.diags.push(
                        Diagnostic::error(
                            Code::InvalidValue,
                            format!("the `BaseUrl` of API profile `{name}` is not an http or https URL"),
                        )
                        .with_label(value.span, "the Http plugin sends only http and https requests")
                        .with_help("write the scheme and host, and a path prefix if any: `https://api.example.com/v1`"),
                    );
                }
            }
            ("defaultheaders", Some(_)) => {}
            ("defaultheaders", None) => builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("the `DefaultHeaders` of API profile `{name}` must be a mapping"),
                )
                .with_label(value.span, "header names to values")
                .with_help("write `DefaultHeaders: { Authorization: Bearer ${TOKEN} }`"),
            ),
            ("timeoutseconds", None)
                if value.value.trim().parse::<u64>().is_ok_and(|seconds| seconds > 0) => {}
            ("timeoutseconds", _) => builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("the `TimeoutSeconds` of API profile `{name}` must be a positive whole number"),
                )
                .with_label(value.span, "seconds"),
            ),
            _ => {
                let mut diag = Diagnostic::warning(
                    Code::UnknownKey,
                    format!("unknown key `{field}` in API profile `{name}`"),
                )
                .with_label(value.span, "the value of this key is never read");
                diag = diag.with_help(match did_you_mean(field, KEYS.iter().copied()) {
                    Some(hint) => hint,
                    None => "the keys are `BaseUrl`, `DefaultHeaders`, `TimeoutSeconds`".to_string(),
                });
                builder.diags.push(diag);
            }
        }
    }
    for (name, span, has_base) in profiles {
        if !has_base {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("API profile `{name}` has no `BaseUrl`"),
                )
                .with_label(
                    span,
                    "the Http plugin resolves a profile's paths against its base URL",
                )
                .with_help("add `BaseUrl: https://api.example.com`"),
            );
        }
    }
}

/// Whether `text` starts as an http or https URL with a host (`${VAR}` counts as text).
fn is_http_url(text: &str) -> bool {
    let text = text.trim();
    if text.starts_with("${") {
        return true; // the whole URL comes from the environment
    }
    let lower = text.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}
