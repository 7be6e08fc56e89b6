//! A tama skill's `skills/<name>/SKILL.md`: its name, description, the runtime tools it
//! unlocks (`tools: [tama_…]`) and its body, which `read_skill` returns.

use super::fields::Spanned;
use super::node::NodeKind;
use super::tama::{check_keys, front_matter, not_a_mapping, scalar};
use super::Loader;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

const SKILL_KEYS: &[&str] = &["name", "description", "license", "tools", "tama"];

/// One parsed `SKILL.md`.
#[derive(Clone, Debug)]
pub struct SkillMd {
    pub span: Span,
    pub description: String,
    /// The runtime tools the skill unlocks, as written.
    pub tools: Vec<Spanned<String>>,
    pub body: String,
}

/// Reads a `SKILL.md`; `None` (reported) when its front matter does not parse.
pub fn read_skill_md(file: FileId, loader: &mut Loader<'_>) -> Option<SkillMd> {
    let (node, span, body) = front_matter(file, loader)?;
    let diags = &mut loader.diags;
    if !matches!(node.kind, NodeKind::Map(_)) {
        diags.push(not_a_mapping(&node));
        return None;
    }
    check_keys(&node, SKILL_KEYS, "skill front matter", diags);
    let description = node
        .get("description")
        .and_then(|value| scalar(value, "description", diags))
        .map(|value| value.value)
        .unwrap_or_default();
    let tools = match node.get("tools") {
        None => Vec::new(),
        Some(list) => match &list.kind {
            NodeKind::Seq(items) => items
                .iter()
                .filter_map(|item| scalar(item, "tools", diags))
                .collect(),
            _ => {
                diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("`tools` must be a list, found {}", list.kind_name()),
                    )
                    .with_label(list.span, "expected a list of tool names"),
                );
                Vec::new()
            }
        },
    };
    Some(SkillMd {
        span,
        description,
        tools,
        body,
    })
}
