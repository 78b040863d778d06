//! The console's backend, behind `app::ssr::Console`: what every page
//! reads — the dashboard ([`dashboard`]), the lists of callbacks, payments,
//! runs and alerts and the audit log ([`lists`]), a callback's and a
//! payment's record ([`details`]), tickets ([`tickets`]), the CSV export
//! ([`export`]) with secrets masked ([`mask`]) — and, handed to their
//! owners, what its pages do: triage's ticket actions and fixes
//! ([`crate::triage`]), replays, resuming a run, acknowledging an alert
//! ([`actions`]). It holds no SQL: that is `store`'s.

mod actions;
mod ageing;
mod bank;
mod bulk;
mod closes;
mod dashboard;
mod details;
mod export;
mod lists;
pub mod mask;
pub mod outbox;
mod refused;
pub mod sinks;
mod tickets;

pub use bulk::bulk_job;
pub use export::export_csv;
pub use tickets::evidence_file;

use crate::accounts::internal;
use crate::domain::{Currency, Money};
use crate::engine::Engine;
use crate::triage;
use app::bulk::{BulkDetail, BulkJob, BulkProposal, BulkStarted, Selection};
use app::console::{
    AlertPage, CallbackDetail, CallbackFilter, CallbackPage, Dashboard, PaymentFilter, PaymentPage,
    PaymentView, ReplayJob, RunPage,
};
use app::error::AppError;
use app::ssr::Console;
use app::tickets::{
    ActionResult, AuditFilter, AuditPage, FixKind, FixRequest, Proposal, TicketDetail,
    TicketFilter, TicketPage,
};
use app::types::User;

/// The console's one backend object, placed in Leptos context.
#[derive(Clone)]
pub struct Desk {
    pub engine: Engine,
}

impl Desk {
    pub fn new(engine: Engine) -> Desk {
        Desk { engine }
    }

    fn now(&self) -> i64 {
        self.engine.now()
    }

    fn tz(&self) -> &jiff::tz::TimeZone {
        &self.engine.settings.timezone
    }

    /// The business day `day` (YYYY-MM-DD) as [start, end) microseconds.
    fn range(&self, day: &str) -> Result<(i64, i64), AppError> {
        crate::recon::day_range(day, self.tz()).map_err(invalid)
    }

    /// `YYYY-MM-DD HH:MM Zone`: an instant in the business time zone,
    /// the zone named.
    fn local_minutes(&self, micros: i64) -> String {
        let at = jiff::Timestamp::from_microsecond(micros)
            .unwrap_or_default()
            .to_zoned(self.tz().clone());
        let zone = match self.tz().iana_name() {
            Some(name) => name.to_owned(),
            None => at.strftime("UTC%:z").to_string(),
        };
        format!("{} {zone}", at.strftime("%Y-%m-%d %H:%M"))
    }

    /// The configured providers, by name.
    fn providers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.engine.providers.names().map(str::to_owned).collect();
        names.sort();
        names
    }
}

/// Input the caller must correct.
pub(crate) fn invalid(detail: impl Into<String>) -> AppError {
    AppError::Invalid {
        detail: detail.into(),
    }
}

/// "1,234.56 CNY" for minor units of a known currency, else the raw figures.
pub(crate) fn money_text(minor: Option<i64>, currency: Option<&str>) -> Option<String> {
    let minor = minor?;
    let currency = currency.unwrap_or("");
    Some(match Currency::parse(currency) {
        Ok(c) => Money::new(minor, c).shown(),
        Err(_) => format!("{minor} (minor units) {currency}"),
    })
}

/// "1234.56 CNY": [`money_text`] without the grouping, for a file a
/// program reads (the CSV export).
pub(crate) fn money_plain(minor: Option<i64>, currency: Option<&str>) -> Option<String> {
    let minor = minor?;
    let currency = currency.unwrap_or("");
    Some(match Currency::parse(currency) {
        Ok(c) => Money::new(minor, c).to_string(),
        Err(_) => format!("{minor} (minor units) {currency}"),
    })
}

/// The first `PAGE_SIZE` of `items` read one past the page, and the cursor
/// of the next page (from the last item kept) if there is one.
fn page<T, C>(mut items: Vec<T>, cursor: impl Fn(&T) -> C) -> (Vec<T>, Option<C>) {
    let size = app::tickets::PAGE_SIZE as usize;
    if items.len() > size {
        items.truncate(size);
        let next = items.last().map(cursor);
        (items, next)
    } else {
        (items, None)
    }
}

