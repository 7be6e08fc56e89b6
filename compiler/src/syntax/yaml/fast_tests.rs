//! Differential tests of the YAML fast path against the saphyr path: on generated block
//! YAML, on generated YAML with random damage and on tricky texts (every config file at hand
//! is compared by `yaml::tests::every_config_at_hand_reads_the_same` through [`agree`]),
//! whatever the fast path accepts must be exactly (spans included) what saphyr gives, and
//! [`parse`] must answer exactly as saphyr alone does, diagnostics included.

use proptest::prelude::*;

use super::{fast, parse, parse_with_saphyr};
use crate::source::FileId;
use crate::syntax::node::{Budget, Node, NodeKind};

/// Checks one text; true when the fast path took it.
pub(super) fn agree(text: &str, budget: &Budget) -> bool {
    let saphyr = parse_with_saphyr(FileId(0), text, budget);
    let fast = fast::parse(FileId(0), text, budget);
    if let Some(node) = &fast {
        match &saphyr {
            Ok(expected) => {
                if let Some(difference) = first_difference(node, expected) {
                    panic!("the fast path differs from saphyr on {text:?}: {difference}");
                }
            }
            Err(diag) => panic!("the fast path read {text:?}, saphyr says {diag:?}"),
        }
    }
    assert_eq!(
        parse(FileId(0), text, budget),
        saphyr,
        "parse differs from saphyr on {text:?}"
    );
    fast.is_some()
}

fn children(node: &Node) -> Vec<&Node> {
    match &node.kind {
        NodeKind::Seq(items) => items.iter().collect(),
        NodeKind::Map(pairs) => pairs.iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => Vec::new(),
    }
}

/// The first node (depth first) where `fast` and `saphyr` differ, shown without children.
fn first_difference(fast: &Node, saphyr: &Node) -> Option<String> {
    let shallow = |node: &Node| match &node.kind {
        NodeKind::Seq(items) => format!("{:?} list of {}", node.span, items.len()),
        NodeKind::Map(pairs) => format!("{:?} mapping of {}", node.span, pairs.len()),
        kind => format!("{:?} {kind:?}", node.span),
    };
    if shallow(fast) != shallow(saphyr) {
        return Some(format!(
            "fast {} / saphyr {}",
            shallow(fast),
            shallow(saphyr)
        ));
    }
    children(fast)
        .into_iter()
        .zip(children(saphyr))
        .find_map(|(a, b)| first_difference(a, b))
}

#[test]
fn budgets_apply_to_both_paths() {
    let text = "a:\n  b:\n    c: [1, 2]\n  d: x\n";
    for max_depth in 1..=4 {
        let budget = Budget {
            max_depth,
            ..Budget::default()
        };
        agree(text, &budget);
    }
    for max_nodes in 1..=12 {
        let budget = Budget {
            max_nodes,
            ..Budget::default()
        };
        agree(text, &budget);
    }
    // Escapes that write more bytes than they take: the text fits, its scalars do not.
    let long = format!("a: \"{}\"\nb: 'yy'\n", "\\L".repeat(20));
    for max_bytes in [long.len(), 60, 62, 64, 66] {
        let budget = Budget {
            max_bytes,
            ..Budget::default()
        };
        agree(&long, &budget);
    }
}

#[test]
fn the_generated_chain_takes_the_fast_path() {
    let mut text = String::from("Orchestration:\n  Name: CompileBench\n  Agents:\n");
    for agent in 0..3 {
        text.push_str(&format!(
            "    - Name: Agent{agent}\n      Instructions: You are agent {agent}.\n"
        ));
    }
    text.push_str("  Selection:\n    StateMachine:\n      States:\n");
    for i in 0..20 {
        text.push_str(&format!(
            "        S{i}:\n          Agent: Agent{}\n          Transitions:\n            - To: S{}\n              Signal: NEXT\n",
            i % 3,
            i + 1
        ));
    }
    assert!(agree(&text, &Budget::default()));
}

