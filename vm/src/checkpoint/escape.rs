//! A message's content as a JSON string, byte for byte as serde_json writes it, passing over
//! eight bytes at a time that need no escape (issue 17: serde_json tests every byte of a
//! reply on its own, about 12 instructions a byte, the largest cost of a durable turn after
//! its MAC). Only the session log's message lines use it ([`super::write_message`]).

/// `text` as a quoted JSON string appended to `out`: `"` and `\` escaped with a backslash,
/// the C0 controls as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), every other
/// character as it is: what `serde_json::to_writer(out, text)` writes.
pub(super) fn write_str(text: &str, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `bytes[run..at]` is written as it is once an escape (or the end) is reached.
    let mut run = 0;
    let mut at = 0;
    loop {
        // Eight bytes at a time up to the first that needs an escape.
        while let Some(word) = bytes
            .get(at..at + 8)
            .and_then(|chunk| <[u8; 8]>::try_from(chunk).ok())
        {
            let found = escapes(u64::from_le_bytes(word));
            if found != 0 {
                at += (found.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        let Some(&byte) = bytes.get(at) else {
            break;
        };
        at += 1;
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0C => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1F => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&bytes[run..at - 1]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xF)]);
                run = at;
                continue;
            }
            // The tail shorter than a word, tested byte by byte.
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..at - 1]);
        out.extend_from_slice(escape);
        run = at;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// The bytes of `word` (little-endian) that are `"`, `\` or below 0x20: the high bit of
/// each such byte set, every other bit clear. Exact per byte: the sums never carry from one
/// byte into the next.
fn escapes(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const LOW: u64 = ONES * 0x7F;
    const HIGH: u64 = ONES * 0x80;
    // A byte below `n` (1 to 0x80): its high bit is clear, and its low seven bits plus
    // `0x80 - n` stay below 0x80 (they never pass 0xFE, so nothing carries on).
    let below = |value: u64, n: u64| !(((value & LOW) + ONES * (0x80 - n)) | value) & HIGH;
    // A zero byte: below 1.
    let zero = |value: u64| below(value, 1);
    below(word, 0x20)
        | zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) {
        let mut ours = Vec::new();
        write_str(text, &mut ours);
        let theirs = serde_json::to_vec(text).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{text:?}"
        );
    }

    #[test]
    fn the_word_test_marks_exactly_the_bytes_to_escape() {
        let reference = |byte: u8| byte < 0x20 || byte == b'"' || byte == b'\\';
        for byte in 0..=u8::MAX {
            for position in 0..8 {
                for filler in [b'a', b' ', 0x7F, 0x80, 0xFF, b'"', 0x1F] {
                    let mut word = [filler; 8];
                    word[position] = byte;
                    let expected = word.iter().enumerate().fold(0u64, |mask, (idx, &b)| {
                        mask | (u64::from(reference(b)) << (8 * idx + 7))
                    });
                    assert_eq!(escapes(u64::from_le_bytes(word)), expected, "{word:?}");
                }
            }
        }
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
        let alphabet: Vec<char> = "abcXYZ 09\"\\\n\r\t\u{0}\u{8}\u{c}\u{1f}\u{7f}é—😀*_"
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
