//! tama skills: `call.uses` names skills (`skills/<name>/SKILL.md`); an agent that uses them
//! is offered `read_skill` and the runtime tools they unlock (`tama_bash`,
//! `tama_files_write`, …), each under the permission category of the fuseraft tool it
//! stands for, and its instructions list the skills, as tama's prompt does.

use std::collections::HashMap;
use std::path::Path;

use super::tama::TamaLowering;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{Plugin, Skill, Tool};
use crate::syntax::fields::Spanned;
use crate::syntax::tama_skill::{read_skill_md, SkillMd};
use crate::syntax::Loader;

/// Reads the skills `uses` names that are not read yet (into `skills`), reporting those
/// missing and the tools no tama runtime has.
pub(super) fn collect_skills(
    loader: &mut Loader<'_>,
    root: &Path,
    uses: &[Spanned<String>],
    skills: &mut HashMap<String, SkillMd>,
    missing: &mut Vec<String>,
) {
    for name in uses {
        if skills.contains_key(&name.value) || missing.contains(&name.value) {
            continue;
        }
        let path = root.join("skills").join(&name.value).join("SKILL.md");
        if !loader.reader.exists(&path) {
            missing.push(name.value.clone());
            loader.diags.push(
                Diagnostic::warning(
                    Code::MissingFile,
                    format!(
                        "skill `{}` not found (checked `skills/{}/SKILL.md`)",
                        name.value, name.value
                    ),
                )
                .with_label(name.span, "named in `call.uses` here")
                .with_help("the agent runs without it: `read_skill` says it does not exist"),
            );
            continue;
        }
        let Some(file) = loader.read(&path, None, "skill") else {
            missing.push(name.value.clone());
            continue;
        };
        let Some(skill) = read_skill_md(file, loader) else {
            missing.push(name.value.clone());
            continue;
        };
        for tool in &skill.tools {
            if !is_tama_tool(&tool.value) {
                let names = tama_tools().map(Tool::name);
                let mut diag = Diagnostic::warning(
                    Code::InvalidValue,
                    format!("`{}` is not a tama runtime tool", tool.value),
                )
                .with_label(tool.span, "no skill unlocks a tool of this name");
                if let Some(help) = did_you_mean(&tool.value, names) {
                    diag = diag.with_help(help);
                }
                loader.diags.push(diag);
            }
        }
        skills.insert(name.value.clone(), skill);
    }
}

fn tama_tools() -> impl Iterator<Item = Tool> {
    Plugin::Tama.tools().filter(|tool| *tool != Tool::ReadSkill)
}

fn is_tama_tool(name: &str) -> bool {
    Tool::resolve(name).is_some_and(|tool| tool.plugin() == Plugin::Tama && tool != Tool::ReadSkill)
}

impl TamaLowering<'_, '_> {
    /// The tools an agent using `uses` is offered (`read_skill` and the tools the skills
    /// unlock, by name), the skills kept in the program for `read_skill`.
    pub(super) fn skill_tools(&mut self, uses: &[Spanned<String>]) -> Vec<String> {
        if uses.is_empty() {
            return Vec::new();
        }
        let mut tools = vec![Tool::ReadSkill.name().to_string()];
        for name in uses {
            let Some(skill) = self.skills.get(&name.value) else {
                continue;
            };
            let program = &mut self.builder.program;
            if !program.skills.iter().any(|known| known.name == name.value) {
                program.skills.push(Skill {
                    name: name.value.clone(),
                    description: skill.description.clone(),
                    body: skill.body.clone(),
                });
            }
            for tool in skill.tools.iter().filter(|tool| is_tama_tool(&tool.value)) {
                if let Some(tool) = Tool::resolve(&tool.value) {
                    let name = tool.name().to_string();
                    if !tools.contains(&name) {
                        tools.push(name);
                    }
                }
            }
        }
        tools
    }

    /// What an agent using `uses` is told after its instructions: each skill with its
    /// description, and how to read one.
    pub(super) fn skills_block(&self, uses: &[Spanned<String>]) -> String {
        if uses.is_empty() {
            return String::new();
        }
        let mut block = String::from("\n\n## Available skills\n");
        for name in uses {
            let description = self
                .skills
                .get(&name.value)
                .map_or("", |skill| skill.description.as_str());
            block.push_str(&format!("- `{}`: {description}\n", name.value));
        }
        block.push_str(
            "Call `read_skill` with a skill's name to read its instructions before you use it.",
        );
        block
    }
}
