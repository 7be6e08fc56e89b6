//! `RequireReviewJudgement`: the reviewer's reply carries a structured `{"review": [...]}`
//! judgement, with no FAIL verdict, covering the brief, and backed by a shell run.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value as Json;

use crate::effect::CheckResult;
use crate::history::Role;

use super::artifacts::{contains_ci, member, Env};
use super::brief::{self, BriefError};
use super::shell::passing_shell_run;

/// A fenced block holding a JSON object: ```` ```json ```` (any case) or untagged.
static FENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)```(?:json)?\s*(\{.*?\})\s*```").expect("fence regex is valid")
});

/// One judgement; non-string fields read as absent.
struct Judgement {
    criterion: Option<String>,
    verdict: Option<String>,
    evidence: Option<String>,
}

impl Judgement {
    fn complete(&self) -> bool {
        [&self.criterion, &self.verdict, &self.evidence]
            .iter()
            .all(|field| field.as_deref().is_some_and(|text| !text.trim().is_empty()))
    }

    fn verdict_is(&self, verdict: &str) -> bool {
        self.verdict
            .as_deref()
            .is_some_and(|own| own.trim().eq_ignore_ascii_case(verdict))
    }
}

fn parse_review(json: &str) -> Option<Vec<Judgement>> {
    let root: Json = serde_json::from_str(json).ok()?;
    let items = member(&root, "review")?.as_array()?;
    let text =
        |item: &Json, key: &str| member(item, key).and_then(Json::as_str).map(str::to_string);
    Some(
        items
            .iter()
            .map(|item| Judgement {
                criterion: text(item, "criterion"),
                verdict: text(item, "verdict"),
                evidence: text(item, "evidence"),
            })
            .collect(),
    )
}

/// The review block of a reply: the first fenced block that parses as `{"review": [...]}`,
/// else, when the text mentions `"review"`, the span from the first `{` to the last `}`.
fn extract_review(text: &str) -> Option<Vec<Judgement>> {
    for captures in FENCE.captures_iter(text) {
        if let Some(review) = captures
            .get(1)
            .and_then(|block| parse_review(block.as_str()))
        {
            return Some(review);
        }
    }
    if !contains_ci(text, "\"review\"") {
        return None;
    }
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end <= start {
        return None;
    }
    parse_review(&text[start..=end])
}

const FORMAT_HINT: &str = "Add a ```json block before APPROVED:\n\n\
     ```json\n{ \"review\": [{ \"criterion\": \"...\", \"verdict\": \"PASS\", \"evidence\": \"...\" }] }\n```\n\n\
     Cover every acceptance criterion. Use PASS or FAIL. Then write APPROVED on its own line.";

