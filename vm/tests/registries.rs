//! Every registry (closed set owned by `ir`), member by member: the compiler reads the
//! member's written name back to that member, and `docs/` names it, so a name a user finds
//! in the docs is one the compiler accepts and the VM runs (the VM matches the enums
//! exhaustively; `every_registered_name_runs` runs each validator, and every tool is offered
//! to a model under its own name and plugin).

use std::path::Path;

use fuseraft_compiler::ir::{
    Action, Capability, Category, ContextSource, Merge, Plugin, PredicateType, Preset, SandboxMode,
    SelectionKind, SourceKind, Tool, Validator,
};

/// Every `docs/*.md` page and the README, as one text.
fn docs() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "md") {
            text.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    text
}

/// One registry: each member's written name, and whether the compiler reads it back to it.
struct Registry {
    name: &'static str,
    members: Vec<(String, bool)>,
}

fn registry<T: Copy + PartialEq>(
    name: &'static str,
    all: &[T],
    written: impl Fn(T) -> String,
    parse: impl Fn(&str) -> Option<T>,
) -> Registry {
    Registry {
        name,
        members: all
            .iter()
            .map(|&member| {
                let text = written(member);
                let back = parse(&text) == Some(member);
                (text, back)
            })
            .collect(),
    }
}

fn registries() -> Vec<Registry> {
    vec![
        registry(
            "validators",
            Validator::ALL,
            |v| v.name().into(),
            Validator::parse,
        ),
        registry(
            "predicate types",
            PredicateType::ALL,
            |p| p.name().into(),
            PredicateType::parse,
        ),
        registry("tools", Tool::ALL, |t| t.name().into(), Tool::resolve),
        registry("plugins", Plugin::ALL, |p| p.as_str().into(), Plugin::parse),
        registry(
            "capability tags",
            Capability::ALL,
            |c| c.as_str().into(),
            Capability::parse,
        ),
        registry(
            "permission categories",
            Category::ALL,
            |c| c.key().into(),
            Category::parse,
        ),
        registry(
            "permission actions",
            Action::ALL,
            |a| a.as_str().into(),
            Action::parse,
        ),
        registry(
            "permission presets",
            Preset::ALL,
            |p| p.as_str().into(),
            Preset::parse,
        ),
        registry(
            "sandbox modes",
            SandboxMode::ALL,
            |m| m.as_str().into(),
            SandboxMode::parse,
        ),
        registry(
            "merge strategies",
            Merge::ALL,
            |m| m.as_str().into(),
            Merge::parse,
        ),
        registry(
            "selection kinds",
            SelectionKind::ALL,
            |k| k.as_str().into(),
            SelectionKind::parse,
        ),
        Registry {
            name: "context sources",
            members: SourceKind::NAMES
                .iter()
                .map(|&name| {
                    let source = ContextSource {
                        source: format!("{name}:x"),
                        max_chars: 0,
                        label: None,
                    };
                    (
                        name.to_string(),
                        !matches!(source.kind(), SourceKind::Other(_)),
                    )
                })
                .collect(),
        },
    ]
}

#[test]
fn every_registry_member_is_read_back_by_the_compiler_and_named_in_the_docs() {
    let docs = docs();
    let mut failures = Vec::new();
    for registry in registries() {
        assert!(
            !registry.members.is_empty(),
            "{} has no members",
            registry.name
        );
        for (name, read_back) in &registry.members {
            if !read_back {
                failures.push(format!(
                    "{}: the compiler does not read `{name}` back",
                    registry.name
                ));
            }
            if !docs.contains(name.as_str()) {
                failures.push(format!(
                    "{}: no page of docs/ names `{name}`",
                    registry.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A name the compiler does not know is read as no member (so the lowering reports it),
/// never as a near one.
#[test]
fn a_misspelled_name_is_no_member() {
    assert_eq!(Validator::parse("ArchitectureValidatr"), None);
    assert_eq!(Merge::parse("unoin"), None);
    assert_eq!(SandboxMode::parse("wran"), None);
    assert_eq!(Category::parse("git_wrte"), None);
    let source = ContextSource {
        source: "brief_feild:goal".into(),
        max_chars: 0,
        label: None,
    };
    assert!(matches!(source.kind(), SourceKind::Other(_)));
}

/// The VM's side of the tools registry: every tool the compiler can name is offered to a
/// model with its own name and an object schema, under the plugin the compiler files it in.
#[test]
fn every_tool_the_compiler_names_the_vm_offers_under_its_plugin() {
    for &tool in Tool::ALL {
        let schemas = fuseraft_vm::tools::schemas_of(&[tool]);
        assert_eq!(schemas.len(), 1, "{tool:?}");
        assert_eq!(schemas[0].name, tool.name(), "{tool:?}");
        assert_eq!(schemas[0].parameters["type"], "object", "{tool:?}");
        let plugin = tool.plugin().as_str().to_string();
        let offered = fuseraft_vm::tools::schemas(std::slice::from_ref(&plugin));
        assert!(
            offered.iter().any(|schema| schema.name == tool.name()),
            "`{}` is not offered under its plugin `{plugin}`",
            tool.name()
        );
    }
}
