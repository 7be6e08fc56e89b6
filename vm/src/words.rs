//! Searching bytes eight at a time: the shared loop of the hot searches (the end of an SSE
//! line, the end of a JSON string's plain run, read from a stream or written into a request
//! body or the session log).

/// `0x01` in every byte of a word.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bits of the bytes of `word` equal to `byte`, plus perhaps some above one of
/// them (a borrow only flags bytes above a true one, so the lowest flag is always true).
pub(crate) fn equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The offset of the first byte of `bytes` that `is` picks out. `flags` gives, for a
/// little-endian word of eight of them, the high bits of those bytes, where the lowest
/// flagged byte must always be a true one (flags above it may be false).
pub(crate) fn first(
    bytes: &[u8],
    flags: impl Fn(u64) -> u64,
    is: impl Fn(u8) -> bool,
) -> Option<usize> {
    let mut at = 0;
    while let Some(eight) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        let flagged = flags(u64::from_le_bytes(word));
        if flagged != 0 {
            return Some(at + (flagged.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&byte| is(byte))
        .map(|offset| at + offset)
}

/// Where a JSON string's plain run ends in `bytes`: the offset of the first `"`, `\\` or
/// control character (exactly the bytes a JSON writer escapes), looked for eight bytes at a
/// time.
pub(crate) fn json_plain_end(bytes: &[u8]) -> Option<usize> {
    first(bytes, json_stops, |byte| STOPS[usize::from(byte)])
}

/// The length of a JSON string's text (`bytes` starts after its opening quote) when it is at
/// most eight ASCII bytes with nothing escaped (the usual streamed token), read in one word;
/// `None` otherwise, and when `bytes` is shorter than a word.
pub(crate) fn short_ascii_string(bytes: &[u8]) -> Option<usize> {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes.get(..8)?);
    let word = u64::from_le_bytes(word);
    // The plain run's stops and bytes above ASCII: the lowest flag is a true one.
    let flagged = json_stops(word) | word & HIGHS;
    let at = (flagged.trailing_zeros() / 8) as usize;
    (bytes.get(at) == Some(&b'"')).then_some(at)
}

/// The high bits of the bytes of `word` that end a JSON string's plain run (`"`, `\\`, or
/// below 0x20), plus perhaps some above the first (a borrow out of a byte only comes from one
/// below 0x20, and `equal`'s only flag bytes above a true one).
fn json_stops(word: u64) -> u64 {
    equal(word, b'"') | equal(word, b'\\') | word.wrapping_sub(ONES * 0x20) & !word & HIGHS
}

/// The bytes that end a plain run of a JSON string.
const STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stops[byte] = true;
        byte += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_a_time_plain_end_finds_what_a_byte_at_a_time_search_finds() {
        let reference = |bytes: &[u8]| bytes.iter().position(|&byte| STOPS[usize::from(byte)]);
        // Every stop byte and its neighbours, at every offset of a run of plain bytes.
        for special in [
            0x00, 0x1f, 0x20, 0x21, b'"', b'#', b'\\', b']', 0x7f, 0x80, 0xe2, 0xff,
        ] {
            for plain in [b'a', 0x20, 0x21, 0x5b, 0x5d, 0xc3] {
                for at in 0..20 {
                    let mut bytes = vec![plain; 20];
                    bytes[at] = special;
                    for cut in 0..=bytes.len() {
                        assert_eq!(
                            json_plain_end(&bytes[..cut]),
                            reference(&bytes[..cut]),
                            "{bytes:?} cut at {cut}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_short_ascii_string_is_read_in_one_word_as_a_byte_at_a_time_read_would() {
        // Some(len) exactly when the text is ASCII, unescaped and closed within nine bytes.
        let reference = |bytes: &[u8]| {
            let end = bytes
                .iter()
                .position(|&byte| STOPS[usize::from(byte)] || !byte.is_ascii())?;
            (bytes.len() >= 8 && end <= 8 && bytes[end] == b'"').then_some(end)
        };
        for special in [
            b'"', b'\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xe2, 0xff, b'a',
        ] {
            for other in [b'"', b'\\', 0x01, 0x80, b'z'] {
                for at in 0..12 {
                    for second in 0..12 {
                        let mut bytes = vec![b'x'; 12];
                        bytes[second] = other;
                        bytes[at] = special;
                        for cut in 0..=bytes.len() {
                            assert_eq!(
                                short_ascii_string(&bytes[..cut]),
                                reference(&bytes[..cut]),
                                "{bytes:?} cut at {cut}"
                            );
                        }
                    }
                }
            }
        }
    }
}
