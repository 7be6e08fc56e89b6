//! Searching bytes eight at a time: the shared loop of the stream's hot searches (the end
//! of an SSE line, the end of a JSON string's plain run).

/// `0x01` in every byte of a word.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bits of the bytes of `word` equal to `byte`, plus perhaps some above one of
/// them (a borrow only flags bytes above a true one, so the lowest flag is always true).
pub(super) fn equal(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The offset of the first byte of `bytes` that `is` picks out. `flags` gives, for a
/// little-endian word of eight of them, the high bits of those bytes, where the lowest
/// flagged byte must always be a true one (flags above it may be false).
pub(super) fn first(
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
