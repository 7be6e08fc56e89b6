//! Lowering the security policy into enums: `Capabilities` (plugins and tags),
//! `Security.Permissions` (preset, category keys, actions), `Security.Sandbox` (what to do
//! where the OS sandbox is unavailable) and the `Security.ChangeEnvelope` globs. An unknown or misspelled value is an error with a did-you-mean: the VM would
//! otherwise read it as "allow".

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{Action, Capability, Category, Plugin, Preset, SandboxMode};
use crate::source::Span;
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::Config;

const PERMISSIONS: &str = "Security.Permissions.";
const ENVELOPE: &str = "Security.ChangeEnvelope";
const SANDBOX: &str = "Security.Sandbox";

/// An agent's `Capabilities`, typed. Unknown plugins and tags are reported.
pub(super) fn lower_capabilities(
    written: &[(Spanned<String>, Vec<Spanned<String>>)],
    builder: &mut Builder<'_>,
) -> Vec<(Plugin, Vec<Capability>)> {
    let mut out: Vec<(Plugin, Vec<Capability>)> = Vec::new();
    for (plugin_name, tags) in written {
        let Some(plugin) = Plugin::parse(&plugin_name.value) else {
            // A plugin fuseraft does not run (upstream's `Document`, ...) offers no tool,
            // so its tags narrow nothing; a near miss of one it runs would leave that plugin
            // unnarrowed, so it is an error.
            let known = Plugin::ALL.iter().map(|plugin| plugin.as_str());
            if hint(&plugin_name.value, known.clone()).is_some() {
                builder.diags.push(unknown_value(
                    format!("unknown plugin `{}` in `Capabilities`", plugin_name.value),
                    plugin_name,
                    known,
                    "plugins with capability tags",
                ));
            }
            continue;
        };
        let allowed = plugin.capabilities();
        let mut parsed = Vec::new();
        for tag in tags {
            match Capability::parse(&tag.value).filter(|tag| allowed.contains(tag)) {
                Some(tag) => {
                    if !parsed.contains(&tag) {
                        parsed.push(tag);
                    }
                }
                None => builder.diags.push(unknown_value(
                    format!(
                        "`{}` is not a capability tag of plugin `{plugin}`",
                        tag.value
                    ),
                    tag,
                    allowed.iter().map(|tag| tag.as_str()),
                    &format!("tags of `{plugin}`"),
                )),
            }
        }
        match out.iter_mut().find(|(known, _)| *known == plugin) {
            Some((_, known)) => {
                for tag in parsed {
                    if !known.contains(&tag) {
                        known.push(tag);
                    }
                }
            }
            None => out.push((plugin, parsed)),
        }
    }
    out
}

/// `Security.Permissions.*` into `Program::permissions` (and out of the plain settings),
/// and the `Security.ChangeEnvelope` globs checked.
pub(super) fn lower_security(config: &Config, builder: &mut Builder<'_>) {
    let mut settings = Vec::new();
    for (key, value) in &config.settings {
        let permission = key
            .get(..PERMISSIONS.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(PERMISSIONS))
            .map(|_| &key[PERMISSIONS.len()..]);
        match permission {
            Some(name) => lower_permission(name, value, builder),
            None if key.eq_ignore_ascii_case("Security.Permissions") => builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    "`Security.Permissions` must be a mapping, not a single value",
                )
                .with_label(value.span, "a preset and category keys go under it")
                .with_help("write `Permissions: { Preset: locked-down }`, with category keys such as `git_write: block`"),
            ),
            None if key.eq_ignore_ascii_case(SANDBOX) => {
                // Kept as a setting in the mode's own spelling, so the VM's
                // `SandboxMode::parse` of it always succeeds.
                match SandboxMode::parse(&value.value) {
                    Some(mode) => settings.push((SANDBOX.to_string(), mode.as_str().to_string())),
                    None => builder.diags.push(unknown_value(
                        format!("unknown `Security.Sandbox` mode `{}`", value.value),
                        value,
                        SandboxMode::ALL.iter().map(|mode| mode.as_str()),
                        "modes",
                    )),
                }
            }
            None => {
                if key.eq_ignore_ascii_case(ENVELOPE) {
                    check_envelope(value, builder);
                }
                settings.push((key.clone(), value.value.clone()));
            }
        }
    }
    builder.program.settings = settings;
}

