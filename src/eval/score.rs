//! Scoring one run of a case: every check the case asks for, each failed one a reason in
//! words. A run passes when no reason is left (and its judge, if any, says `PASS`).

use super::case::Case;

/// What a finished run shows the checks.
pub struct Seen<'a> {
    /// The run ended well (`exec`'s exit code 0: a terminal state, a termination strategy
    /// or the turn cap, and the work done).
    pub succeeded: bool,
    /// How it ended, for the reason: `stuck: no signal ...`.
    pub ending: &'a str,
    /// The run's output: the last reply, the promoted artifact or the tama end value.
    pub output: &'a str,
    pub turns: u32,
    /// The states the run went through.
    pub path: &'a [String],
    /// The routing trace, rendered when the case pins one.
    pub trace: Option<&'a str>,
}

/// The reasons run `seen` of `case` fails, in the order of the case's keys.
pub fn reasons(case: &Case, seen: &Seen<'_>) -> Vec<String> {
    let mut failed = Vec::new();
    if case.must_succeed && !seen.succeeded {
        failed.push(format!("the run did not succeed: {}", seen.ending));
    }
    let output = seen.output.to_lowercase();
    for keyword in &case.expect_keywords {
        if !output.contains(&keyword.to_lowercase()) {
            failed.push(format!("expected keyword not found: \"{keyword}\""));
        }
    }
    for pattern in &case.expect_regex {
        if !pattern.is_match(seen.output) {
            failed.push(format!("regex not matched: {}", pattern.as_str()));
        }
    }
    for keyword in &case.forbidden_keywords {
        if output.contains(&keyword.to_lowercase()) {
            failed.push(format!("forbidden keyword found: \"{keyword}\""));
        }
    }
    if case.max_turns > 0 && seen.turns > case.max_turns {
        failed.push(format!(
            "exceeded max_turns: {} > {}",
            seen.turns, case.max_turns
        ));
    }
    if let Some(expected) = &case.path {
        if !same_path(expected, seen.path) {
            failed.push(format!(
                "the routing path differs: expected {}, took {}",
                expected.join(" → "),
                seen.path.join(" → ")
            ));
        }
    }
    if let (Some(expected), Some(trace)) = (&case.trace, seen.trace) {
        if let Some(reason) = trace_difference(expected, trace) {
            failed.push(reason);
        }
    }
    failed
}

/// State names compare ignoring case, as fuseraft names do.
fn same_path(expected: &[String], taken: &[String]) -> bool {
    expected.len() == taken.len()
        && expected
            .iter()
            .zip(taken)
            .all(|(want, took)| want.eq_ignore_ascii_case(took))
}

/// The lines of a trace without their outer blanks (the turn column is right-aligned, which
/// a YAML block scalar would not keep), blank lines left out.
fn trace_lines(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
}

/// The first line where `trace` differs from `expected`, in words; `None` when they agree
/// (blanks around lines aside).
fn trace_difference(expected: &str, trace: &str) -> Option<String> {
    let want = trace_lines(expected);
    let got = trace_lines(trace);
    if want == got {
        return None;
    }
    let at = want
        .iter()
        .zip(&got)
        .position(|(want, got)| want != got)
        .unwrap_or(want.len().min(got.len()));
    let line = |lines: &[&str]| {
        lines
            .get(at)
            .map_or("(the trace ends)".to_string(), |line| line.to_string())
    };
    Some(format!(
        "the routing trace differs at line {}: expected `{}`, got `{}`",
        at + 1,
        line(&want),
        line(&got)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case {
            id: "c".into(),
            task: "t".into(),
            config: None,
            must_succeed: true,
            expect_keywords: vec!["Hello".into()],
            expect_regex: vec![regex::RegexBuilder::new(r"world\b")
                .case_insensitive(true)
                .build()
                .expect("a regex")],
            forbidden_keywords: vec!["I cannot".into()],
            max_turns: 2,
            tags: Vec::new(),
            path: Some(vec!["Writer".into(), "end".into()]),
            trace: Some("  0 Writer  @Writer  signal DONE → end\n".into()),
            judge: None,
            min_pass_rate: 1.0,
            approve: false,
        }
    }

    #[test]
    fn a_run_that_meets_every_check_has_no_reason() {
        let path = vec!["writer".to_string(), "END".to_string()];
        let seen = Seen {
            succeeded: true,
            ending: "completed",
            output: "hello WORLD",
            turns: 2,
            path: &path,
            trace: Some("  0 Writer  @Writer  signal DONE → end  \n\n"),
        };
        assert!(reasons(&case(), &seen).is_empty());
    }

    #[test]
    fn every_failed_check_is_a_reason() {
        let path = vec!["Writer".to_string(), "Writer".to_string()];
        let seen = Seen {
            succeeded: false,
            ending: "stuck: no signal",
            output: "I cannot do worlds",
            turns: 3,
            path: &path,
            trace: Some("  0 Writer  @Writer  no signal\n"),
        };
        let reasons = reasons(&case(), &seen);
        assert_eq!(
            reasons,
            vec![
                "the run did not succeed: stuck: no signal",
                "expected keyword not found: \"Hello\"",
                "regex not matched: world\\b",
                "forbidden keyword found: \"I cannot\"",
                "exceeded max_turns: 3 > 2",
                "the routing path differs: expected Writer → end, took Writer → Writer",
                "the routing trace differs at line 1: expected `0 Writer  @Writer  signal DONE → end`, got `0 Writer  @Writer  no signal`",
            ]
        );
    }
}
