//! A JSON string written byte for byte as `serde_json` writes it, its plain runs found eight
//! bytes at a time (`words::json_plain_end`) and copied whole: serde_json tests every byte
//! on its own, about 12 instructions a byte, and a run writes the same history text into
//! request bodies (`providers/openai_body.rs`) and the session log's message lines
//! (`checkpoint::write_message`).

use crate::words;

/// `text` as a quoted JSON string appended to `out`: `"` and `\` escaped with a backslash,
/// the C0 controls as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), every other
/// character as it is: what `serde_json::to_writer(out, text)` writes.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    let mut rest = text.as_bytes();
    out.reserve(rest.len() + 2);
    out.push(b'"');
    while let Some(at) = words::json_plain_end(rest) {
        out.extend_from_slice(&rest[..at]);
        write_escape(out, rest[at]);
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// The escape of `byte`, a `"`, `\` or control character: the two-byte form JSON has for
/// it, else `\u00XX` in lowercase hex.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// The character a two-byte JSON escape `\` + `byte` stands for (`\"`, `\\`, `\/`, `\b`,
/// `\f`, `\n`, `\r`, `\t`); `None` for `u` (four hex digits follow) and any other byte. The
/// stream reader decodes these (`providers/openai_chunk.rs`); the config reader's
/// `syntax::json` knows the same table.
pub(crate) fn short_escape(byte: u8) -> Option<char> {
    Some(match byte {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_escapes_are_the_config_readers() {
        for byte in 0..=u8::MAX {
            assert_eq!(
                short_escape(byte),
                fuseraft_compiler::syntax::json::short_escape(byte),
                "{byte}"
            );
        }
    }

    fn check(text: &str) {
        let mut ours = Vec::new();
        write_str(&mut ours, text);
        let theirs = serde_json::to_vec(text).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{text:?}"
        );
    }

    #[test]
    fn every_ascii_character_at_every_offset_of_two_words() {
        for byte in 0u8..=0x7F {
            let ch = char::from(byte);
            for offset in 0..17 {
                for tail in 0..3 {
                    let text = format!("{}{ch}{}", "a".repeat(offset), "b".repeat(tail));
                    check(&text);
                }
            }
        }
    }

    #[test]
    fn unicode_and_runs_of_escapes() {
        for text in [
            "",
            "\"",
            "\\",
            "\"\"\\\\\n\n\r\t",
            "é—→\u{7f}\u{80}\u{9b}\u{202e}\u{feff}😀",
            "### Planner (turn 0)\n\n## Summary\n\nI reviewed the state.\n**APPROVED**\n",
            "\u{0}\u{1}\u{1f}\u{20}\u{7e}\u{7f}",
            "ab\"cdefgh\\ijklmnop\u{1}qrstuvwx\n",
        ] {
            check(text);
        }
    }

    #[test]
    fn pseudo_random_texts() {
        // A fixed linear congruential sequence: every run checks the same texts.
        let alphabet: Vec<char> = "abcXYZ 09\"\\\n\r\t\u{0}\u{8}\u{c}\u{1f}\u{7f}é—€😀\u{2028}*_"
            .chars()
            .collect();
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let len = (state >> 58) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            check(&text);
        }
    }
}
