//! Build script: turns each rule's `///` line in `grammar/ir.pest` into `describe`, the
//! words a `.fir` syntax error uses for what it expected, so a new rule needs its words in
//! the grammar and nowhere else.

use std::fmt::Write as _;
use std::path::Path;

const GRAMMAR: &str = "../grammar/ir.pest";

fn main() {
    println!("cargo:rerun-if-changed={GRAMMAR}");
    let text = std::fs::read_to_string(GRAMMAR)
        .unwrap_or_else(|error| panic!("{GRAMMAR}: cannot read the grammar: {error}"));
    let mut arms = String::from("        Rule::EOI => \"end of input\",\n");
    let mut doc: Option<&str> = None;
    for (idx, line) in text.lines().enumerate() {
        if let Some(words) = line.strip_prefix("///") {
            doc = Some(words.trim());
            continue;
        }
        if let Some(rule) = rule_name(line) {
            let Some(words) = doc.filter(|words| !words.is_empty()) else {
                panic!(
                    "{GRAMMAR}:{}: rule `{rule}` has no `///` line above it saying in words what \
                     it is (a `.fir` syntax error names the rules it expected with them)",
                    idx + 1
                );
            };
            let _ = writeln!(arms, "        Rule::{rule} => {words:?},");
        }
        doc = None;
    }
    let code = format!(
        "/// A rule in words, for error messages: its `///` line in `grammar/ir.pest`.\n\
         fn describe(rule: Rule) -> &'static str {{\n    match rule {{\n{arms}    }}\n}}\n"
    );
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    std::fs::write(Path::new(&out).join("ir_rule_words.rs"), code)
        .unwrap_or_else(|error| panic!("cannot write the rule words: {error}"));
}

/// `name` of a line `name = { ... }` (or `_{`, `@{`, `${`, `!{`) that starts a rule.
fn rule_name(line: &str) -> Option<&str> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, rest) = line.split_once('=')?;
    let name = name.trim_end();
    let named = !name.is_empty()
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    let rest = rest.trim_start();
    let body = rest.strip_prefix(['_', '@', '$', '!']).unwrap_or(rest);
    (named && body.starts_with('{')).then_some(name)
}
