//! What the console's pages may ask of the server, one trait per area of
//! the console. The server crate implements each beside its logic;
//! server functions reach them all through [`Console`]. Every method that
//! changes something writes its audit entry in the same transaction.

use crate::bulk::{BulkDetail, BulkJob, BulkProposal, BulkStarted, Selection};
use crate::console::{
    Acknowledged, AlertFilter, AlertPage, ApprovalQueue, CallbackDetail, CallbackFilter,
    CallbackPage, Dashboard, DayClose, PaymentFilter, PaymentPage, PaymentView, RawView, ReplayJob,
    RunPage,
};
use crate::error::AppError;
use crate::outbox::{OutboxDetail, OutboxFilter, OutboxJob, OutboxPage, Resent};
use crate::policy::{HeldAction, PolicyPage};
use crate::refused::{RefusedDetail, RefusedFilter, RefusedPage};
use crate::settings::{EditableSettings, SettingsView};
use crate::sinks::{RetriedNow, SinkRow};
use crate::tickets::{
    ActionResult, AuditFilter, AuditPage, FixKind, FixRequest, Neighbours, Proposal,
    ProposalComment, TicketDetail, TicketFilter, TicketPage,
};
use crate::tokens::{CreatedToken, Scope, TokenRow};
use crate::types::User;

/// The console as a whole: every area. Server functions hold it as
/// [`super::SharedConsole`] and call any area's method on it.
pub trait Console:
    Overview
    + Tickets
    + Triage
    + Callbacks
    + Payments
    + Runs
    + Alerts
    + AuditLog
    + Bank
    + DayCloses
    + Bulk
    + Outbox
    + Sinks
    + Refused
    + ApiTokens
    + Policies
    + SettingsVersions
    + 'static
{
}

impl<T> Console for T where
    T: Overview
        + Tickets
        + Triage
        + Callbacks
        + Payments
        + Runs
        + Alerts
        + AuditLog
        + Bank
        + DayCloses
        + Bulk
        + Outbox
        + Sinks
        + Refused
        + ApiTokens
        + Policies
        + SettingsVersions
        + 'static
{
}

/// The dashboard, the business time zone and a supervisor's queue.
#[async_trait::async_trait]
pub trait Overview: Send + Sync {
    /// The business time zone, as pages show times in it.
    fn zone(&self) -> crate::format::Zone;
    async fn dashboard(
        &self,
        day: Option<&str>,
        provider: Option<&str>,
    ) -> Result<Dashboard, AppError>;
    /// What waits for `viewer`'s decision (never their own proposals).
    async fn approval_queue(&self, viewer: &User) -> Result<ApprovalQueue, AppError>;
}

/// The ticket queue, one ticket, and the fix proposals.
#[async_trait::async_trait]
pub trait Tickets: Send + Sync {
    async fn tickets(&self, filter: &TicketFilter) -> Result<TicketPage, AppError>;
    async fn ticket(&self, id: &str) -> Result<TicketDetail, AppError>;
    /// The tickets before and after `id` in the queue `filter` lists.
    async fn ticket_neighbours(
        &self,
        id: &str,
        filter: &TicketFilter,
    ) -> Result<Neighbours, AppError>;
    async fn proposals(&self, status: &str) -> Result<Vec<Proposal>, AppError>;
}

/// What finance staff do to a ticket, and the two-person rule's decisions.
#[async_trait::async_trait]
pub trait Triage: Send + Sync {
    async fn assign(&self, actor: &User, id: &str, owner: &str) -> Result<(), AppError>;
    async fn comment(&self, actor: &User, id: &str, text: &str) -> Result<(), AppError>;
    /// A comment on a proposal, without deciding it.
    async fn comment_proposal(
        &self,
        actor: &User,
        proposal_id: &str,
        text: &str,
    ) -> Result<ProposalComment, AppError>;
    /// `kind`: text | reference (files come through their own upload route).
    async fn add_evidence(
        &self,
        actor: &User,
        id: &str,
        kind: &str,
        text: &str,
    ) -> Result<(), AppError>;
    async fn conclude(&self, actor: &User, id: &str, conclusion: &str) -> Result<(), AppError>;
    async fn requery(&self, actor: &User, id: &str) -> Result<ActionResult, AppError>;
    async fn replay(
        &self,
        actor: &User,
        id: &str,
        callback_row: &str,
    ) -> Result<ActionResult, AppError>;
    async fn propose(&self, actor: &User, fix: &FixRequest) -> Result<String, AppError>;
    async fn approve(
        &self,
        actor: &User,
        proposal_id: &str,
        comment: &str,
    ) -> Result<ActionResult, AppError>;
    async fn reject(&self, actor: &User, proposal_id: &str, comment: &str) -> Result<(), AppError>;
}

