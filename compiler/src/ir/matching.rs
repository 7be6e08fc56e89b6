//! What signal triggers mean on real text: the three matchers, and all of a state's signals
//! tested in one pass over a reply. Shared by the VM (routing) and `check` (shadowing,
//! counterexamples), so both agree by construction.
//!
//! Reference: `research/fuseraft-semantics.md` §2 (matchers).

use super::Matcher;

impl Matcher {
    /// Does `text` (a whole reply) carry `keyword` on one of its lines?
    pub fn finds(self, text: &str, keyword: &str) -> bool {
        text.split('\n')
            .any(|line| self.matches_line(line, keyword))
    }

    /// Which of `signals` (keyword and matcher) `text` carries: one pass over the reply's
    /// lines for all of them, with the same answers as [`Matcher::finds`] for each.
    ///
    /// A relaxed keyword can only match a line that starts (past whitespace, `*` and `_`)
    /// with the keyword's own first character, so each line is compared only with the
    /// keywords its first character selects; strict and exact keywords meet every line.
    pub fn find_all(text: &str, signals: &[(&str, Matcher)]) -> Vec<bool> {
        if signals.is_empty() || signals.len() > 64 {
            return signals
                .iter()
                .map(|(keyword, matcher)| matcher.finds(text, keyword))
                .collect();
        }
        let mut found = vec![false; signals.len()];
        // Bit `i` stands for `signals[i]`.
        let mut by_ascii = [0u64; 128]; // relaxed keywords by their ASCII first character
        let mut wide = 0u64; // relaxed keywords whose first character is not ASCII
        let mut relaxed = 0u64; // every relaxed keyword that can match at all
        let mut always = 0u64; // strict and exact keywords
        let mut firsts = [' '; 64];
        for (idx, (keyword, matcher)) in signals.iter().enumerate() {
            let bit = 1u64 << idx;
            match (matcher, significant_lead(keyword).map(fold_ascii)) {
                (Matcher::Relaxed, None) => {} // an empty keyword matches no line
                (Matcher::Relaxed, Some(first)) => {
                    relaxed |= bit;
                    firsts[idx] = first;
                    if first.is_ascii() {
                        by_ascii[first as usize] |= bit;
                    } else {
                        wide |= bit;
                    }
                }
                _ => always |= bit,
            }
        }
        // The keywords of `mask` whose first character equals `lead` under Unicode folding
        // (the Kelvin sign and `k`).
        let folding = |mut mask: u64, lead: char| {
            let mut equal = 0;
            while mask != 0 {
                let idx = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if same_letter(lead, firsts[idx]) {
                    equal |= 1 << idx;
                }
            }
            equal
        };
        let mut pending = u64::MAX >> (64 - signals.len());
        let mut start = 0;
        // Line ends, found with SIMD; the text's end closes the last line.
        for end in memchr::memchr_iter(b'\n', text.as_bytes()).chain(Some(text.len())) {
            // `\n` is one byte and never inside a character: slicing there is safe.
            let line = &text[start..end];
            start = end + 1;
            let selected = match significant_lead(line).map(fold_ascii) {
                None => 0,
                Some(lead) if lead.is_ascii() => by_ascii[lead as usize] | folding(wide, lead),
                Some(lead) => folding(relaxed, lead),
            };
            let mut worth = (selected | always) & pending;
            while worth != 0 {
                let idx = worth.trailing_zeros() as usize;
                worth &= worth - 1;
                let (keyword, matcher) = signals[idx];
                if matcher.matches_line(line, keyword) {
                    found[idx] = true;
                    pending &= !(1 << idx);
                }
            }
            if pending == 0 {
                break;
            }
        }
        found
    }

    /// Does one line carry `keyword` under this matcher? All three ignore case.
    pub fn matches_line(self, line: &str, keyword: &str) -> bool {
        match self {
            Matcher::Relaxed => relaxed_line(line, keyword),
            Matcher::Strict => strict_line(line, keyword),
            Matcher::Exact => {
                line.trim().eq_ignore_ascii_case(keyword) || eq_ignore_case(line.trim(), keyword)
            }
        }
    }
}

/// The first character the relaxed matcher compares: past whitespace, `*` and `_`.
fn significant_lead(text: &str) -> Option<char> {
    for (at, byte) in text.bytes().enumerate() {
        match byte {
            b' ' | 0x09..=0x0D | b'*' | b'_' => {}
            0..=0x7F => return Some(char::from(byte)),
            _ => {
                return text[at..]
                    .chars()
                    .find(|ch| !ch.is_whitespace() && *ch != '*' && *ch != '_')
            }
        }
    }
    None
}

/// ASCII letters in lower case; lowering an ASCII letter never changes how
/// [`same_letter`] compares it.
fn fold_ascii(ch: char) -> char {
    ch.to_ascii_lowercase()
}

