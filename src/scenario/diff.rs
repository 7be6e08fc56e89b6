//! A failing scenario's trace against its snapshot as a unified diff (`similar`'s Myers
//! line diff, three lines of context). Lines are compared as `str::lines` splits them, so a
//! missing final newline or a `\r\n` ending is no difference.

use similar::TextDiff;

/// `old` and `new` as a unified diff (`--- old_name`, `+++ new_name`, `@@` hunks with three
/// lines of context); empty when they are equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let old = normalized(old);
    let new = normalized(new);
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

/// Each line of `text` ended by one `\n`.
fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_hunks_have_context_and_ranges() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n";
        assert_eq!(
            unified(old, new, "a.snap", "a.snap.new"),
            "--- a.snap\n+++ a.snap.new\n@@ -3,7 +3,7 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n"
        );
        assert_eq!(unified(old, old, "a", "b"), "");
        // A one-line range is written without its count, as GNU diff writes it.
        assert_eq!(
            unified("", "x\n", "a", "b"),
            "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n"
        );
    }

    #[test]
    fn line_endings_are_no_difference() {
        assert_eq!(unified("a\nb", "a\r\nb\n", "a", "b"), "");
    }

    #[test]
    fn far_apart_changes_are_separate_hunks() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let new: String = (1..=20)
            .map(|n| match n {
                2 => "two\n".to_string(),
                19 => "nineteen\n".to_string(),
                n => format!("{n}\n"),
            })
            .collect();
        let diff = unified(&old, &new, "a", "b");
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
    }
}