/// `RequireReviewJudgement`: the newest assistant message of the current turn with text
/// (tool-only messages skipped) holds a review block with at least one entry whose
/// `criterion`, `verdict` and `evidence` are all non-blank; no verdict is `FAIL` (any case);
/// when the brief exists, there are at least as many entries as acceptance criteria; when
/// a verdict is `PASS`, a `shell_run` passed in the current turn. Other verdicts need no
/// shell run.
///
/// Choice: a missing or malformed review block gets its own message ("no structured review
/// block"); the upstream version read returns the "no text content" message for it too,
/// through a misplaced `break`. A malformed brief fails the check.
pub(super) fn require_review_judgement(env: &Env) -> CheckResult {
    let reply = env
        .context
        .turn_messages
        .iter()
        .rev()
        .find(|message| message.role == Role::Assistant && !message.content.trim().is_empty());
    let Some(reply) = reply else {
        return CheckResult::fail(format!(
            "APPROVED blocked: no text content in the reviewer's reply this turn (tool calls only). \
             Complete your review with a structured judgement block before writing APPROVED.\n\n{FORMAT_HINT}"
        ));
    };
    let Some(review) = extract_review(&reply.content) else {
        return CheckResult::fail(format!(
            "APPROVED blocked: response has no structured review block.\n\n{FORMAT_HINT}"
        ));
    };
    if !review.iter().any(Judgement::complete) {
        return CheckResult::fail(format!(
            "APPROVED blocked: the review block has no complete entry; each entry needs a non-blank \
             'criterion', 'verdict' and 'evidence'.\n\n{FORMAT_HINT}"
        ));
    }
    let fails: Vec<&Judgement> = review
        .iter()
        .filter(|judgement| judgement.verdict_is("FAIL"))
        .collect();
    if !fails.is_empty() {
        let listed: Vec<String> = fails
            .iter()
            .map(|judgement| {
                format!(
                    "  ✗ {}: {}",
                    judgement.criterion.as_deref().unwrap_or("(unnamed)"),
                    judgement.evidence.as_deref().unwrap_or_default()
                )
            })
            .collect();
        return CheckResult::fail(format!(
            "APPROVED blocked: the review has {} FAIL verdict(s):\n{}\n\n\
             Send the work back for fixes instead of approving it.",
            fails.len(),
            listed.join("\n")
        ));
    }
    let artifact = match env.brief() {
        Ok(artifact) => artifact,
        Err(error) => return CheckResult::fail(format!("APPROVED blocked: {error}")),
    };
    match brief::load(&artifact) {
        Ok(brief) => {
            let criteria = brief
                .acceptance_criteria
                .map_or(0, |criteria| criteria.len());
            if review.len() < criteria {
                return CheckResult::fail(format!(
                    "APPROVED blocked: the review has {} entr{} but brief `{}` has {criteria} acceptance \
                     criteria. Judge every criterion.",
                    review.len(),
                    if review.len() == 1 { "y" } else { "ies" },
                    artifact.shown
                ));
            }
        }
        Err(BriefError::Missing) => {}
        Err(BriefError::Invalid(error)) => {
            return CheckResult::fail(format!("APPROVED blocked: {error}"))
        }
    }
    let passes = review
        .iter()
        .filter(|judgement| judgement.verdict_is("PASS"))
        .count();
    if passes > 0 && passing_shell_run(env, None).is_none() {
        return CheckResult::fail(format!(
            "APPROVED blocked: {passes} PASS verdict(s) but no shell_run passed this turn, so the \
             verdicts cannot be verified. Run the checks with shell_run in this turn, then approve."
        ));
    }
    CheckResult::pass()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;
    use crate::history::Message;

    fn check(fx: &Fixture, messages: Vec<Message>) -> crate::effect::CheckResult {
        fx.validator("RequireReviewJudgement", &[], messages)
    }

    const GOOD: &str = "Looks right.\n```json\n{\"review\": [{\"criterion\": \"prints hi\", \"verdict\": \"PASS\", \"evidence\": \"ran it\"}]}\n```\nAPPROVED";

    #[test]
    fn review_passes_with_a_fenced_block_and_a_shell_run() {
        let fx = Fixture::new("rv-ok");
        assert_pass(&check(
            &fx,
            vec![
                assistant(vec![shell("cargo run", "hi")]),
                assistant_text(GOOD, vec![]),
            ],
        ));
    }

    #[test]
    fn review_passes_with_an_untagged_fence() {
        let fx = Fixture::new("rv-untagged");
        let text = "```\n{\"review\": [{\"criterion\": \"c\", \"verdict\": \"PASS\", \"evidence\": \"e\"}]}\n```";
        assert_pass(&check(
            &fx,
            vec![assistant_text(text, vec![shell("make test", "")])],
        ));
    }

    #[test]
    fn review_passes_with_a_bare_object_mentioning_review() {
        let fx = Fixture::new("rv-bare");
        let text = "Verdict: {\"review\": [{\"criterion\": \"c\", \"verdict\": \"pass\", \"evidence\": \"e\"}]} APPROVED";
        assert_pass(&check(
            &fx,
            vec![assistant_text(text, vec![shell("make test", "")])],
        ));
    }

    #[test]
    fn review_skips_a_fence_that_is_not_a_review() {
        let fx = Fixture::new("rv-two-fences");
        let text = format!("```json\n{{\"other\": 1}}\n```\n{GOOD}");
        assert_pass(&check(
            &fx,
            vec![assistant_text(&text, vec![shell("make test", "")])],
        ));
    }

    #[test]
    fn review_fails_without_text_content() {
        let fx = Fixture::new("rv-no-text");
        let result = check(&fx, vec![assistant(vec![shell("ls", "")])]);
        assert_fail(&result, &["no text content"]);
        assert_fail(&check(&fx, vec![]), &["no text content"]);
    }

    #[test]
    fn review_reads_the_newest_text_message_skipping_tool_only_ones() {
        let fx = Fixture::new("rv-newest");
        let messages = vec![
            assistant_text(GOOD, vec![]),
            assistant_text("I changed my mind, no review here.", vec![]),
            assistant(vec![shell("ls", "")]),
        ];
        assert_fail(&check(&fx, messages), &["no structured review block"]);
        let messages = vec![
            assistant_text("thinking...", vec![]),
            assistant_text(GOOD, vec![shell("ls", "")]),
            assistant(vec![]),
        ];
        assert_pass(&check(&fx, messages));
    }

    #[test]
    fn review_fails_without_a_review_block() {
        let fx = Fixture::new("rv-no-block");
        assert_fail(
            &check(&fx, vec![assistant_text("All good. APPROVED", vec![])]),
            &["no structured review block"],
        );
    }

    #[test]
    fn review_fails_on_a_malformed_review_block() {
        let fx = Fixture::new("rv-malformed");
        let text = "```json\n{\"review\": [{\"criterion\": \"c\", \"verdict\": \"PASS\",}\n```";
        assert_fail(
            &check(&fx, vec![assistant_text(text, vec![])]),
            &["no structured review block"],
        );
        let text = "{\"review\": \"all fine\"}";
        assert_fail(
            &check(&fx, vec![assistant_text(text, vec![])]),
            &["no structured review block"],
        );
    }

    #[test]
    fn review_fails_without_a_complete_entry() {
        let fx = Fixture::new("rv-incomplete");
        let text = "```json\n{\"review\": [{\"criterion\": \"c\", \"verdict\": \"PASS\", \"evidence\": \" \"}, {\"verdict\": \"PASS\", \"evidence\": \"e\"}]}\n```";
        assert_fail(
            &check(&fx, vec![assistant_text(text, vec![shell("ls", "")])]),
            &["no complete entry"],
        );
        let text = "```json\n{\"review\": []}\n```";
        assert_fail(
            &check(&fx, vec![assistant_text(text, vec![shell("ls", "")])]),
            &["no complete entry"],
        );
    }

    #[test]
    fn review_fails_on_a_fail_verdict() {
        let fx = Fixture::new("rv-fail");
        let text = "```json\n{\"review\": [{\"criterion\": \"a\", \"verdict\": \"PASS\", \"evidence\": \"e\"}, {\"criterion\": \"b\", \"verdict\": \"Fail\", \"evidence\": \"prints ho\"}]}\n```";
        assert_fail(
            &check(&fx, vec![assistant_text(text, vec![shell("ls", "")])]),
            &["1 FAIL verdict(s)", "✗ b: prints ho"],
        );
    }

    #[test]
    fn review_passes_when_entries_cover_the_brief() {
        let fx = Fixture::new("rv-brief-ok");
        fx.write_json(
            ".fuseraft/artifacts/brief.json",
            &json!({"acceptance_criteria": ["prints hi"]}),
        );
        assert_pass(&check(
            &fx,
            vec![assistant_text(GOOD, vec![shell("ls", "")])],
        ));
    }

    #[test]
    fn review_fails_when_entries_do_not_cover_the_brief() {
        let fx = Fixture::new("rv-brief");
        fx.write_json(
            ".fuseraft/artifacts/brief.json",
            &json!({"acceptance_criteria": ["prints hi", "exits 0"]}),
        );
        assert_fail(
            &check(&fx, vec![assistant_text(GOOD, vec![shell("ls", "")])]),
            &["1 entry but brief `.fuseraft/artifacts/brief.json` has 2 acceptance criteria"],
        );
    }

    #[test]
    fn review_fails_on_a_malformed_brief() {
        let fx = Fixture::new("rv-brief-bad");
        fx.write(
            ".fuseraft/artifacts/brief.json",
            "{\"acceptance_criteria\": [1,",
        );
        assert_fail(
            &check(&fx, vec![assistant_text(GOOD, vec![shell("ls", "")])]),
            &["brief `.fuseraft/artifacts/brief.json` is invalid JSON"],
        );
    }

    #[test]
    fn review_fails_on_pass_verdicts_without_a_shell_run() {
        let fx = Fixture::new("rv-no-shell");
        assert_fail(
            &check(&fx, vec![assistant_text(GOOD, vec![])]),
            &[
                "1 PASS verdict(s) but no shell_run passed this turn",
                "cannot be verified",
            ],
        );
        let failed = shell_with("cargo test", "[EXIT 101]", false);
        assert_fail(
            &check(&fx, vec![assistant_text(GOOD, vec![failed])]),
            &["no shell_run passed"],
        );
    }

    #[test]
    fn review_other_verdicts_need_no_shell_run() {
        let fx = Fixture::new("rv-partial");
        let text = "```json\n{\"review\": [{\"criterion\": \"c\", \"verdict\": \"PARTIAL\", \"evidence\": \"read the code\"}]}\n```";
        assert_pass(&check(&fx, vec![assistant_text(text, vec![])]));
    }
}