/// Stored callbacks and their replay, one or in bulk.
#[async_trait::async_trait]
pub trait Callbacks: Send + Sync {
    async fn callbacks(&self, filter: &CallbackFilter) -> Result<CallbackPage, AppError>;
    async fn callback(&self, id: &str) -> Result<CallbackDetail, AppError>;
    /// The callback unmasked, for a user with raw access; the look audited.
    async fn callback_raw(&self, actor: &User, id: &str) -> Result<RawView, AppError>;
    async fn replay_callback(&self, actor: &User, id: &str) -> Result<ActionResult, AppError>;
    /// DEAD callbacks of a provider received in [from, to] (business days).
    async fn start_bulk_replay(
        &self,
        actor: &User,
        provider: &str,
        from: &str,
        to: &str,
    ) -> Result<String, AppError>;
    async fn replay_jobs(&self) -> Result<Vec<ReplayJob>, AppError>;
}

#[async_trait::async_trait]
pub trait Payments: Send + Sync {
    async fn payments(&self, filter: &PaymentFilter) -> Result<PaymentPage, AppError>;
    async fn payment(&self, payment_no: &str) -> Result<PaymentView, AppError>;
}

/// Reconciliation runs.
#[async_trait::async_trait]
pub trait Runs: Send + Sync {
    async fn runs(&self, after: Option<&str>) -> Result<RunPage, AppError>;
    async fn resume_run(&self, actor: &User, id: &str) -> Result<(), AppError>;
}

#[async_trait::async_trait]
pub trait Alerts: Send + Sync {
    async fn alerts(&self, filter: &AlertFilter) -> Result<AlertPage, AppError>;
    async fn acknowledge_alert(
        &self,
        actor: &User,
        id: &str,
        comment: &str,
    ) -> Result<(), AppError>;
    async fn acknowledge_alerts(
        &self,
        actor: &User,
        ids: &[String],
        comment: &str,
    ) -> Result<Acknowledged, AppError>;
}

#[async_trait::async_trait]
pub trait AuditLog: Send + Sync {
    async fn audit(&self, filter: &AuditFilter) -> Result<AuditPage, AppError>;
}

#[async_trait::async_trait]
pub trait Bank: Send + Sync {
    /// The latest bank statements and payouts with their match state.
    async fn bank(&self) -> Result<crate::bank::BankView, AppError>;
}

#[async_trait::async_trait]
pub trait DayCloses: Send + Sync {
    /// Each provider's money and close of a business day.
    async fn day_closes(&self, day: &str) -> Result<Vec<DayClose>, AppError>;
    /// Close a day, or propose, approve or reject reopening it.
    async fn day_close_action(
        &self,
        actor: &User,
        action: &str,
        provider: &str,
        day: &str,
        reason: &str,
    ) -> Result<(), AppError>;
}

