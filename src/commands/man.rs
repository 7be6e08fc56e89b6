//! `fuseraft man`: the manual pages, generated from the clap types by `clap_mangen`:
//! `fuseraft.1` and one page per subcommand (`fuseraft-exec.1`, `fuseraft-sessions-list.1`,
//! ...), each with the examples its `--help` shows, written to a directory or, with
//! `--out -`, the main page to standard output.

use std::path::Path;

use clap::CommandFactory;

use super::exit;
use crate::cli::{Cli, ManArgs};

pub fn run(args: &ManArgs) -> u8 {
    if args.out == Path::new("-") {
        let page = page(&root());
        return super::print_or_fail(&page).unwrap_or(exit::OK);
    }
    match write_all(&args.out) {
        Ok(written) => {
            if let Some(hint) = manpath_hint(&args.out) {
                eprintln!("{hint}");
            }
            let listed: String = written.iter().map(|name| format!("{name}\n")).collect();
            super::print_or_fail(&listed).unwrap_or(exit::OK)
        }
        Err(message) => {
            eprintln!("error: {message}");
            exit::USAGE
        }
    }
}

/// How to make `man` find pages written to `out`, when it would not: man-db searches
/// `MANPATH` when it is set, else `share/man` and `man` beside each `bin` of `PATH`, plus
/// the system's directories (so `~/.local/share/man` is searched only while `~/.local/bin`
/// is on `PATH`, which Debian's default shell setup adds only once that directory exists).
fn manpath_hint(out: &Path) -> Option<String> {
    let out = std::fs::canonicalize(out).ok()?;
    // A `manN` section directory belongs to the tree above it.
    let tree = match out.file_name().and_then(|name| name.to_str()) {
        Some(name) if name.starts_with("man") && name.len() > 3 => out.parent()?.to_path_buf(),
        _ => out.clone(),
    };
    let searched = searched_trees(
        std::env::var_os("MANPATH").as_deref(),
        std::env::var_os("PATH").as_deref(),
    );
    if searched
        .iter()
        .any(|dir| std::fs::canonicalize(dir).ok().as_ref() == Some(&tree))
    {
        return None;
    }
    let tree = tree.display();
    Some(format!(
        "note: `man` does not search `{tree}` yet; add it to MANPATH (the trailing `:` keeps the system's pages):\n  export MANPATH=\"{tree}:$MANPATH\"\nor read a page with `man -M {tree} fuseraft-exec`"
    ))
}

/// The manual trees `man` searches for `manpath` and `path` (the environment's values).
fn searched_trees(
    manpath: Option<&std::ffi::OsStr>,
    path: Option<&std::ffi::OsStr>,
) -> Vec<std::path::PathBuf> {
    let mut trees: Vec<std::path::PathBuf> = Vec::new();
    let defaults = [
        "/usr/local/share/man",
        "/usr/share/man",
        "/usr/local/man",
        "/usr/man",
    ];
    match manpath.filter(|value| !value.is_empty()) {
        Some(manpath) => {
            for dir in std::env::split_paths(manpath) {
                if dir.as_os_str().is_empty() {
                    // An empty entry stands for the default search path.
                    trees.extend(defaults.iter().map(std::path::PathBuf::from));
                } else {
                    trees.push(dir);
                }
            }
        }
        None => {
            for bin in path.map(std::env::split_paths).into_iter().flatten() {
                if let Some(parent) = bin.parent() {
                    trees.push(parent.join("share/man"));
                    trees.push(parent.join("man"));
                }
            }
            trees.extend(defaults.iter().map(std::path::PathBuf::from));
        }
    }
    trees
}

/// The command tree as the pages describe it: built (so every subcommand knows its full
/// name), without clap's `help` subcommand, which has no page of its own.
fn root() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// Writes the page of every visible command under `out` (created when missing); returns
/// the file names written, the main page first.
fn write_all(out: &Path) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create `{}`: {error}", out.display()))?;
    let mut written = Vec::new();
    let mut pending = vec![root()];
    while let Some(command) = pending.pop() {
        let children: Vec<clap::Command> = command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .cloned()
            .collect();
        let name = clap_mangen::Man::new(command.clone()).get_filename();
        let path = out.join(&name);
        std::fs::write(&path, page(&command))
            .map_err(|error| format!("cannot write `{}`: {error}", path.display()))?;
        written.push(name);
        pending.extend(children.into_iter().rev());
    }
    Ok(written)
}

/// One command's page: clap_mangen's sections, with its `--help` examples as an EXAMPLES
/// section set line for line (clap_mangen's own "EXTRA" section would refill them into one
/// paragraph), and a SEE ALSO pointing a subcommand's page at the main one.
pub fn page(command: &clap::Command) -> String {
    let man = clap_mangen::Man::new(command.clone()).manual("fuseraft manual");
    let mut out = Vec::new();
    let rendered = (|| -> std::io::Result<()> {
        man.render_title(&mut out)?;
        man.render_name_section(&mut out)?;
        man.render_synopsis_section(&mut out)?;
        man.render_description_section(&mut out)?;
        if command.get_arguments().any(|arg| !arg.is_hide_set()) {
            man.render_options_section(&mut out)?;
        }
        if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
            man.render_subcommands_section(&mut out)?;
        }
        Ok(())
    })();
    // Writing to a vector does not fail.
    debug_assert!(rendered.is_ok());
    // Each section rendered alone repeats roff's apostrophe preamble: kept once, first.
    let rendered = String::from_utf8_lossy(&out);
    let preamble: String = rendered.split_inclusive('\n').take(2).collect();
    let mut page = preamble.clone();
    page.push_str(&rendered[preamble.len()..].replace(&preamble, ""));
    if let Some(examples) = command.get_after_help() {
        page.push_str(&examples_section(&examples.to_string()));
    }
    let name = command
        .get_display_name()
        .unwrap_or_else(|| command.get_name());
    if name != "fuseraft" {
        page.push_str(".SH \"SEE ALSO\"\n.BR fuseraft (1)\n");
    }
    if let Some(version) = command.get_version() {
        page.push_str(&format!(".SH VERSION\nv{}\n", escape(version)));
    }
    page
}

/// The `Examples:` text of a `--help` as a no-fill EXAMPLES section.
fn examples_section(text: &str) -> String {
    let mut section = String::from(".SH EXAMPLES\n.nf\n");
    for line in text.lines().filter(|line| line.trim_end() != "Examples:") {
        section.push_str(&escape(line.strip_prefix("  ").unwrap_or(line)));
        section.push('\n');
    }
    section.push_str(".fi\n");
    section
}

/// Text as a roff text line: backslashes, hyphen-minus and apostrophes as the characters
/// typed, and a leading control character made literal.
fn escape(line: &str) -> String {
    let escaped = line
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\(aq");
    if escaped.starts_with('.') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_lines_keep_their_characters_and_cannot_become_requests() {
        assert_eq!(
            escape(r"fuseraft check 'teams/**/*.yaml' --format a\b"),
            r"fuseraft check \(aqteams/**/*.yaml\(aq \-\-format a\eb"
        );
        assert_eq!(escape(".SH oops"), r"\&.SH oops");
        let section = examples_section("Examples:\n  fuseraft init\n  fuseraft check .");
        assert_eq!(
            section,
            ".SH EXAMPLES\n.nf\nfuseraft init\nfuseraft check .\n.fi\n"
        );
    }
}
