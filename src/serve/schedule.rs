//! Schedules kept by the Restate server: a virtual object per schedule name holding its cron
//! expression and the run it submits, with one durable timer set for its next tick. A tick
//! that fires starts a session whose id is derived from the schedule and the tick, sets the
//! next timer and records what it started; a timer that is not the schedule's next (the
//! schedule was removed or added again since) does nothing. So a schedule fires once per
//! tick however many workers serve it, and survives every restart.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::job::Job;
use super::names;
use super::objects::FuseraftSessionClient;

/// The virtual object of one schedule, keyed by its name.
pub const SCHEDULE: &str = "FuseraftSchedule";
const STATE: &str = "schedule";
/// How many fired ticks a schedule remembers.
const FIRED_KEPT: usize = 100;

/// A schedule as `schedule add` submits it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Added {
    pub cron: String,
    pub job: Job,
}

/// A schedule as the server keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Schedule {
    pub cron: String,
    pub job: Job,
    /// The tick the timer is set for, in milliseconds since the epoch (UTC).
    pub next: i64,
    /// The ticks that fired (newest last, the last 100) and the session each started.
    pub fired: Vec<Fired>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Fired {
    pub tick: i64,
    pub session: String,
}

/// `cron` read as the `cron` crate reads it: five fields (minute first) get a seconds field
/// of `0`; six or seven fields start with seconds.
pub fn parse(cron: &str) -> Result<cron::Schedule, String> {
    let fields = cron.split_whitespace().count();
    let text = if fields == 5 {
        format!("0 {cron}")
    } else {
        cron.to_string()
    };
    cron::Schedule::from_str(&text)
        .map_err(|error| format!("`{cron}` is no cron expression: {error}"))
}

/// The first tick of `cron` after `after` (milliseconds since the epoch).
fn next_tick(cron: &str, after: i64) -> Result<i64, String> {
    let schedule = parse(cron)?;
    let after: DateTime<Utc> = Utc
        .timestamp_millis_opt(after)
        .single()
        .ok_or("the clock is out of range")?;
    schedule
        .after(&after)
        .next()
        .map(|tick| tick.timestamp_millis())
        .ok_or_else(|| format!("`{cron}` has no tick after now"))
}

/// The session a tick of schedule `name` starts: eight hex digits of their digest.
pub fn session_for(name: &str, tick: i64) -> String {
    let digest = Sha256::digest(format!("{name}\n{tick}").as_bytes());
    digest[..4]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn refused(message: impl Into<String>) -> HandlerError {
    TerminalError::new(message.into()).into()
}

/// The schedule's object.
pub struct FuseraftSchedule;

#[restate_sdk::object]
impl FuseraftSchedule {
    /// Keeps a new schedule and sets its first timer; a name in use is refused.
    #[handler]
    async fn add(
        &self,
        ctx: ObjectContext<'_>,
        added: Json<Added>,
    ) -> Result<Json<Schedule>, HandlerError> {
        if ctx.get::<Json<Schedule>>(STATE).await?.is_some() {
            return Err(TerminalError::new_with_code(
                409,
                format!("a schedule `{}` exists; remove it first", ctx.key()),
            )
            .into());
        }
        let Added { cron, job } = added.into_inner();
        parse(&cron).map_err(refused)?;
        let now = now(&ctx).await?;
        let next = next_tick(&cron, now).map_err(refused)?;
        let schedule = Schedule {
            cron,
            job,
            next,
            fired: Vec::new(),
        };
        ctx.set(STATE, Json(schedule.clone()));
        set_timer(&ctx, next, now);
        names::of(&ctx, names::SCHEDULES)
            .enlist(ctx.key().to_string())
            .send();
        Ok(Json(schedule))
    }

    /// A timer fired: starts the tick's session and sets the next timer, unless the timer is
    /// not the schedule's next one.
    #[handler]
    async fn tick(&self, ctx: ObjectContext<'_>, tick: Json<i64>) -> Result<(), HandlerError> {
        let tick = tick.into_inner();
        let Some(Json(mut schedule)) = ctx.get::<Json<Schedule>>(STATE).await? else {
            return Ok(());
        };
        if schedule.next != tick {
            return Ok(());
        }
        let session = start(&ctx, &schedule.job, tick);
        schedule.fired.push(Fired { tick, session });
        let excess = schedule.fired.len().saturating_sub(FIRED_KEPT);
        schedule.fired.drain(..excess);
        let now = now(&ctx).await?;
        schedule.next = next_tick(&schedule.cron, now.max(tick)).map_err(refused)?;
        set_timer(&ctx, schedule.next, now);
        ctx.set(STATE, Json(schedule));
        Ok(())
    }

    /// Starts a session now, outside the ticks; its id.
    #[handler]
    async fn run(&self, ctx: ObjectContext<'_>) -> Result<String, HandlerError> {
        let Some(Json(schedule)) = ctx.get::<Json<Schedule>>(STATE).await? else {
            return Err(
                TerminalError::new_with_code(404, format!("no schedule `{}`", ctx.key())).into(),
            );
        };
        let now = now(&ctx).await?;
        Ok(start(&ctx, &schedule.job, now))
    }

    /// Forgets the schedule: its timer then does nothing.
    #[handler]
    async fn remove(&self, ctx: ObjectContext<'_>) -> Result<(), HandlerError> {
        if ctx.get::<Json<Schedule>>(STATE).await?.is_none() {
            return Err(
                TerminalError::new_with_code(404, format!("no schedule `{}`", ctx.key())).into(),
            );
        }
        ctx.clear(STATE);
        names::of(&ctx, names::SCHEDULES)
            .delist(ctx.key().to_string())
            .send();
        Ok(())
    }

    /// The schedule, if there is one.
    #[handler]
    async fn show(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Option<Schedule>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<Schedule>>(STATE)
                .await?
                .map(Json::into_inner),
        ))
    }
}

/// The time now, journaled (a retry sees the same).
async fn now(ctx: &ObjectContext<'_>) -> Result<i64, HandlerError> {
    Ok(ctx
        .run(|| async { Ok(Utc::now().timestamp_millis()) })
        .name("now")
        .await?)
}

fn set_timer(ctx: &ObjectContext<'_>, tick: i64, now: i64) {
    let delay = Duration::from_millis(u64::try_from(tick - now).unwrap_or(0));
    ctx.object_client::<FuseraftScheduleClient>(ctx.key())
        .tick(Json(tick))
        .send_after(delay);
}

/// Submits `job` as the session of `tick`; its id.
fn start(ctx: &ObjectContext<'_>, job: &Job, tick: i64) -> String {
    let session = session_for(ctx.key(), tick);
    ctx.object_client::<FuseraftSessionClient>(&session)
        .start(Json(job.clone()))
        .send();
    session
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_fields_are_minutes_first_and_ticks_follow_one_another() {
        let start = 1_700_000_000_000; // 2023-11-14T22:13:20Z
        let first = next_tick("*/15 * * * *", start).unwrap();
        assert_eq!(first % (15 * 60_000), 0);
        assert!(first > start && first - start <= 15 * 60_000);
        assert_eq!(
            next_tick("*/15 * * * *", first).unwrap(),
            first + 15 * 60_000
        );
        assert_eq!(next_tick("*/2 * * * * *", start).unwrap(), start + 2_000);
        assert!(parse("every day")
            .unwrap_err()
            .contains("no cron expression"));
        assert_ne!(
            session_for("nightly", first),
            session_for("nightly", first + 1)
        );
        assert!(crate::session::valid_id(&session_for("nightly", first)));
    }
}
