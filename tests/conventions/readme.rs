//! The README's command list names every subcommand and every long flag the command line
//! takes, so a user reading it learns of each (`fuseraft --help` has the details); the docs
//! point to no design notes outside the repository.

use clap::CommandFactory;

#[test]
fn the_readme_lists_every_command_and_flag() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme.find("## Commands").expect("a `## Commands` section");
    let section = &readme[start..];
    let list = section
        .split("```")
        .nth(1)
        .expect("the command list is a code block");
    let mut missing = Vec::new();
    let cli = fuseraft::cli::Cli::command();
    for command in cli.get_subcommands() {
        let name = command.get_name();
        if !list.contains(&format!("fuseraft {name}")) {
            missing.push(format!("`fuseraft {name}`"));
        }
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || arg.is_hide_set() {
                continue;
            }
            if !list.contains(&format!("--{long}")) {
                missing.push(format!("`fuseraft {name} --{long}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the README's command list lacks: {}",
        missing.join(", ")
    );
}

/// The docs a user reads are in the repository: no link to design notes that are not
/// (the replay file's format has its own page, which the README links).
#[test]
fn the_docs_name_no_design_notes_outside_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("a docs entry").path();
        if path.extension().is_some_and(|ext| ext == "md") {
            pages.push(path);
        }
    }
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a readable page");
        assert!(
            !text.contains("DESIGN.md"),
            "{} points to DESIGN.md, which is not in the repository",
            page.display()
        );
    }
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(
        readme.contains("(docs/replay-format.md)"),
        "the README links the replay format"
    );
    assert!(root.join("docs/replay-format.md").exists());
}