fn lower_permission(name: &str, value: &Spanned<String>, builder: &mut Builder<'_>) {
    if name.eq_ignore_ascii_case("Preset") {
        match Preset::parse(&value.value) {
            Some(preset) => builder.program.permissions.preset = preset,
            None => builder.diags.push(unknown_value(
                format!("unknown permission preset `{}`", value.value),
                value,
                Preset::ALL.iter().map(|preset| preset.as_str()),
                "presets",
            )),
        }
        return;
    }
    let Some(category) = Category::parse(name) else {
        let keys = std::iter::once("Preset").chain(Category::ALL.iter().map(|c| c.key()));
        let mut diag = Diagnostic::error(
            Code::UnknownKey,
            format!("unknown permission key `Security.Permissions.{name}`"),
        )
        .with_label(value.span, "the value of this key is never read");
        diag = diag.with_help(match hint(name, keys.clone()) {
            Some(hint) => hint,
            None => format!("the keys are {}", backticked(keys)),
        });
        builder.diags.push(diag);
        return;
    };
    let Some(action) = Action::parse(&value.value) else {
        builder.diags.push(unknown_value(
            format!(
                "unknown permission action `{}` for `{category}`",
                value.value
            ),
            value,
            Action::ALL.iter().map(|action| action.as_str()),
            "actions",
        ));
        return;
    };
    let overrides = &mut builder.program.permissions.overrides;
    match overrides.iter_mut().find(|(known, _)| *known == category) {
        Some((_, known)) => *known = action,
        None => overrides.push((category, action)),
    }
}

/// Every `Security.ChangeEnvelope` glob must compile.
fn check_envelope(value: &Spanned<String>, builder: &mut Builder<'_>) {
    for glob in value
        .value
        .lines()
        .map(str::trim)
        .filter(|glob| !glob.is_empty())
    {
        if let Err(error) = crate::ir::envelope_glob(glob) {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("invalid `Security.ChangeEnvelope` glob `{glob}`"),
                )
                .with_label(
                    item_span(builder, value.span, glob),
                    error.kind().to_string(),
                )
                .with_help(
                    "globs are relative to the sandbox root: `src/**`, `docs/*.md`, `README.md`",
                ),
            );
        }
    }
}

/// The span of `item` inside a written list (the whole list if it cannot be found).
fn item_span(builder: &Builder<'_>, list: Span, item: &str) -> Span {
    let text = &builder.sources.get(list.file).text;
    text.get(list.start as usize..list.end as usize)
        .and_then(|raw| raw.find(item))
        .map_or(list, |at| {
            let start = list.start as usize + at;
            Span::new(list.file, start, start + item.len())
        })
}

/// The error for a value outside a closed set, with a did-you-mean or the set.
fn unknown_value<'a>(
    message: String,
    value: &Spanned<String>,
    known: impl Iterator<Item = &'a str> + Clone,
    set: &str,
) -> Diagnostic {
    let diag = Diagnostic::error(Code::InvalidValue, message)
        .with_label(value.span, format!("not one of the {set}"));
    let help = match hint(&value.value, known.clone()) {
        Some(hint) => format!("{hint} ({set}: {})", backticked(known)),
        None => format!("{set}: {}", backticked(known)),
    };
    diag.with_help(help)
}

/// A did-you-mean that also sees past `-` and `_` (`lockdown` → `locked-down`).
fn hint<'a>(value: &str, known: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let compact = |text: &str| text.replace(['-', '_'], "");
    did_you_mean(value, known.clone()).or_else(|| {
        let value = compact(value);
        known
            .into_iter()
            .find(|candidate| did_you_mean(&value, [compact(candidate).as_str()]).is_some())
            .map(|candidate| format!("did you mean `{candidate}`?"))
    })
}

fn backticked<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