/// The relaxed matcher's comparison of one character.
fn same_letter(actual: char, expected: char) -> bool {
    actual == expected
        || actual.eq_ignore_ascii_case(&expected)
        || (!actual.is_ascii() || !expected.is_ascii())
            && actual.to_lowercase().eq(expected.to_lowercase())
}

pub(super) fn eq_ignore_case(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// Keyword and state-machine routing: trim, delete every `*` and `_`, trim again; the line
/// equals the keyword, or starts with it followed by whitespace or punctuation.
///
/// The keyword is normalised the same way, so `DEPLOYMENT_COMPLETE` matches the line
/// `DEPLOYMENT_COMPLETE`. Upstream normalises only the line, which makes such keywords
/// unmatchable in text; fuseraft follows upstream's docs here (`docs/semantics.md`), and
/// `fuseraft check` warns (FR308) that upstream cannot see them.
fn relaxed_line(line: &str, keyword: &str) -> bool {
    if line.is_ascii() && keyword.is_ascii() {
        relaxed_ascii(line.as_bytes(), keyword.as_bytes())
    } else {
        relaxed_chars(line, keyword)
    }
}

/// [`relaxed_line`] on any text, character by character.
fn relaxed_chars(line: &str, keyword: &str) -> bool {
    let markdown = |ch: &char| *ch != '*' && *ch != '_';
    // The keyword, normalised like the line; it rarely holds `*` or `_`, so only then is a
    // normalised copy made.
    let normalised;
    let keyword = if keyword.contains(['*', '_']) {
        normalised = keyword.chars().filter(markdown).collect::<String>();
        normalised.trim()
    } else {
        keyword.trim()
    };
    if keyword.is_empty() {
        return false;
    }
    // The line without `*`/`_` and without leading whitespace, compared as it streams by.
    let mut rest = line
        .chars()
        .filter(markdown)
        .skip_while(|ch| ch.is_whitespace());
    for expected in keyword.chars() {
        match rest.next() {
            Some(actual) if same_letter(actual, expected) => {}
            _ => return false,
        }
    }
    match rest.next() {
        None => true,
        Some(next) => next.is_whitespace() || is_punctuation(next),
    }
}

/// [`relaxed_line`] on ASCII text, byte by byte, with no copy of the keyword.
fn relaxed_ascii(line: &[u8], keyword: &[u8]) -> bool {
    // `char::is_whitespace` on ASCII.
    let space = |byte: &u8| matches!(byte, b' ' | 0x09..=0x0D);
    let markdown = |byte: &u8| *byte == b'*' || *byte == b'_';
    // The keyword without `*`/`_`, trimmed: its end is past the last other byte.
    let Some(end) = keyword
        .iter()
        .rposition(|byte| !space(byte) && !markdown(byte))
    else {
        return false;
    };
    let expected = keyword[..=end]
        .iter()
        .filter(|byte| !markdown(byte))
        .skip_while(|byte| space(byte));
    let mut rest = line
        .iter()
        .filter(|byte| !markdown(byte))
        .skip_while(|byte| space(byte));
    for want in expected {
        match rest.next() {
            Some(actual) if actual.eq_ignore_ascii_case(want) => {}
            _ => return false,
        }
    }
    match rest.next() {
        None => true,
        Some(next) => space(next) || is_punctuation(char::from(*next)),
    }
}

/// .NET `char.IsPunctuation`: the Unicode categories Pc, Pd, Ps, Pe, Pi, Pf, Po. Math,
/// currency and modifier symbols (`+ = < > | ~ ^ $` and backtick) are not punctuation.
pub fn is_punctuation(ch: char) -> bool {
    if ch.is_ascii() {
        return matches!(
            ch,
            '!' | '"'
                | '#'
                | '%'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '_'
                | '{'
                | '}'
        );
    }
    matches!(
        ch,
        '¡' | '§' | '«' | '¶' | '·' | '»' | '¿' | '‐'..='‧' | '‰'..='‸' | '‹' | '›' | '※'..='⁞'
            | '、' | '。' | '〃' | '〈'..='】' | '〔'..='〟' | '＂' | '（' | '）' | '，' | '－' | '．'
            | '：' | '；' | '？' | '！'
    )
}

/// Graph and workflow routing: trim whitespace, then trim `*`, `_` and spaces from both ends;
/// what remains must equal the keyword.
fn strict_line(line: &str, keyword: &str) -> bool {
    let trimmed = line
        .trim()
        .trim_matches(|ch| ch == '*' || ch == '_' || ch == ' ');
    eq_ignore_case(trimmed, keyword)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_matches_the_documented_cases() {
        let yes = [
            "APPROVED",
            "APPROVED.",
            "APPROVED: text",
            "APPROVED All good",
            "**APPROVED**",
            "APPROVED-ish",
            "  approved  ",
            "A_P_P_R_O_V_E_D",
        ];
        let no = [
            "APPROVEDX",
            "APPROVED+",
            "Status: APPROVED",
            "- APPROVED",
            "> APPROVED",
            "`APPROVED`",
            "APPROVED=1",
        ];
        for line in yes {
            assert!(
                Matcher::Relaxed.matches_line(line, "APPROVED"),
                "{line:?} should match"
            );
        }
        for line in no {
            assert!(
                !Matcher::Relaxed.matches_line(line, "APPROVED"),
                "{line:?} should not match"
            );
        }
        // Underscores are removed from the line and from the keyword (as upstream's docs say; upstream
        // removes them from the line only).
        assert!(Matcher::Relaxed.matches_line("DEPLOYMENT_COMPLETE", "DEPLOYMENT_COMPLETE"));
        assert!(Matcher::Relaxed.matches_line("**DEPLOYMENT_COMPLETE**", "DEPLOYMENT_COMPLETE"));
        assert!(!Matcher::Relaxed.matches_line("DEPLOYMENT", "DEPLOYMENT_COMPLETE"));
        assert!(Matcher::Relaxed.finds("Done.\nHANDOFF TO TESTER\n", "handoff to tester"));
    }

    #[test]
    fn relaxed_ascii_path_agrees_with_the_general_one() {
        let pieces = [
            "", " ", "\t", "*", "_", "a", "A", "b", "ab", "AB", ".", "+", "\x0b",
        ];
        let joined = |count: usize| {
            let mut texts = vec![String::new()];
            for _ in 0..count {
                texts = texts
                    .iter()
                    .flat_map(|text| pieces.iter().map(move |piece| format!("{text}{piece}")))
                    .collect();
            }
            texts
        };
        let keywords = joined(2);
        for line in joined(3) {
            for keyword in &keywords {
                assert_eq!(
                    relaxed_ascii(line.as_bytes(), keyword.as_bytes()),
                    relaxed_chars(&line, keyword),
                    "line {line:?}, keyword {keyword:?}"
                );
            }
        }
    }

    #[test]
    fn find_all_agrees_with_finds_per_signal() {
        let text = "Intro line mentioning APPROVED inline.\n  **approved**  \n_Bugs found_: 2\n\
                    HANDOFF TO TESTER\n\u{212A}ELVIN done\n\u{e9}t\u{e9} fini\n__\n";
        let keywords = [
            "APPROVED",
            "BUGS FOUND",
            "HANDOFF TO TESTER",
            "HANDOFF TO DEVELOPER",
            "kelvin done",
            "\u{c9}T\u{c9} FINI",
            "**",
            "*_ approved _*",
            "",
        ];
        for matcher in [Matcher::Relaxed, Matcher::Strict, Matcher::Exact] {
            let signals: Vec<(&str, Matcher)> =
                keywords.iter().map(|keyword| (*keyword, matcher)).collect();
            let found = Matcher::find_all(text, &signals);
            for (keyword, hit) in keywords.iter().zip(found) {
                assert_eq!(hit, matcher.finds(text, keyword), "{matcher:?} {keyword:?}");
            }
        }
        // Matchers mixed in one list, and more signals than the one-pass bit set holds.
        let matchers = [Matcher::Relaxed, Matcher::Strict, Matcher::Exact];
        for count in [keywords.len() * 3, 70] {
            let signals: Vec<(&str, Matcher)> = (0..count)
                .map(|idx| (keywords[idx % keywords.len()], matchers[idx % 3]))
                .collect();
            let found = Matcher::find_all(text, &signals);
            for ((keyword, matcher), hit) in signals.iter().zip(found) {
                assert_eq!(hit, matcher.finds(text, keyword), "{matcher:?} {keyword:?}");
            }
        }
        let relaxed = |keyword| Matcher::Relaxed.finds(text, keyword);
        assert!(relaxed("APPROVED") && relaxed("BUGS FOUND") && relaxed("kelvin done"));
        assert!(relaxed("\u{c9}T\u{c9} FINI") && relaxed("*_ approved _*"));
        assert!(!relaxed("HANDOFF TO DEVELOPER") && !relaxed("**") && !relaxed(""));
    }

    #[test]
    fn strict_and_exact_match_the_documented_cases() {
        for line in ["APPROVED", "** APPROVED **", "__APPROVED__", " approved "] {
            assert!(Matcher::Strict.matches_line(line, "APPROVED"), "{line:?}");
        }
        assert!(Matcher::Strict.matches_line("__PLANNING_COMPLETE__", "PLANNING_COMPLETE"));
        for line in ["APPROVED.", "BUGS FOUND: 3 failures", "*\tAPPROVED"] {
            assert!(
                !Matcher::Strict.matches_line(
                    line,
                    if line.starts_with("BUGS") {
                        "BUGS FOUND"
                    } else {
                        "APPROVED"
                    }
                ),
                "{line:?}"
            );
        }
        assert!(Matcher::Exact.matches_line("  APPROVED ", "approved"));
        assert!(!Matcher::Exact.matches_line("**APPROVED**", "APPROVED"));
    }
}
