//! Tests for the condition language: parsing, errors, the canonical form and its round trip.

use super::*;

/// The parsed condition (canonical form, then the tree), or the error with a caret line.
fn check(src: &str) -> String {
    match parse(src) {
        Ok(cond) => format!("{cond}\n{cond:?}"),
        Err(error) => {
            let column = src
                .get(..error.offset)
                .map_or(0, |before| before.chars().count());
            let width = src
                .get(error.offset..error.offset + error.len)
                .map_or(1, |token| token.chars().count().max(1));
            format!(
                "{}..{}: {}\n{src}\n{}{}",
                error.offset,
                error.offset + error.len,
                error.message,
                " ".repeat(column),
                "^".repeat(width)
            )
        }
    }
}

fn json(path: &str) -> Field {
    Field::Json(path.split('.').map(str::to_string).collect())
}

#[test]
fn basic_forms() {
    insta::assert_snapshot!(check("last_agent == 'Tester' && contains(last_message, 'PASS')"), @r#"
    last_agent == 'Tester' && contains(last_message, 'PASS')
    And([Eq(LastAgent, "Tester"), Contains(LastMessage, "PASS")])
    "#);
    insta::assert_snapshot!(check(r#"verdict == "approved" || !(review.score == 5)"#), @r#"
    verdict == 'approved' || !(review.score == '5')
    Or([Eq(Json(["verdict"]), "approved"), Not(Eq(Json(["review", "score"]), "5"))])
    "#);
    insta::assert_snapshot!(check("exists(content)"), @r#"
    exists(content)
    Exists(Json(["content"]))
    "#);
    insta::assert_snapshot!(check("!exists(review.blockers)"), @r#"
    !exists(review.blockers)
    Not(Exists(Json(["review", "blockers"])))
    "#);
    insta::assert_snapshot!(check("verdict != 'rejected'"), @r#"
    verdict != 'rejected'
    Ne(Json(["verdict"]), "rejected")
    "#);
    insta::assert_snapshot!(check("  score==-1.5&&ok  ==true "), @r#"
    score == '-1.5' && ok == 'true'
    And([Eq(Json(["score"]), "-1.5"), Eq(Json(["ok"]), "true")])
    "#);
}

#[test]
fn precedence_and_parentheses() {
    insta::assert_snapshot!(check("a == 'x' || b == 'y' && c == 'z'"), @r#"
    a == 'x' || b == 'y' && c == 'z'
    Or([Eq(Json(["a"]), "x"), And([Eq(Json(["b"]), "y"), Eq(Json(["c"]), "z")])])
    "#);
    insta::assert_snapshot!(check("(a == 'x' || b == 'y') && c == 'z'"), @r#"
    (a == 'x' || b == 'y') && c == 'z'
    And([Or([Eq(Json(["a"]), "x"), Eq(Json(["b"]), "y")]), Eq(Json(["c"]), "z")])
    "#);
    insta::assert_snapshot!(check("a == '1' && b == '2' && c == '3'"), @r#"
    a == '1' && b == '2' && c == '3'
    And([Eq(Json(["a"]), "1"), Eq(Json(["b"]), "2"), Eq(Json(["c"]), "3")])
    "#);
    insta::assert_snapshot!(check("(a == '1' && b == '2') && c == '3'"), @r#"
    (a == '1' && b == '2') && c == '3'
    And([And([Eq(Json(["a"]), "1"), Eq(Json(["b"]), "2")]), Eq(Json(["c"]), "3")])
    "#);
    insta::assert_snapshot!(check("((a == 'x'))"), @r#"
    a == 'x'
    Eq(Json(["a"]), "x")
    "#);
}

#[test]
fn negation() {
    insta::assert_snapshot!(check("!(a == 'x')"), @r#"
    !(a == 'x')
    Not(Eq(Json(["a"]), "x"))
    "#);
    insta::assert_snapshot!(check("!a == 'x'"), @r#"
    !(a == 'x')
    Not(Eq(Json(["a"]), "x"))
    "#);
    insta::assert_snapshot!(check("!!exists(a)"), @r#"
    !!exists(a)
    Not(Not(Exists(Json(["a"]))))
    "#);
    insta::assert_snapshot!(check("!(exists(a) || contains(b, 'x'))"), @r#"
    !(exists(a) || contains(b, 'x'))
    Not(Or([Exists(Json(["a"])), Contains(Json(["b"]), "x")]))
    "#);
}

#[test]
fn functions_fields_and_constants() {
    insta::assert_snapshot!(check("contains(review.notes, \"LGTM\")"), @r#"
    contains(review.notes, 'LGTM')
    Contains(Json(["review", "notes"]), "LGTM")
    "#);
    insta::assert_snapshot!(check("exists(`my field`.x-y._z)"), @r#"
    exists(`my field`.x-y._z)
    Exists(Json(["my field", "x-y", "_z"]))
    "#);
    insta::assert_snapshot!(check("`last_agent` == 'a' && last_agent.name == 'b'"), @r#"
    `last_agent` == 'a' && last_agent.name == 'b'
    And([Eq(Json(["last_agent"]), "a"), Eq(Json(["last_agent", "name"]), "b")])
    "#);
    insta::assert_snapshot!(check("contains == 'x' && exists(exists)"), @r#"
    contains == 'x' && exists(exists)
    And([Eq(Json(["contains"]), "x"), Exists(Json(["exists"]))])
    "#);
    insta::assert_snapshot!(check("true || false"), @r#"
    true || false
    Or([And([]), Or([])])
    "#);
}

#[test]
fn null_comparisons() {
    insta::assert_snapshot!(check("review.blockers == null"), @r#"
    !exists(review.blockers)
    Not(Exists(Json(["review", "blockers"])))
    "#);
    insta::assert_snapshot!(check("null != review.blockers"), @r#"
    exists(review.blockers)
    Exists(Json(["review", "blockers"]))
    "#);
    insta::assert_snapshot!(check("verdict == 'null'"), @r#"
    verdict == 'null'
    Eq(Json(["verdict"]), "null")
    "#);
}

#[test]
fn literal_on_the_left() {
    insta::assert_snapshot!(check("'Tester' == last_agent"), @r#"
    last_agent == 'Tester'
    Eq(LastAgent, "Tester")
    "#);
    insta::assert_snapshot!(check("5 != score"), @r#"
    score != '5'
    Ne(Json(["score"]), "5")
    "#);
    insta::assert_snapshot!(check("true == review.ok"), @r#"
    review.ok == 'true'
    Eq(Json(["review", "ok"]), "true")
    "#);
}

#[test]
fn escapes() {
    insta::assert_snapshot!(check(r#"a == 'it\'s \"ok\"\n\t\\'"#), @r#"
    a == 'it\'s "ok"\n\t\\'
    Eq(Json(["a"]), "it's \"ok\"\n\t\\")
    "#);
    insta::assert_snapshot!(check(r#"a == "say \"hi\"" && b == '\u{e9}'"#), @r#"
    a == 'say "hi"' && b == 'é'
    And([Eq(Json(["a"]), "say \"hi\""), Eq(Json(["b"]), "é")])
    "#);
    insta::assert_snapshot!(check(r"a == 'bad \q escape'"), @r#"
    10..12: unknown escape `\q`: use `\\`, `\'`, `\"`, `\n`, `\t`, `\r` or `\u{…}`
    a == 'bad \q escape'
              ^^
    "#);
    insta::assert_snapshot!(check(r"a == '\u{zz}'"), @r#"
    6..9: invalid unicode escape: write `\u{…}` with 1 to 6 hex digits of a valid code point
    a == '\u{zz}'
          ^^^
    "#);
}

#[test]
fn errors() {
    insta::assert_snapshot!(check(""), @r#"
    0..0: empty condition: expected a comparison, `contains(…)` or `exists(…)`

    ^
    "#);
    insta::assert_snapshot!(check("   "), @r#"
    3..3: empty condition: expected a comparison, `contains(…)` or `exists(…)`
       
       ^
    "#);
    insta::assert_snapshot!(check("a =="), @r#"
    4..4: expected a value (a quoted string, a number, `true`, `false` or `null`), found the end of the condition
    a ==
        ^
    "#);
    insta::assert_snapshot!(check("a == 'x"), @r#"
    5..7: unterminated string literal
    a == 'x
         ^^
    "#);
    insta::assert_snapshot!(check("contains(a)"), @r#"
    10..11: expected `,` and the text to look for, found `)`
    contains(a)
              ^
    "#);
    insta::assert_snapshot!(check("a = 'x'"), @r#"
    2..3: use `==` for comparison
    a = 'x'
      ^
    "#);
    insta::assert_snapshot!(check("a == 'x' and b == 'y'"), @r#"
    9..12: use `&&` instead of `and`
    a == 'x' and b == 'y'
             ^^^
    "#);
    insta::assert_snapshot!(check("a == 'x' OR b == 'y'"), @r#"
    9..11: use `||` instead of `OR`
    a == 'x' OR b == 'y'
             ^^
    "#);
    insta::assert_snapshot!(check("a == 'x' & b == 'y'"), @r#"
    9..10: use `&&` instead of `&`
    a == 'x' & b == 'y'
             ^
    "#);
    insta::assert_snapshot!(check("a == 'x' foo"), @r#"
    9..12: expected `&&`, `||` or the end of the condition, found `foo`
    a == 'x' foo
             ^^^
    "#);
    insta::assert_snapshot!(check("a == 'x')"), @r#"
    8..9: unexpected `)`: there is no `(` to close
    a == 'x')
            ^
    "#);
    insta::assert_snapshot!(check("("), @r#"
    1..1: expected a comparison, `contains(…)` or `exists(…)`, found the end of the condition
    (
     ^
    "#);
    insta::assert_snapshot!(check("(a == 'x'"), @r#"
    9..9: expected `)`, `&&` or `||`, found the end of the condition
    (a == 'x'
             ^
    "#);
    insta::assert_snapshot!(check("a == b"), @r#"
    5..6: expected a value (a quoted string, a number, `true`, `false` or `null`), found `b`; quote text like `'b'`
    a == b
         ^
    "#);
    insta::assert_snapshot!(check("'x' == 'y'"), @r#"
    7..10: expected a field name, found `'y'`
    'x' == 'y'
           ^^^
    "#);
    insta::assert_snapshot!(check("a >= 5"), @r#"
    2..4: `>=` is not supported: conditions compare text with `==` and `!=`
    a >= 5
      ^^
    "#);
    insta::assert_snapshot!(check("not exists(a)"), @r#"
    0..3: use `!` instead of `not`
    not exists(a)
    ^^^
    "#);
    insta::assert_snapshot!(check("startswith(a, 'x')"), @r#"
    0..10: unknown function `startswith`: use `contains(field, 'text')` or `exists(field)`
    startswith(a, 'x')
    ^^^^^^^^^^
    "#);
    insta::assert_snapshot!(check("last_message contains 'PASS'"), @r#"
    13..21: write `contains(field, 'text')` to test for a substring
    last_message contains 'PASS'
                 ^^^^^^^^
    "#);
    insta::assert_snapshot!(check("contains(a, null)"), @r#"
    12..16: `contains(…)` needs text or a number, not `null`
    contains(a, null)
                ^^^^
    "#);
    insta::assert_snapshot!(check("exists(a.)"), @r#"
    9..10: expected a field name, found `)`
    exists(a.)
             ^
    "#);
    insta::assert_snapshot!(check("exists(`a)"), @r#"
    7..10: unterminated backquoted field name
    exists(`a)
           ^^^
    "#);
    insta::assert_snapshot!(check("a == 'x' &&"), @r#"
    11..11: expected a comparison, `contains(…)` or `exists(…)`, found the end of the condition
    a == 'x' &&
               ^
    "#);
    insta::assert_snapshot!(check("été == 'x'"), @r#"
    0..5: field names with characters other than ASCII letters, digits, `_` and `-` must be backquoted: `` `été` ``
    été == 'x'
    ^^^
    "#);
    insta::assert_snapshot!(check("exists"), @r#"
    6..6: expected `==`, `!=` or `(`, found the end of the condition
    exists
          ^
    "#);
    insta::assert_snapshot!(check("!"), @r#"
    1..1: expected a comparison, `contains(…)` or `exists(…)`, found the end of the condition
    !
     ^
    "#);
    insta::assert_snapshot!(check("a == 'é' # comment"), @r#"
    10..11: expected `&&`, `||` or the end of the condition, found `#`
    a == 'é' # comment
             ^
    "#);
    insta::assert_snapshot!(check(&format!("{}a == 'x'{}", "(".repeat(40), ")".repeat(40))), @r#"
    32..33: parentheses nested more than 32 deep
    ((((((((((((((((((((((((((((((((((((((((a == 'x'))))))))))))))))))))))))))))))))))))))))
                                    ^
    "#);
}

#[test]
fn diagnostic_points_inside_the_condition() {
    let file = crate::source::FileId(3);
    // The condition sits at bytes 20..31 of its file.
    let span = Span::new(file, 20, 31);
    let error = parse("a == 'x' or").unwrap_err();
    let diagnostic = error.to_diagnostic(span);
    assert_eq!(diagnostic.code, Code::ConditionSyntax);
    assert!(diagnostic.is_error());
    assert_eq!(diagnostic.span(), Some(Span::new(file, 29, 31)));
    assert_eq!(diagnostic.labels[0].message, error.message);
    assert!(diagnostic.help.is_some());
    // Offsets past the text (a decoded string longer than its span) are clamped.
    let clamped = ConditionError {
        offset: 50,
        len: 4,
        message: "x".into(),
    }
    .to_diagnostic(span);
    assert_eq!(clamped.span(), Some(Span::new(file, 31, 31)));
}

fn round_trip_cases() -> Vec<Cond> {
    use Cond::*;
    let s = |text: &str| text.to_string();
    let eq = |path: &str, value: &str| Eq(json(path), s(value));
    let not = |cond: Cond| Not(Box::new(cond));
    vec![
        Eq(Field::LastAgent, s("Tester")),
        Ne(Field::LastMessage, s("")),
        Contains(Field::LastMessage, s("PASS")),
        Exists(json("content")),
        not(Exists(json("review.blockers"))),
        eq("a", "it's \"quoted\" \\ back\nslash\ttab\r"),
        eq("a", "\u{0}\u{7f}\u{1b}é漢字🦀"),
        eq("a", "null"),
        eq("a", "true"),
        eq("a", "-1.5"),
        Eq(
            Field::Json(vec![s("my field"), s("x.y"), s("`tick`"), s("back\\slash")]),
            s("v"),
        ),
        Eq(Field::Json(vec![s("last_agent")]), s("v")),
        Eq(Field::Json(vec![s("last_message"), s("x")]), s("v")),
        Eq(Field::Json(vec![s("true")]), s("v")),
        Eq(Field::Json(vec![s("null"), s("false")]), s("v")),
        Eq(Field::Json(vec![s("")]), s("v")),
        Eq(Field::Json(vec![s("9lives"), s("-x"), s("ünï")]), s("v")),
        Exists(Field::Json(vec![s("contains")])),
        Eq(Field::Json(vec![s("exists")]), s("v")),
        Eq(Field::Json(vec![s("and")]), s("or")),
        not(eq("a", "x")),
        not(not(Ne(Field::LastAgent, s("x")))),
        And(vec![eq("a", "1"), eq("b", "2"), eq("c", "3")]),
        Or(vec![eq("a", "1"), And(vec![eq("b", "2"), eq("c", "3")])]),
        And(vec![Or(vec![eq("a", "1"), eq("b", "2")]), eq("c", "3")]),
        And(vec![And(vec![eq("a", "1"), eq("b", "2")]), eq("c", "3")]),
        Or(vec![
            Or(vec![eq("a", "1"), eq("b", "2")]),
            Or(vec![eq("c", "3"), eq("d", "4")]),
        ]),
        not(And(vec![
            eq("a", "1"),
            not(Or(vec![Exists(json("b")), Contains(json("c"), s("x"))])),
        ])),
        And(vec![]),
        Or(vec![]),
        not(And(vec![])),
        And(vec![Or(vec![]), And(vec![])]),
        Or(vec![
            And(vec![
                not(Or(vec![eq("a", "1"), eq("b", "2")])),
                Exists(Field::LastMessage),
            ]),
            not(not(And(vec![
                Contains(Field::LastAgent, s("'")),
                Or(vec![And(vec![]), eq("z", "")]),
            ]))),
        ]),
    ]
}

#[test]
fn display_round_trips() {
    for cond in round_trip_cases() {
        let text = cond.to_string();
        assert_eq!(parse(&text), Ok(cond.clone()), "printed as {text}");
    }
}

/// A tiny deterministic generator (xorshift) of condition trees.
struct Gen(u64);

impl Gen {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }

    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a", "B", " ", "'", "\"", "\\", "`", "\n", "é", "null", "-1", ".", "&&", "(", ")",
        ];
        (0..self.next(4))
            .map(|_| PIECES[self.next(PIECES.len() as u64) as usize])
            .collect()
    }

    fn field(&mut self) -> Field {
        match self.next(4) {
            0 => Field::LastAgent,
            1 => Field::LastMessage,
            _ => Field::Json((0..1 + self.next(3)).map(|_| self.text()).collect()),
        }
    }

    fn cond(&mut self, depth: u32) -> Cond {
        let leaf = depth == 0 || self.next(3) == 0;
        match if leaf { self.next(4) } else { 4 + self.next(3) } {
            0 => Cond::Eq(self.field(), self.text()),
            1 => Cond::Ne(self.field(), self.text()),
            2 => Cond::Contains(self.field(), self.text()),
            3 => Cond::Exists(self.field()),
            4 => Cond::Not(Box::new(self.cond(depth - 1))),
            5 => {
                let n = [0, 2, 2, 3][self.next(4) as usize];
                Cond::And((0..n).map(|_| self.cond(depth - 1)).collect())
            }
            _ => {
                let n = [0, 2, 2, 3][self.next(4) as usize];
                Cond::Or((0..n).map(|_| self.cond(depth - 1)).collect())
            }
        }
    }
}

#[test]
fn generated_conditions_round_trip() {
    let mut generator = Gen(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2000 {
        let cond = generator.cond(4);
        let text = cond.to_string();
        assert_eq!(parse(&text), Ok(cond.clone()), "printed as {text}");
    }
}

#[test]
fn never_panics() {
    let complex = [
        "last_agent == 'Tester' && contains(last_message, 'PASS')",
        r#"verdict == "approved" || !(review.score == 5) && !exists(`my field`.x) || 'a\'b' != c"#,
        "!(a == 'x' || (b != \"y\" && contains(c.d-e, '\\u{1F980}'))) || true && x == null",
        "é == 'ü' && `漢字` != '🦀'",
    ];
    for text in complex {
        for (end, _) in text.char_indices() {
            if let Err(error) = parse(&text[..end]) {
                assert!(
                    error.offset + error.len <= end,
                    "{:?} -> {error:?}",
                    &text[..end]
                );
                assert!(
                    !error.message.contains("Rule") && !error.message.contains("internal"),
                    "{error:?}"
                );
            }
        }
    }
    let mut generator = Gen(12345);
    let alphabet: Vec<char> = "ab_.'\"`\\()!=&|,- \n0é\u{0}conteisxrul".chars().collect();
    for _ in 0..3000 {
        let len = generator.next(24) as usize;
        let text: String = (0..len)
            .map(|_| alphabet[generator.next(alphabet.len() as u64) as usize])
            .collect();
        if let Err(error) = parse(&text) {
            assert!(
                error.offset + error.len <= text.len(),
                "{text:?} -> {error:?}"
            );
            assert!(text.is_char_boundary(error.offset), "{text:?} -> {error:?}");
            assert!(!error.message.contains("internal"), "{text:?} -> {error:?}");
        }
    }
    for bytes in [
        &b"\xff\xfe(("[..],
        b"a == '\xc3\xa9",
        b"\x00\x01\x02",
        b"(((((((((((((((((((((((((((((((((((((((((((",
    ] {
        let text = String::from_utf8_lossy(bytes);
        let _ = parse(&text);
    }
    let _ = parse(&"!".repeat(100_000));
    let _ = parse(&"(".repeat(100_000));
    let _ = parse(&"a == 'x' && ".repeat(2_000));
}