/// Years of offsets a page gets around now: the times the console shows.
const ZONE_YEARS_BACK: i64 = 10;
const ZONE_YEARS_AHEAD: i64 = 5;

/// `tz` as the browser gets it: its name and its offsets from some years
/// before `now` to some after (a fixed zone: one offset).
pub(crate) fn zone_of(tz: &jiff::tz::TimeZone, now: i64) -> app::format::Zone {
    const YEAR_US: i64 = 366 * 86_400 * 1_000_000;
    let at = |micros: i64| {
        jiff::Timestamp::from_microsecond(micros).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    };
    let (from, to) = (
        at(now.saturating_sub(ZONE_YEARS_BACK * YEAR_US)),
        at(now.saturating_add(ZONE_YEARS_AHEAD * YEAR_US)),
    );
    let mut offsets = vec![(from.as_microsecond(), tz.to_offset(from).seconds())];
    offsets.extend(
        tz.following(from)
            .take_while(|t| t.timestamp() <= to)
            .map(|t| (t.timestamp().as_microsecond(), t.offset().seconds())),
    );
    let name = match tz.iana_name() {
        Some(name) => name.to_owned(),
        None => match tz.to_offset(from).seconds() {
            0 => String::new(),
            _ => format!("UTC{}", tz.to_offset(from)),
        },
    };
    app::format::Zone { name, offsets }
}

#[async_trait::async_trait]
impl Console for Desk {
    fn zone(&self) -> app::format::Zone {
        zone_of(self.tz(), self.now())
    }

    async fn tickets(&self, filter: &TicketFilter) -> Result<TicketPage, AppError> {
        tickets::list(
            &self.engine.db,
            filter,
            self.now(),
            &self.engine.settings.sla,
        )
        .await
    }

