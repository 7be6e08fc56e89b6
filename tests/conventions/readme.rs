//! The README's command list names every subcommand and every long flag the command line
//! takes, so a user reading it learns of each (`fuseraft --help` has the details).

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
