//! `fuseraft man`: every page it writes is rendered by the real `groff` (warnings on, any
//! warning fails) and read back through `man -l`, and carries its command's `--help`
//! examples. `groff` and `man` are installed by `.ci/diagram-deps.sh`; without them these
//! tests fail, naming it.

use std::path::Path;
use std::process::Command;

use super::{run, scratch, stderr, stdout, text};

/// Runs a renderer, failing with the script that installs it when it is missing.
fn render(program: &str, args: &[&str], page: &Path) -> std::process::Output {
    Command::new(program)
        .args(args)
        .arg(page)
        .env("MANWIDTH", "80")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run `{program}` ({error}): install it with `bash .ci/diagram-deps.sh`")
        })
}

/// The rendered text without its overstrikes (bold `X\bX`, underline `_\bX`), with
/// groff's typographic minus, quotes and hyphens back to ASCII.
fn plain(rendered: &[u8]) -> String {
    let mut text = String::new();
    for ch in String::from_utf8_lossy(rendered).chars() {
        if ch == '\u{8}' {
            text.pop();
        } else {
            text.push(ch);
        }
    }
    text.replace(['\u{2212}', '\u{2010}'], "-")
        .replace(['\u{2019}', '\u{2018}'], "'")
}

/// A line with its runs of blanks (groff's justification) as one space.
fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_page_renders_without_warnings_and_shows_its_examples() {
    let out = scratch("man");
    let output = run(&["man", "--out", text(&out)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let written: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    for name in [
        "fuseraft.1",
        "fuseraft-compile.1",
        "fuseraft-check.1",
        "fuseraft-exec.1",
        "fuseraft-test.1",
        "fuseraft-sessions.1",
        "fuseraft-sessions-list.1",
        "fuseraft-init.1",
        "fuseraft-completions.1",
        "fuseraft-man.1",
        "fuseraft-ui.1",
        "fuseraft-schema.1",
    ] {
        assert!(
            written.iter().any(|w| w == name),
            "{name} not in {written:?}"
        );
    }
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut listed = written.clone();
    listed.sort();
    assert_eq!(
        files, listed,
        "every page written is listed, and only those"
    );

    for name in &written {
        let page = out.join(name);
        let checked = render("groff", &["-man", "-Tutf8", "-ww", "-z"], &page);
        assert!(checked.status.success(), "{name}: {}", stderr(&checked));
        assert_eq!(stderr(&checked), "", "{name}: groff warns");
        let shown = render("man", &["-l", "-Tutf8"], &page);
        assert!(shown.status.success(), "{name}: {}", stderr(&shown));
        assert_eq!(stderr(&shown), "", "{name}: man warns");
        let shown = plain(&shown.stdout);
        // The page is the command's: its name and synopsis.
        let command = name.trim_end_matches(".1").replace('-', " ");
        assert!(shown.contains("NAME"), "{name}:\n{shown}");
        let synopsis = shown
            .lines()
            .skip_while(|line| *line != "SYNOPSIS")
            .nth(1)
            .map(squeeze);
        assert!(
            synopsis.is_some_and(|line| line.starts_with(&format!("{command} "))),
            "{name}:\n{shown}"
        );
        // The examples of `--help`, one per line as typed there.
        let mut args: Vec<&str> = command.split(' ').skip(1).collect();
        args.push("--help");
        let help = stdout(&run(&args));
        if let Some((_, examples)) = help.split_once("Examples:\n") {
            assert!(shown.contains("EXAMPLES"), "{name}:\n{shown}");
            for example in examples.lines().filter(|line| !line.trim().is_empty()) {
                let example = squeeze(example);
                assert!(
                    shown.lines().any(|line| squeeze(line) == example),
                    "{name}: example `{example}` not shown as a line of its own:\n{shown}"
                );
            }
        }
    }
}

#[test]
fn the_main_page_goes_to_standard_output_and_subcommand_pages_point_to_it() {
    let output = run(&["man", "--out", "-"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.starts_with(".ie"), "{page}");
    assert!(page.contains(".TH fuseraft 1"), "{page}");
    assert!(page.contains("fuseraft\\-exec(1)"), "{page}");
    let out = scratch("man-see-also");
    run(&["man", "--out", text(&out)]);
    let exec = std::fs::read_to_string(out.join("fuseraft-exec.1")).unwrap();
    assert!(exec.contains(".BR fuseraft (1)"), "{exec}");
    // Where the pages cannot be written, the command says so.
    let blocked = out.join("fuseraft.1").join("below-a-file");
    let failed = run(&["man", "--out", text(&blocked)]);
    assert_eq!(failed.status.code(), Some(2));
    assert!(
        stderr(&failed).contains("cannot create"),
        "{}",
        stderr(&failed)
    );
}