#[test]
fn tricky_texts() {
    let texts = [
        "a: b\n",
        "a:\n",
        "a:",
        "a: \n",
        "a:   # c\nb: 1\n",
        "a:\n- x\n-\n- y\nb: 2\n",
        "- a\n- b: c\n  d: e\n-\n- - x\n  - y\n",
        "a: |\n  x\n\n  y\n",
        "a: |-\n  x\n\n",
        "a: |+\n  x\n\n\nb: 1\n",
        "a: >\n  x\n  y\n\n  z\n   deeper\n  w\n",
        "a: >-\n\n  x\n",
        "a: |\n  x",
        "a: |\n  x\n  ",
        "a: |\n   \n  x\n",
        "a: |\n  x\n    \n  y\n",
        "a: | # c\n  x\n# out\nb: y\n",
        "- |\n  x\n- >\n  y\n",
        "- a:\n    b: c\n- |\n  text\n",
        "a: 'it''s'\nb: \"q \\\" \\u00e9 \\x41 \\L\"\n",
        "'k': v\n\"k2\" : v\n",
        "a: [x, \"y\", 'z' , w v]\nb: []\nc: {}\nd: [ ]\n",
        "a: [x,]\n",
        "a: [x, [y]]\n",
        "a: b: c\n",
        "a: b\n  c\n",
        "a: b # c\n  d\n",
        "a:\n  b\n",
        "  a: 1\n  b: 2\n",
        "  a: 1\nb: 2\n",
        "a: 1\n  b: 2\n",
        "---\na: 1\n",
        "a: 1\n...\n",
        "a: &x 1\nb: *x\n",
        "a: !t 1\n",
        "? a\n: b\n",
        "a:\tb\n",
        "a: b\r\n",
        "a: é ü\n",
        "é: ü\n",
        "a: ~\nb: null\nc: Null\nd: NULL\ne: nUll\n~: x\n",
        "a: -1\nb: -x\n",
        "a: - x\n",
        "a: x:y\nb: http://z\n",
        "a: x:\n",
        "a#b: c\n",
        "a: b#c\n",
        "a: \"x\"#c\n",
        "- \n- ~\n-\n",
        "a:\n  - b\n  c: d\n",
        "- a\nb: c\n",
        "a: |\n  > x\n",
        "a: |2\n  x\n",
        "a:\n  |\n  x\n",
        "",
        "# only\n",
        "x\n",
        "[a, b]\n",
        "a:\n    - x\n    - y\n  b: 1\n",
        "a: 'multi\n  line'\n",
        "a: \"multi\n  line\"\n",
        "a: \"bad \\q\"\n",
        "a: \"\\ud800\"\n",
        "a: |\n x\n",
        "- a: |\n    x\n  b: y\n",
    ];
    for text in texts {
        agree(text, &Budget::default());
    }
}

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

    fn mapping(&mut self, indent: usize, depth: usize) {
        for _ in 0..1 + self.below(4) {
            self.filler();
            self.pad(indent);
            let key = self.pick(KEYS);
            self.out.push_str(key);
            self.out.push(':');
            self.value(indent, depth);
        }
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
        for idx in 0..1 + self.below(3) {
            if idx > 0 {
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

fn generate(seed: u64) -> String {
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
fn damage(text: &str, seed: u64) -> String {
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

#[test]
fn generated_yaml_mostly_takes_the_fast_path() {
    let taken = (0..2000u64)
        .filter(|seed| {
            agree(
                &generate(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                &Budget::default(),
            )
        })
        .count();
    assert!(taken >= 1000, "the fast path took only {taken} of 2000");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn generated_block_yaml_reads_the_same(seed in any::<u64>()) {
        agree(&generate(seed), &Budget::default());
    }

    #[test]
    fn damaged_yaml_reads_the_same(seed in any::<u64>(), harm in any::<u64>()) {
        agree(&damage(&generate(seed), harm), &Budget::default());
    }
}
