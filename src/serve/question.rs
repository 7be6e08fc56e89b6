//! A question a served run waits on: listed in its session's status, and a Restate virtual
//! object (keyed `SESSION.N`) holding the awakeable the run waits on, which takes exactly
//! one answer and refuses the next, naming the first.

use restate_sdk::prelude::*;

use super::job::{keys, Answer, Answered, Asked, Status, Waiting};
use super::objects::refused;

/// A question's object.
pub struct FuseraftQuestion;

/// Lists `waiting`, hands it to its question object, and waits (holding no worker) for the
/// answer; records who gave it.
pub(super) async fn wait_for_answer(
    ctx: &ObjectContext<'_>,
    status: &mut Status,
    waiting: Waiting,
) -> Result<Answer, HandlerError> {
    let (awakeable, answered) = ctx.awakeable::<Json<Answer>>();
    status.asked += 1;
    status.waiting = Some(waiting.clone());
    ctx.set(keys::STATUS, Json(status.clone()));
    ctx.object_client::<FuseraftQuestionClient>(&waiting.id)
        .ask(Json(Asked {
            awakeable,
            waiting: waiting.clone(),
        }))
        .send();
    let Json(answer) = answered.await?;
    status.waiting = None;
    status.answers.push(Answered {
        id: waiting.id,
        question: waiting.question,
        answer: answer.clone(),
    });
    ctx.set(keys::STATUS, Json(status.clone()));
    Ok(answer)
}

pub(super) fn approval(answer: &Answer) -> fuseraft_vm::driver::Approval {
    use fuseraft_vm::driver::Approval;
    match (answer.decision.as_str(), &answer.text) {
        ("yes", _) => Approval::Granted,
        ("redirect", Some(text)) => Approval::Redirected(text.clone()),
        _ => Approval::Refused,
    }
}

#[restate_sdk::object]
impl FuseraftQuestion {
    /// Records the question and the awakeable its run waits on.
    #[handler]
    async fn ask(&self, ctx: ObjectContext<'_>, asked: Json<Asked>) -> Result<(), HandlerError> {
        if ctx.get::<Json<Asked>>(keys::ASKED).await?.is_none() {
            ctx.set(keys::ASKED, asked);
        }
        Ok(())
    }

    /// Answers the question, once: a second answer is refused, naming the first.
    #[handler]
    async fn answer(
        &self,
        ctx: ObjectContext<'_>,
        answer: Json<Answer>,
    ) -> Result<Json<Answered>, HandlerError> {
        let Some(Json(asked)) = ctx.get::<Json<Asked>>(keys::ASKED).await? else {
            return Err(TerminalError::new_with_code(
                404,
                format!("no question `{}` is waiting", ctx.key()),
            )
            .into());
        };
        if let Some(Json(first)) = ctx.get::<Json<Answer>>(keys::ANSWER).await? {
            return Err(TerminalError::new_with_code(
                409,
                format!(
                    "question `{}` was already answered `{}` by {} at {}",
                    ctx.key(),
                    first.decision,
                    first.by,
                    first.at
                ),
            )
            .into());
        }
        let answer = answer.into_inner();
        if !matches!(answer.decision.as_str(), "yes" | "no" | "redirect") {
            return Err(refused(format!(
                "`{}` is no answer: yes, no or redirect",
                answer.decision
            )));
        }
        ctx.set(keys::ANSWER, Json(answer.clone()));
        ctx.resolve_awakeable(&asked.awakeable, Json(answer.clone()));
        Ok(Json(Answered {
            id: ctx.key().to_string(),
            question: asked.waiting.question,
            answer,
        }))
    }
}
