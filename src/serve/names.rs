//! Lists of names the server keeps, each a Restate virtual object keyed by the list's name:
//! the schedules, and the sessions not ended yet, so `schedule list` and `sessions list --on`
//! need the ingress only. A list holds what is current, not history: a session leaves it
//! when it ends.

use restate_sdk::prelude::*;

pub const SCHEDULES: &str = "schedules";
pub const SESSIONS: &str = "sessions";
const NAMES: &str = "names";

/// A list of names.
pub struct FuseraftNames;

#[restate_sdk::object]
impl FuseraftNames {
    #[handler]
    async fn enlist(&self, ctx: ObjectContext<'_>, name: String) -> Result<(), HandlerError> {
        let mut names = read(&ctx).await?;
        if let Err(at) = names.binary_search(&name) {
            names.insert(at, name);
            ctx.set(NAMES, Json(names));
        }
        Ok(())
    }

    #[handler]
    async fn delist(&self, ctx: ObjectContext<'_>, name: String) -> Result<(), HandlerError> {
        let mut names = read(&ctx).await?;
        if let Ok(at) = names.binary_search(&name) {
            names.remove(at);
            ctx.set(NAMES, Json(names));
        }
        Ok(())
    }

    #[handler]
    async fn names(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Vec<String>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<Vec<String>>>(NAMES)
                .await?
                .map(Json::into_inner)
                .unwrap_or_default(),
        ))
    }
}

async fn read(ctx: &ObjectContext<'_>) -> Result<Vec<String>, HandlerError> {
    Ok(ctx
        .get::<Json<Vec<String>>>(NAMES)
        .await?
        .map(Json::into_inner)
        .unwrap_or_default())
}

/// The list `list`, to call from a handler.
pub fn of<'ctx>(ctx: &'ctx ObjectContext<'ctx>, list: &str) -> FuseraftNamesClient<'ctx> {
    ctx.object_client::<FuseraftNamesClient>(list)
}
