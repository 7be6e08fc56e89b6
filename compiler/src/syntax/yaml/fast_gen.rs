//! Generated YAML for the fast path's differential tests (`fast_tests.rs`): block YAML of
//! every shape the fast path reads (and a few it leaves to saphyr), from a seed, and the same
//! text damaged at random.

/// A small deterministic generator of block YAML, driven by proptest's seed.
struct Gen {
    state: u64,
    out: String,
}

const WORDS: &[&str] = &[
    "a",
    "b c",
    "x:y",
    "-1",
    "~",
    "null",
    "Null",
    "true",
    "a#b",
    "é",
    "http://h/p",
    "a'b",
    "a\"b",
    "'single'",
    "'it''s'",
    "\"dq\"",
    "\"e \\\" \\n \\u00e9 \\x41\"",
    "\"\"",
    "''",
    "key with spaces",
    "<<",
    "x  y",
    "[a, b]",
    "[]",
    "{}",
    "['q', r]",
    "-x",
    "a]b",
    "a,b",
];

const KEYS: &[&str] = &[
    "k",
    "Name",
    "two words",
    "\"quoted\"",
    "'single'",
    "~",
    "k-1",
    "é",
];

impl Gen {
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'w>(&mut self, list: &[&'w str]) -> &'w str {
        list[self.below(list.len())]
    }

    fn pad(&mut self, indent: usize) {
        for _ in 0..indent {
            self.out.push(' ');
        }
    }

    /// Blank and comment lines, sometimes.
    fn filler(&mut self) {
        match self.below(8) {
            0 => self.out.push('\n'),
            1 => {
                let indent = self.below(6);
                self.pad(indent);
                self.out.push_str("# note: x\n");
            }
            2 => self.out.push_str("   \n"),
            _ => {}
        }
    }

    /// The rest of a line after a scalar: nothing or a comment.
    fn line_end(&mut self) {
        if self.below(5) == 0 {
            self.out.push_str("  # c");
        }
        self.out.push('\n');
    }

    fn block_scalar(&mut self, parent: usize) {
        let style = if self.below(2) == 0 { '|' } else { '>' };
        self.out.push(style);
        let header = ["", "-", "+", "", " # h"][self.below(5)];
        self.out.push_str(header);
        self.out.push('\n');
        let indent = parent + 1 + self.below(3);
        for _ in 0..1 + self.below(4) {
            match self.below(6) {
                0 => self.out.push('\n'),
                1 => {
                    let width = self.below(indent + 1);
                    self.pad(width);
                    self.out.push('\n');
                }
                2 => {
                    let deeper = indent + 1 + self.below(2);
                    self.pad(deeper);
                    self.out.push_str("deeper text\n");
                }
                _ => {
                    self.pad(indent);
                    let word = self.pick(WORDS);
                    self.out.push_str(word);
                    self.out.push('\n');
                }
            }
        }
        self.pad(indent);
        self.out.push_str("last\n");
    }

    /// A value after `key:` or `-`, the collection being at `col`.
    fn value(&mut self, col: usize, depth: usize) {
        let choice = if depth > 3 {
            self.below(3)
        } else {
            self.below(8)
        };
        match choice {
            0 | 1 => {
                self.out.push(' ');
                let word = self.pick(WORDS);
                self.out.push_str(word);
                self.line_end();
            }
            2 => self.line_end(),
            3 => {
                self.out.push(' ');
                self.block_scalar(col);
            }
            4 | 5 => {
                self.out.push('\n');
                let indent = col + 1 + self.below(3);
                self.mapping(indent, depth + 1);
            }
            _ => {
                self.out.push('\n');
                let indent = col + self.below(3);
                self.sequence(indent, depth + 1);
            }
        }
    }

    /// A mapping at `indent`, each key on a line of its own.
    fn mapping(&mut self, indent: usize, depth: usize) {
        let count = 1 + self.below(4);
        self.entries(count, false, indent, depth);
    }

    fn sequence(&mut self, indent: usize, depth: usize) {
        for _ in 0..1 + self.below(4) {
            self.filler();
            self.pad(indent);
            self.out.push('-');
            match self.below(5) {
                0 if depth <= 3 => {
                    // A compact mapping: its keys line up after `- `.
                    let gap = 1 + self.below(2);
                    self.pad(gap);
                    self.mapping_inline(indent + 1 + gap, depth + 1);
                }
                1 if depth <= 3 => {
                    self.out.push(' ');
                    self.sequence_inline(indent + 2, depth + 1);
                }
                _ => self.value(indent, depth),
            }
        }
    }

    /// A mapping whose first key continues the current line.
    fn mapping_inline(&mut self, indent: usize, depth: usize) {
        let count = 1 + self.below(3);
        self.entries(count, true, indent, depth);
    }

    /// `count` keys with their values; the first continues the current line if `inline`.
    fn entries(&mut self, count: usize, inline: bool, indent: usize, depth: usize) {
        for idx in 0..count {
            if idx > 0 || !inline {
                self.filler();
                self.pad(indent);
            }
            let key = self.pick(KEYS);
            self.out.push_str(key);
            self.out.push(':');
            self.value(indent, depth);
        }
    }

    /// A list whose first `-` continues the current line.
    fn sequence_inline(&mut self, indent: usize, depth: usize) {
        for idx in 0..1 + self.below(3) {
            if idx > 0 {
                self.pad(indent);
            }
            self.out.push('-');
            self.value(indent, depth);
        }
    }
}

pub(super) fn generate(seed: u64) -> String {
    let mut gen = Gen {
        state: seed | 1,
        out: String::new(),
    };
    if gen.below(2) == 0 {
        gen.mapping(0, 0);
    } else {
        gen.sequence(0, 0);
    }
    if gen.below(6) == 0 {
        gen.out.pop();
    }
    gen.out
}

/// Random damage: bytes deleted, or YAML's special characters put in.
pub(super) fn damage(text: &str, seed: u64) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b" \n-:#'\"|>[]{},&*!?\t\\x~";
    for _ in 0..1 + next() % 3 {
        if bytes.is_empty() {
            break;
        }
        let at = (next() % bytes.len() as u64) as usize;
        if next() % 2 == 0 {
            bytes.remove(at);
        } else {
            bytes.insert(at, alphabet[(next() % alphabet.len() as u64) as usize]);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
