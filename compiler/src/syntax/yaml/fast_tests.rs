//! Differential tests of the YAML fast path against the saphyr path: on generated block
//! YAML, on generated YAML with random damage and on tricky texts (every config file at hand
//! is compared by `yaml::tests::every_config_at_hand_reads_the_same` through [`agree`]),
//! whatever the fast path accepts must be exactly (spans included) what saphyr gives, and
//! [`parse`] must answer exactly as saphyr alone does, diagnostics included.

use proptest::prelude::*;

use super::fast_gen::{damage, generate};
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
