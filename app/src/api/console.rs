//! Server functions of the dashboard, callbacks, payments, runs and alerts.
//! Reading is open to every role; replaying, resuming and acknowledging to
//! operators and supervisors.

use crate::console::{
    Acknowledged, AlertFilter, AlertPage, ApprovalQueue, CallbackDetail, CallbackFilter,
    CallbackPage, Dashboard as DashboardData, PaymentFilter, PaymentPage, PaymentView, RawView,
    ReplayJob, RunPage,
};
use crate::error::AppError;
use crate::tickets::ActionResult;
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::tickets::WORK;
#[cfg(feature = "ssr")]
use crate::filter::QueryFilter;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

#[server(endpoint = "dashboard")]
pub async fn load_dashboard(
    day: Option<String>,
    provider: Option<String>,
) -> Result<DashboardData, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(Role::ALL).await?;
        let mut dashboard = desk.dashboard(day.as_deref(), provider.as_deref()).await?;
        // A supervisor's own queue, read with the page (not a second
        // request the page would wait for).
        if caller.user.role == Role::Supervisor {
            dashboard.queue = Some(desk.approval_queue(&caller.user).await?);
        }
        Ok(dashboard)
    })
    .await
}

#[server(endpoint = "callbacks/list")]
pub async fn list_callbacks(
    #[server(default)] filter: CallbackFilter,
) -> Result<CallbackPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.callbacks(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "callbacks/show")]
pub async fn show_callback(id: String) -> Result<CallbackDetail, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.callback(&id).await
    })
    .await
}

/// The callback unmasked: users an admin gave raw access; each look is
/// audited.
#[server(endpoint = "callbacks/raw")]
pub async fn raw_callback(id: String) -> Result<RawView, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(Role::ALL).await?;
        desk.callback_raw(&caller.user, &id).await
    })
    .await
}

#[server(endpoint = "callbacks/replay")]
pub async fn replay_callback(id: String) -> Result<ActionResult, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.replay_callback(&caller.user, &id).await
    })
    .await
}

#[server(endpoint = "callbacks/bulk-replay")]
pub async fn bulk_replay(provider: String, from: String, to: String) -> Result<String, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.start_bulk_replay(&caller.user, &provider, &from, &to)
            .await
    })
    .await
}

#[server(endpoint = "callbacks/replay-jobs")]
pub async fn replay_jobs() -> Result<Vec<ReplayJob>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.replay_jobs().await
    })
    .await
}

#[server(endpoint = "payments/list")]
pub async fn list_payments(
    #[server(default)] filter: PaymentFilter,
) -> Result<PaymentPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.payments(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "payments/show")]
pub async fn show_payment(payment_no: String) -> Result<PaymentView, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.payment(&payment_no).await
    })
    .await
}

#[server(endpoint = "runs/list")]
pub async fn list_runs(after: Option<String>) -> Result<RunPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.runs(after.as_deref()).await
    })
    .await
}

#[server(endpoint = "runs/resume")]
pub async fn resume_run(id: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.resume_run(&caller.user, &id).await
    })
    .await
}

/// Alerts newest first, a page at a time, as `filter` says.
#[server(endpoint = "alerts/list")]
pub async fn list_alerts(#[server(default)] filter: AlertFilter) -> Result<AlertPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.alerts(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "alerts/acknowledge")]
pub async fn acknowledge_alert(id: String, comment: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.acknowledge_alert(&caller.user, &id, &comment).await
    })
    .await
}

/// Acknowledges the ticked alerts (`ids`) with one comment, each audited;
/// those no longer open are left and named.
#[server(endpoint = "alerts/acknowledge-many")]
pub async fn acknowledge_alerts(
    #[server(default)] ids: Vec<String>,
    comment: String,
) -> Result<Acknowledged, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.acknowledge_alerts(&caller.user, &ids, &comment).await
    })
    .await
}

/// What waits for the viewer's decision; supervisors only.
#[server(endpoint = "approvals/queue")]
pub async fn waiting_for_me() -> Result<ApprovalQueue, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(super::tickets::DECIDE).await?;
        desk.approval_queue(&caller.user).await
    })
    .await
}