/// Bulk work: each item through the single ticket's own action, in a
/// background job.
#[async_trait::async_trait]
pub trait Bulk: Send + Sync {
    /// `action`: ASSIGN (text = owner) | COMMENT | CLOSE (text = conclusion).
    async fn bulk_action(
        &self,
        actor: &User,
        action: &str,
        text: &str,
        selection: &Selection,
    ) -> Result<BulkStarted, AppError>;
    async fn bulk_propose(
        &self,
        actor: &User,
        kind: FixKind,
        reason: &str,
        evidence: &str,
        selection: &Selection,
    ) -> Result<BulkStarted, AppError>;
    /// Every waiting item of a bulk proposal approved (or rejected).
    async fn bulk_decide(
        &self,
        actor: &User,
        bulk_id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<BulkStarted, AppError>;
    async fn bulk_cancel(&self, actor: &User, job_id: &str) -> Result<(), AppError>;
    /// A bulk close undone within its window: its tickets reopened by a job.
    async fn bulk_undo(&self, actor: &User, job_id: &str) -> Result<BulkStarted, AppError>;
    async fn bulk_job(&self, job_id: &str) -> Result<BulkJob, AppError>;
    async fn bulk_jobs(&self) -> Result<Vec<BulkJob>, AppError>;
    async fn bulk_proposals(&self) -> Result<Vec<BulkProposal>, AppError>;
    async fn bulk_proposal(&self, id: &str) -> Result<BulkDetail, AppError>;
}

/// The outbox: messages, their deliveries, and queuing them again.
#[async_trait::async_trait]
pub trait Outbox: Send + Sync {
    async fn outbox(&self, filter: &OutboxFilter) -> Result<OutboxPage, AppError>;
    async fn outbox_message(&self, id: &str) -> Result<OutboxDetail, AppError>;
    async fn outbox_resend(
        &self,
        actor: &User,
        id: &str,
        sink: Option<&str>,
    ) -> Result<Resent, AppError>;
    async fn outbox_bulk_resend(
        &self,
        actor: &User,
        filter: &OutboxFilter,
    ) -> Result<OutboxJob, AppError>;
    async fn outbox_recover(
        &self,
        actor: &User,
        sink: &str,
        since: &str,
    ) -> Result<OutboxJob, AppError>;
    async fn outbox_jobs(&self) -> Result<Vec<OutboxJob>, AppError>;
    async fn outbox_cancel_job(&self, actor: &User, job_id: &str) -> Result<OutboxJob, AppError>;
}

/// Outbox sinks as endpoints.
#[async_trait::async_trait]
pub trait Sinks: Send + Sync {
    async fn sinks(&self) -> Result<Vec<SinkRow>, AppError>;
    /// Pause (`pause`) or resume a sink, with a reason.
    async fn set_sink_paused(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
        pause: bool,
    ) -> Result<(), AppError>;
    /// A sink's deliveries waiting for a later retry made due now, with a
    /// reason.
    async fn retry_sink_now(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
    ) -> Result<RetriedNow, AppError>;
}

/// Refused webhooks.
#[async_trait::async_trait]
pub trait Refused: Send + Sync {
    async fn refused(&self, filter: &RefusedFilter) -> Result<RefusedPage, AppError>;
    async fn refused_one(&self, id: &str) -> Result<RefusedDetail, AppError>;
    /// The refused webhook unmasked, for a user with raw access; the look
    /// audited.
    async fn refused_raw(&self, actor: &User, id: &str) -> Result<RawView, AppError>;
}

/// API tokens (admins): list, make (owned by `actor`; the token shown
/// once), revoke.
#[async_trait::async_trait]
pub trait ApiTokens: Send + Sync {
    async fn api_tokens(&self) -> Result<Vec<TokenRow>, AppError>;
    async fn create_api_token(
        &self,
        actor: &User,
        name: &str,
        scopes: &[Scope],
        expires_days: Option<u32>,
    ) -> Result<CreatedToken, AppError>;
    async fn revoke_api_token(&self, actor: &User, id: &str) -> Result<(), AppError>;
}

/// The approval policy: the version in force, the change waiting and the
/// past; an admin's change proposed, or another admin's decided (the
/// answer says where it stands).
#[async_trait::async_trait]
pub trait Policies: Send + Sync {
    async fn policy_page(&self) -> Result<PolicyPage, AppError>;
    async fn propose_policy(
        &self,
        actor: &User,
        text: &str,
        reason: &str,
    ) -> Result<String, AppError>;
    async fn decide_policy(
        &self,
        actor: &User,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<String, AppError>;
    /// The actions held for approval: pending first, then the latest decided.
    async fn held_actions(&self) -> Result<Vec<HeldAction>, AppError>;
    /// Approves (it runs at the last approval it needs) or rejects (the
    /// proposer: withdraws) held action `id`.
    async fn decide_held(
        &self,
        actor: &User,
        id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<String, AppError>;
}

/// The settings that decide money (supervisors and admins): the version in
/// force and its history; a change proposed by one, approved or rejected
/// by another (the proposer may withdraw their own).
#[async_trait::async_trait]
pub trait SettingsVersions: Send + Sync {
    async fn settings_view(&self) -> Result<SettingsView, AppError>;
    async fn propose_settings(
        &self,
        actor: &User,
        edits: &EditableSettings,
        reason: &str,
    ) -> Result<(), AppError>;
    async fn decide_settings(&self, actor: &User, id: &str, approve: bool) -> Result<(), AppError>;
}