    async fn ticket(&self, id: &str) -> Result<TicketDetail, AppError> {
        tickets::detail(&self.engine.db, id, self.now(), &self.engine.settings.sla)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)
    }

    async fn ticket_neighbours(
        &self,
        id: &str,
        filter: &TicketFilter,
    ) -> Result<app::tickets::Neighbours, AppError> {
        tickets::neighbours(&self.engine.db, id, filter, self.now()).await
    }

    async fn assign(&self, actor: &User, id: &str, owner: &str) -> Result<(), AppError> {
        triage::assign(&self.engine, actor, id, owner).await
    }

    async fn comment(&self, actor: &User, id: &str, text: &str) -> Result<(), AppError> {
        triage::comment(&self.engine, actor, id, text).await
    }

    async fn add_evidence(
        &self,
        actor: &User,
        id: &str,
        kind: &str,
        text: &str,
    ) -> Result<(), AppError> {
        triage::add_evidence(&self.engine, actor, id, kind, text).await
    }

    async fn conclude(&self, actor: &User, id: &str, conclusion: &str) -> Result<(), AppError> {
        triage::conclude(&self.engine, actor, id, conclusion).await
    }

    async fn requery(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        triage::requery(&self.engine, actor, id).await
    }

    async fn replay(
        &self,
        actor: &User,
        id: &str,
        callback_row: &str,
    ) -> Result<ActionResult, AppError> {
        triage::replay(&self.engine, actor, id, callback_row).await
    }

    async fn propose(&self, actor: &User, fix: &FixRequest) -> Result<String, AppError> {
        triage::fixes::propose(&self.engine, actor, fix).await
    }

    async fn proposals(&self, status: &str) -> Result<Vec<Proposal>, AppError> {
        let mut list =
            crate::store::proposals::list(&self.engine.db.pool, status, None, self.now())
                .await
                .map_err(internal)?;
        // The queue's cards show what was said; the recent list does not.
        if status == "PENDING" {
            tickets::with_comments(&self.engine.db.pool, &mut list)
                .await
                .map_err(internal)?;
        }
        Ok(list)
    }

    async fn comment_proposal(
        &self,
        actor: &User,
        proposal_id: &str,
        text: &str,
    ) -> Result<app::tickets::ProposalComment, AppError> {
        triage::comment_proposal(&self.engine, actor, proposal_id, text).await
    }

    async fn approve(
        &self,
        actor: &User,
        proposal_id: &str,
        comment: &str,
    ) -> Result<ActionResult, AppError> {
        triage::fixes::approve(&self.engine, actor, proposal_id, comment).await
    }

    async fn reject(&self, actor: &User, proposal_id: &str, comment: &str) -> Result<(), AppError> {
        triage::fixes::reject(&self.engine, actor, proposal_id, comment).await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<AuditPage, AppError> {
        // From and To are business days, as every day the console names.
        let day = |d: &Option<String>| -> Result<Option<(i64, i64)>, AppError> {
            match d.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
                Some(d) => self.range(d).map(Some),
                None => Ok(None),
            }
        };
        let days = (
            day(&filter.from)?.map(|(start, _)| start),
            day(&filter.to)?.map(|(_, end)| end),
        );
        lists::audit(&self.engine.db, filter, days)
            .await
            .map_err(internal)
    }

    async fn dashboard(
        &self,
        day: Option<&str>,
        provider: Option<&str>,
    ) -> Result<Dashboard, AppError> {
        self.dashboard_of(day, provider).await
    }

    async fn callbacks(&self, filter: &CallbackFilter) -> Result<CallbackPage, AppError> {
        self.callback_page(filter).await
    }

    async fn callback(&self, id: &str) -> Result<CallbackDetail, AppError> {
        details::callback(&self.engine.db, id, &|at| self.local_minutes(at)).await
    }

    async fn replay_callback(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        actions::replay_one(&self.engine, &actor.username, id, None).await
    }

    async fn start_bulk_replay(
        &self,
        actor: &User,
        provider: &str,
        from: &str,
        to: &str,
    ) -> Result<String, AppError> {
        self.start_replay_job(actor, provider, from, to).await
    }

    async fn replay_jobs(&self) -> Result<Vec<ReplayJob>, AppError> {
        actions::replay_jobs(&self.engine, None).await
    }

    async fn payments(&self, filter: &PaymentFilter) -> Result<PaymentPage, AppError> {
        self.payment_page(filter).await
    }

    async fn payment(&self, payment_no: &str) -> Result<PaymentView, AppError> {
        details::payment(&self.engine.db, payment_no, &|at| self.local_minutes(at)).await
    }

    async fn runs(&self, after: Option<&str>) -> Result<RunPage, AppError> {
        self.run_page(after).await
    }

    async fn resume_run(&self, actor: &User, id: &str) -> Result<(), AppError> {
        actions::resume(&self.engine, actor, id).await
    }

    async fn refused(
        &self,
        filter: &app::refused::RefusedFilter,
    ) -> Result<app::refused::RefusedPage, AppError> {
        self.refused_page(filter).await
    }

    async fn refused_one(&self, id: &str) -> Result<app::refused::RefusedDetail, AppError> {
        self.refused_detail(id).await
    }

    async fn bank(&self) -> Result<app::bank::BankView, AppError> {
        bank::view(&self.engine).await.map_err(internal)
    }

    async fn alerts(&self, filter: &app::console::AlertFilter) -> Result<AlertPage, AppError> {
        self.alert_page(filter).await
    }

    async fn acknowledge_alerts(
        &self,
        actor: &User,
        ids: &[String],
        comment: &str,
    ) -> Result<app::console::Acknowledged, AppError> {
        actions::acknowledge_many(&self.engine, actor, ids, comment).await
    }

    async fn approval_queue(&self, viewer: &User) -> Result<app::console::ApprovalQueue, AppError> {
        self.queue_for(viewer).await
    }

    async fn acknowledge_alert(
        &self,
        actor: &User,
        id: &str,
        comment: &str,
    ) -> Result<(), AppError> {
        actions::acknowledge(&self.engine, actor, id, comment).await
    }

    async fn day_closes(&self, day: &str) -> Result<Vec<app::console::DayClose>, AppError> {
        self.closes_of_day(day).await
    }

    async fn day_close_action(
        &self,
        actor: &User,
        action: &str,
        provider: &str,
        day: &str,
        reason: &str,
    ) -> Result<(), AppError> {
        self.act_on_day(actor, action, provider, day, reason).await
    }

    // Bulk work.
    async fn bulk_action(
        &self,
        actor: &User,
        action: &str,
        text: &str,
        selection: &Selection,
    ) -> Result<BulkStarted, AppError> {
        self.bulk_action_of(actor, action, text, selection).await
    }

    async fn bulk_propose(
        &self,
        actor: &User,
        kind: FixKind,
        reason: &str,
        evidence: &str,
        selection: &Selection,
    ) -> Result<BulkStarted, AppError> {
        self.bulk_propose_of(actor, kind, reason, evidence, selection)
            .await
    }

    async fn bulk_decide(
        &self,
        actor: &User,
        bulk_id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<BulkStarted, AppError> {
        self.bulk_decide_of(actor, bulk_id, approve, comment).await
    }

    async fn bulk_cancel(&self, actor: &User, job_id: &str) -> Result<(), AppError> {
        self.bulk_cancel_of(actor, job_id).await
    }

    async fn bulk_undo(&self, actor: &User, job_id: &str) -> Result<BulkStarted, AppError> {
        self.bulk_undo_of(actor, job_id).await
    }

    async fn bulk_job(&self, job_id: &str) -> Result<BulkJob, AppError> {
        self.bulk_job_of(job_id).await
    }

    async fn bulk_jobs(&self) -> Result<Vec<BulkJob>, AppError> {
        self.bulk_jobs_of(None).await
    }

    async fn bulk_proposals(&self) -> Result<Vec<BulkProposal>, AppError> {
        self.bulk_proposals_of().await
    }

    async fn bulk_proposal(&self, id: &str) -> Result<BulkDetail, AppError> {
        self.bulk_detail_of(id).await
    }

    // ---- the outbox -------------------------------------------------
    async fn outbox(
        &self,
        filter: &app::outbox::OutboxFilter,
    ) -> Result<app::outbox::OutboxPage, AppError> {
        outbox::list(&self.engine, filter).await
    }

    async fn outbox_message(&self, id: &str) -> Result<app::outbox::OutboxDetail, AppError> {
        outbox::message(&self.engine, id).await
    }

    async fn outbox_resend(
        &self,
        actor: &User,
        id: &str,
        sink: Option<&str>,
    ) -> Result<app::outbox::Resent, AppError> {
        crate::outbox::jobs::resend(&self.engine, &actor.username, id, sink).await
    }

    async fn outbox_bulk_resend(
        &self,
        actor: &User,
        filter: &app::outbox::OutboxFilter,
    ) -> Result<app::outbox::OutboxJob, AppError> {
        crate::outbox::jobs::start_resend(
            &self.engine,
            &actor.username,
            filter,
            crate::outbox::jobs::Run::Background,
        )
        .await
    }

    async fn outbox_recover(
        &self,
        actor: &User,
        sink: &str,
        since: &str,
    ) -> Result<app::outbox::OutboxJob, AppError> {
        crate::outbox::jobs::start_recover(
            &self.engine,
            &actor.username,
            sink,
            since,
            crate::outbox::jobs::Run::Background,
        )
        .await
    }

    async fn outbox_jobs(&self) -> Result<Vec<app::outbox::OutboxJob>, AppError> {
        crate::outbox::jobs::jobs(&self.engine).await
    }

    async fn outbox_cancel_job(
        &self,
        actor: &User,
        job_id: &str,
    ) -> Result<app::outbox::OutboxJob, AppError> {
        crate::outbox::jobs::cancel(&self.engine, &actor.username, job_id).await
    }

    async fn sinks(&self) -> Result<Vec<app::sinks::SinkRow>, AppError> {
        sinks::list(&self.engine).await
    }

    async fn set_sink_paused(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
        pause: bool,
    ) -> Result<(), AppError> {
        crate::outbox::sinks::set_paused(&self.engine, &actor.username, name, reason, pause).await
    }

    async fn retry_sink_now(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
    ) -> Result<app::sinks::RetriedNow, AppError> {
        crate::outbox::sinks::retry_now(&self.engine, &actor.username, name, reason).await
    }
}

#[cfg(test)]
mod tests {
    use super::zone_of;

    #[test]
    fn a_zone_reaches_the_browser_as_its_offsets() {
        // 2026-12-04 09:05 UTC
        let now = 1_796_375_130_000_000;
        let shanghai = zone_of(&jiff::tz::TimeZone::get("Asia/Shanghai").unwrap(), now);
        assert_eq!(shanghai.named(now), "2026-12-04 17:05 Asia/Shanghai");
        assert_eq!(shanghai.offsets.len(), 1, "no changes in those years");
        let london = zone_of(&jiff::tz::TimeZone::get("Europe/London").unwrap(), now);
        assert_eq!(london.named(now), "2026-12-04 09:05 Europe/London");
        // 2026-07-01 12:00 UTC: summer time.
        assert_eq!(london.minutes(1_782_907_200_000_000), "2026-07-01 13:00");
        let utc = zone_of(&jiff::tz::TimeZone::UTC, now);
        assert_eq!(utc.named(now), "2026-12-04 09:05 UTC");
        let fixed = zone_of(&jiff::tz::TimeZone::fixed(jiff::tz::offset(8)), now);
        assert_eq!(fixed.named(now), "2026-12-04 17:05 UTC+08");
    }
}
