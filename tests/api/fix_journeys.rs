//! Every fix kind followed through the next day's reconciliation, on SQLite
//! and PostgreSQL: statement day D reconciled, its ticket, a fix proposed by
//! one supervisor and approved by another, then the statement of D+1
//! reconciled and D's run again (a corrected file with the same rows, as a
//! finance team re-runs a day it fixed) — and nothing comes back: no open
//! ticket, no hold, no new alert, anywhere. D is the day before yesterday
//! and D+1 yesterday; the cut window is the default 30 minutes.

use crate::both_databases;
use crate::day_edge::at;
use crate::helpers::Backend;
use crate::recon::row;
use crate::triage::{Desk, desk_with};
use serde_json::Value;

struct Journey {
    d: Desk,
    /// D and D+1.
    day: String,
    next: String,
}

/// What is left anywhere: open tickets (class, business day, payment),
/// holds (payment, reason), alerts (kind, payment, key).
#[derive(Debug, PartialEq, Eq)]
struct Left {
    open: Vec<(String, Option<String>, Option<String>)>,
    holds: Vec<(String, String)>,
    alerts: Vec<(String, Option<String>, String)>,
}

impl Journey {
    async fn new(b: Backend) -> Journey {
        // Days re-run here stay open: no close by itself.
        let d = desk_with(b, |c| {
            c.cut_window.minutes = 30;
            c.close_auto = false;
        })
        .await;
        let (today, _) = d.app.today();
        let next = today
            .parse::<jiff::civil::Date>()
            .unwrap()
            .yesterday()
            .unwrap();
        Journey {
            day: next.yesterday().unwrap().to_string(),
            next: next.to_string(),
            d,
        }
    }

    /// The clock set to `time` of `date`; the time as a statement writes it.
    fn clock(&self, date: &str, time: &str) -> String {
        let (text, micros) = at(date, time);
        self.d.app.clock.set(micros);
        text
    }

    /// The day after `date`.
    fn after(date: &str) -> String {
        let d: jiff::civil::Date = date.parse().unwrap();
        d.tomorrow().unwrap().to_string()
    }

    /// A payment of D created at `time`, which the provider knows as
    /// `status` under transaction SBX-{payment_no}: its create call made.
    async fn created(
        &self,
        order: &str,
        minor: i64,
        major: &str,
        time: &str,
        status: &str,
    ) -> String {
        self.clock(&self.day, time);
        let p = self.d.app.payment(order, minor, "CNY").await;
        self.d.app.sandbox_knows(&p, status, major, "CNY");
        let engine = self.d.app.app_engine();
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap();
        p
    }

    /// A payment of D paid at `time` by a signed notification.
    async fn paid(&self, order: &str, minor: i64, major: &str, time: &str) -> String {
        self.clock(&self.day, time);
        self.d
            .app
            .paid_with(order, minor, major, &format!("SBX-{order}"))
            .await
    }

    /// `date`'s statement of `rows` reconciled the morning after at `time`
    /// (`variant`: see `reconcile_day`); its figures.
    async fn run(&self, date: &str, rows: &[String], variant: usize, time: &str) -> Value {
        self.clock(&Journey::after(date), time);
        self.d
            .app
            .reconcile_day(&self.d.token, date, rows, variant)
            .await
    }

    /// D's statement reconciled on D+1 at 08:00; the open tickets of
    /// `class`, by id.
    async fn tickets_of_day(&self, rows: &[String], class: &str) -> Vec<String> {
        self.run(&self.day, rows, 0, "08:00:00").await;
        sqlx::query_scalar(
            "SELECT discrepancy_id FROM discrepancies WHERE class = $1 AND status <> 'CLOSED' ORDER BY found_at",
        )
        .bind(class)
        .fetch_all(self.d.app.pool())
        .await
        .unwrap()
    }

    /// `kind` proposed by sam and approved by sue on D+1 at 10:00 (`form`:
    /// what else the proposal says); the ticket is closed; what it did.
    async fn fixed(&self, ticket: &str, kind: &str, form: &[(&str, &str)]) -> String {
        self.clock(&self.next, "10:00:00");
        let mut propose = vec![
            ("id", ticket),
            ("kind", kind),
            ("reason", "checked against the provider's records"),
            ("evidence", "provider case 5521"),
        ];
        propose.extend_from_slice(form);
        let (status, proposal) = self.d.call(&self.d.sam, "fixes/propose", &propose).await;
        assert_eq!(status, 200, "{kind}: {proposal}");
        let (status, done) = self
            .d
            .call(
                &self.d.sue,
                "fixes/approve",
                &[
                    ("proposal", proposal.as_str().unwrap()),
                    ("comment", "agreed"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{kind}: {done}");
        let (_, detail) = self
            .d
            .call(&self.d.sam, "tickets/show", &[("id", ticket)])
            .await;
        assert_eq!(detail["summary"]["status"], "CLOSED", "{kind}: {detail}");
        done["detail"].as_str().unwrap().to_owned()
    }

    async fn left(&self) -> Left {
        let pool = self.d.app.pool();
        let mut open: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT class, business_date, payment_no FROM discrepancies WHERE status <> 'CLOSED'",
        )
        .fetch_all(pool)
        .await
        .unwrap();
        open.sort();
        let mut holds: Vec<(String, String)> =
            sqlx::query_as("SELECT payment_no, reason FROM payment_holds")
                .fetch_all(pool)
                .await
                .unwrap();
        holds.sort();
        let mut alerts: Vec<(String, Option<String>, String)> =
            sqlx::query_as("SELECT kind, payment_no, dedupe_key FROM alerts")
                .fetch_all(pool)
                .await
                .unwrap();
        alerts.sort();
        Left {
            open,
            holds,
            alerts,
        }
    }

    /// After the fix: nothing open, nothing held. Then D+1's statement (a
    /// payment of its own, listed) reconciled the morning after, and D's
    /// statement of `day_rows` again: still nothing open or held, and no
    /// alert beside those raised before the fix. Both runs' figures.
    async fn next_day_and_the_day_again(&self, day_rows: &[String]) -> (Value, Value) {
        let before = self.left().await;
        assert_eq!(before.open, [], "the fix left a ticket open");
        assert_eq!(before.holds, [], "the fix left a hold");
        self.clock(&self.next, "12:00:00");
        let own = self
            .d
            .app
            .paid_with("NEXT-OWN", 100, "1.00", "SBX-NEXT-OWN")
            .await;
        let (booked, _) = at(&self.next, "12:00:00");
        let next_rows = [row(
            "payment",
            "SBX-NEXT-OWN",
            &own,
            ("", ""),
            "1.00",
            "CNY",
            &booked,
        )];
        let next = self.run(&self.next, &next_rows, 0, "08:00:00").await;
        assert_eq!(self.left().await, before, "D+1's run: {next}");
        let again = self.run(&self.day, day_rows, 1, "09:00:00").await;
        assert_eq!(self.left().await, before, "D's run again: {again}");
        (next, again)
    }

    /// A payment's paid and created times.
    async fn times(&self, no: &str) -> (Option<i64>, i64) {
        sqlx::query_as("SELECT paid_at, created_at FROM payments WHERE payment_no = $1")
            .bind(no)
            .fetch_one(self.d.app.pool())
            .await
            .unwrap()
    }
}

/// The reported case: a statement row backfilled on D+1 was stamped paid
/// then, and D+1's run held it LOCAL_ONLY with a critical alert. Now each
/// backfilled payment is paid when its row says, within D (a row without
/// a time: the middle of D; a row stamped before D's start: D's start), is
/// bound to the row's transaction, and no later run finds it missing.
async fn a_backfill_is_paid_on_the_day_whose_statement_lists_it(b: Backend) {
    let j = Journey::new(b).await;
    // Reckon holds this one FAILED; the statement lists it paid (STATUS_LAG).
    let failed = j.created("JB-F", 4200, "42.00", "09:00:00", "FAILED").await;
    assert_eq!(j.d.app.status(&failed).await, "FAILED");
    let (lost_at, lost) = at(&j.day, "14:30:00");
    let (failed_at, failed_paid) = at(&j.day, "09:05:00");
    let (_, start) = at(&j.day, "00:00:00");
    let prev: jiff::civil::Date = j.day.parse().unwrap();
    let (before_start, _) = at(&prev.yesterday().unwrap().to_string(), "23:59:58");
    let rows = [
        row(
            "payment",
            "SBX-JB-LOST",
            "PAYJBLOST1",
            ("", ""),
            "66.60",
            "CNY",
            &lost_at,
        ),
        row(
            "payment",
            "SBX-JB-NOTIME",
            "PAYJBNOTIME1",
            ("", ""),
            "12.00",
            "CNY",
            "",
        ),
        row(
            "payment",
            "SBX-JB-EARLY",
            "PAYJBEARLY1",
            ("", ""),
            "3.00",
            "CNY",
            &before_start,
        ),
        row(
            "payment",
            &format!("SBX-{failed}"),
            &failed,
            ("", ""),
            "42.00",
            "CNY",
            &failed_at,
        ),
    ];
    let only = j.tickets_of_day(&rows, "PROVIDER_ONLY").await;
    assert_eq!(only.len(), 3);
    let lag = j.d.ticket_of(&failed, "STATUS_LAG").await;
    for (ticket, order) in only.iter().zip(["ORDER-JB-1", "ORDER-JB-2", "ORDER-JB-3"]) {
        j.fixed(ticket, "BACKFILL", &[("order_no", order)]).await;
    }
    j.fixed(&lag, "BACKFILL", &[]).await;

    let middle = start + 12 * 3600 * 1_000_000;
    for (no, paid) in [
        ("PAYJBLOST1", lost),
        ("PAYJBNOTIME1", middle),
        ("PAYJBEARLY1", start),
        (failed.as_str(), failed_paid),
    ] {
        assert_eq!(j.d.app.status(no).await, "SUCCEEDED", "{no}");
        assert_eq!(j.d.effect_count(no, "ORDER_PAID").await, 1, "{no}");
        let (paid_at, created_at) = j.times(no).await;
        assert_eq!(paid_at, Some(paid), "{no}");
        assert!(
            created_at <= paid,
            "{no}: created {created_at}, paid {paid}"
        );
    }
    let txn: String =
        sqlx::query_scalar("SELECT provider_txn_id FROM payments WHERE payment_no = 'PAYJBLOST1'")
            .fetch_one(j.d.app.pool())
            .await
            .unwrap();
    assert_eq!(txn, "SBX-JB-LOST");

    let (next, again) = j.next_day_and_the_day_again(&rows).await;
    assert_eq!(next["matched"], 1, "{next}");
    assert_eq!(again["matched"], 4, "every row of D matches now: {again}");
}

/// ACCEPT_AMOUNT of a payment the statement lists paid at another amount:
/// the provider's amount, and — for one still unpaid here — paid when the
/// row says, so D+1's run does not find it missing either.
async fn an_accepted_amount_is_paid_on_its_statement_day(b: Backend) {
    let j = Journey::new(b).await;
    let unpaid = j
        .created("JA-U", 10000, "100.00", "09:00:00", "PENDING")
        .await;
    let paid = j.paid("JA-P", 5000, "50.00", "09:30:00").await;
    let (unpaid_at, unpaid_paid) = at(&j.day, "09:02:00");
    let (paid_at, _) = at(&j.day, "09:30:00");
    let rows = [
        row(
            "payment",
            &format!("SBX-{unpaid}"),
            &unpaid,
            ("", ""),
            "101.00",
            "CNY",
            &unpaid_at,
        ),
        row(
            "payment",
            "SBX-JA-P",
            &paid,
            ("", ""),
            "50.50",
            "CNY",
            &paid_at,
        ),
    ];
    let tickets = j.tickets_of_day(&rows, "AMOUNT_MISMATCH").await;
    assert_eq!(tickets.len(), 2);
    for ticket in &tickets {
        j.fixed(ticket, "ACCEPT_AMOUNT", &[]).await;
    }
    assert_eq!(j.d.app.status(&unpaid).await, "SUCCEEDED");
    assert_eq!(j.times(&unpaid).await.0, Some(unpaid_paid));
    assert_eq!(j.d.effect_count(&unpaid, "ORDER_PAID").await, 1);
    let amounts: Vec<i64> = sqlx::query_scalar(
        "SELECT amount_minor FROM payments WHERE payment_no IN ($1, $2) ORDER BY amount_minor",
    )
    .bind(&unpaid)
    .bind(&paid)
    .fetch_all(j.d.app.pool())
    .await
    .unwrap();
    assert_eq!(amounts, [5050, 10100]);
    let (_, again) = j.next_day_and_the_day_again(&rows).await;
    assert_eq!(again["matched"], 2, "{again}");
}

/// A payment paid here and absent from D's statement (LOCAL_ONLY, held,
/// a critical alert): CLOSE_PAYMENT closes it; D's run again finds it
/// closed, not missing — its alert stays the only one.
async fn a_closed_payment_stays_closed_through_the_next_runs(b: Backend) {
    let j = Journey::new(b).await;
    let gone = j.paid("JC-GONE", 3000, "30.00", "11:00:00").await;
    let tickets = j.tickets_of_day(&[], "LOCAL_ONLY").await;
    assert_eq!(tickets.len(), 1);
    assert!(j.d.held(&gone).await.is_some());
    j.fixed(&tickets[0], "CLOSE_PAYMENT", &[]).await;
    assert_eq!(j.d.app.status(&gone).await, "CLOSED");
    assert_eq!(j.d.app.alert_kinds(&gone).await, ["local_only"]);
    j.next_day_and_the_day_again(&[]).await;
}

/// RELEASE_HOLD of a LOCAL_ONLY payment the team found to be fine: D's run
/// again finds it absent once more, under the same (closed) ticket — and
/// holds nothing a person released.
async fn a_released_hold_is_not_put_back_by_a_rerun(b: Backend) {
    let j = Journey::new(b).await;
    let fine = j.paid("JR-FINE", 4000, "40.00", "11:00:00").await;
    let tickets = j.tickets_of_day(&[], "LOCAL_ONLY").await;
    assert_eq!(tickets.len(), 1);
    j.fixed(&tickets[0], "RELEASE_HOLD", &[]).await;
    assert_eq!(j.d.held(&fine).await, None);
    assert_eq!(j.d.app.status(&fine).await, "SUCCEEDED");
    let (_, again) = j.next_day_and_the_day_again(&[]).await;
    assert_eq!(again["classes"]["LOCAL_ONLY"], 1, "still absent: {again}");
    assert_eq!(j.d.effects(&fine).await, 1);
}

/// MERGE of a ONE_TO_MANY: the paid payment kept and released, the twin
/// closed; D's run again finds the same row (closed ticket) and holds
/// neither.
async fn a_merge_holds_nothing_again(b: Backend) {
    let j = Journey::new(b).await;
    let keep = j.paid("JM-KEEP", 700, "7.00", "10:00:00").await;
    let twin = j
        .created("JM-TWIN", 700, "7.00", "10:01:00", "PENDING")
        .await;
    let (booked, _) = at(&j.day, "10:00:00");
    let rows = [row(
        "payment",
        "SBX-JM-KEEP",
        &twin,
        ("", ""),
        "7.00",
        "CNY",
        &booked,
    )];
    let tickets = j.tickets_of_day(&rows, "ONE_TO_MANY").await;
    assert_eq!(tickets.len(), 1);
    assert!(j.d.held(&keep).await.is_some() && j.d.held(&twin).await.is_some());
    j.fixed(&tickets[0], "MERGE", &[]).await;
    assert_eq!(j.d.app.status(&keep).await, "SUCCEEDED");
    assert_eq!(j.d.app.status(&twin).await, "CLOSED");
    let (_, again) = j.next_day_and_the_day_again(&rows).await;
    assert_eq!(again["classes"]["ONE_TO_MANY"], 1, "{again}");
}

/// ACCEPT_PAYMENT of a late success (PAID_AFTER_CLOSE from the callback;
/// D's statement lists the payment paid, a STATUS_LAG on the same
/// payment): paid when the statement says, and both tickets closed.
async fn an_accepted_late_success_is_paid_on_its_statement_day(b: Backend) {
    let j = Journey::new(b).await;
    j.clock(&j.day, "10:00:00");
    let (p, _) = j.d.paid_after("JP-LATE", "FAILED", 1).await;
    let late = j.d.late_tickets(&p).await.remove(0);
    let (booked, paid) = at(&j.day, "10:00:30");
    let rows = [row(
        "payment",
        &format!("SBX-{p}"),
        &p,
        ("", ""),
        "88.00",
        "CNY",
        &booked,
    )];
    assert_eq!(j.tickets_of_day(&rows, "STATUS_LAG").await.len(), 1);
    let detail = j.fixed(&late, "ACCEPT_PAYMENT", &[]).await;
    assert!(detail.contains("STATUS_LAG ticket"), "{detail}");
    assert_eq!(j.d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(j.times(&p).await.0, Some(paid));
    assert_eq!(j.d.app.alert_kinds(&p).await, ["paid_after_close"]);
    let (_, again) = j.next_day_and_the_day_again(&rows).await;
    assert_eq!(again["matched"], 1, "{again}");
}

/// REFUND_PAYMENT of a late success: the payment REFUNDING until the
/// provider confirms — that wait is what the fix legitimately leaves (a
/// refund the provider holds, no ticket, no hold) through D+1's run; once
/// confirmed (today), today's statement lists the refund and matches it,
/// and D's run again finds the payment as its statement says.
async fn a_refunded_late_success_waits_for_the_provider_then_matches(b: Backend) {
    let j = Journey::new(b).await;
    j.clock(&j.day, "11:00:00");
    let (p, _) = j.d.paid_after("JF-LATE", "CLOSED", 1).await;
    let late = j.d.late_tickets(&p).await.remove(0);
    let (booked, _) = at(&j.day, "11:00:30");
    let rows = [row(
        "payment",
        &format!("SBX-{p}"),
        &p,
        ("", ""),
        "88.00",
        "CNY",
        &booked,
    )];
    assert_eq!(j.tickets_of_day(&rows, "STATUS_LAG").await.len(), 1);
    j.fixed(&late, "REFUND_PAYMENT", &[]).await;
    let engine = j.d.app.app_engine();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let refund = || async {
        sqlx::query_as::<_, (String, String)>(
            "SELECT refund_no, status FROM refunds WHERE payment_no = $1",
        )
        .bind(&p)
        .fetch_one(j.d.app.pool())
        .await
        .unwrap()
    };
    let (refund_no, status) = refund().await;
    // Asked of the provider, not yet confirmed by it.
    assert_eq!(status, "PENDING");
    assert_eq!(j.d.app.status(&p).await, "REFUNDING");
    j.next_day_and_the_day_again(&rows).await;
    assert_eq!(
        j.d.app.status(&p).await,
        "REFUNDING",
        "still the provider's to confirm"
    );

    // The provider confirms now (its notification signed with the real
    // time); today's statement carries the refund.
    j.d.app.clock.set(jiff::Timestamp::now().as_microsecond());
    j.d.app.sandbox.settle_refund(&refund_no, true);
    j.d.app.wait_for_status(&p, "REFUNDED").await;
    assert_eq!(refund().await.1, "SUCCEEDED");
    let before = j.left().await;
    let (today, now) = j.d.app.today();
    let refund_id = j.d.app.sandbox.refund(&refund_no).unwrap().refund_id;
    let refund_row = row(
        "refund",
        &format!("SBX-{p}"),
        &p,
        (&refund_id, &refund_no),
        "88.00",
        "CNY",
        &now,
    );
    let f =
        j.d.app
            .reconcile_day(&j.d.token, &today, &[refund_row], 0)
            .await;
    assert_eq!(f["matched"], 1, "{f}");
    let again = j.d.app.reconcile_day(&j.d.token, &j.day, &rows, 2).await;
    assert_eq!(again["matched"], 1, "{again}");
    assert_eq!(j.left().await, before);
    assert_eq!(before.open, []);
    assert_eq!(before.holds, []);
}

/// A statement row's payment_no is checked as a merchant's id is: one no
/// merchant could give makes the BACKFILL not applicable, saying why, and
/// no payment is written; an order number likewise.
async fn a_backfill_refuses_ids_no_merchant_could_give(b: Backend) {
    let j = Journey::new(b).await;
    let (booked, _) = at(&j.day, "12:00:00");
    let long = "P".repeat(65);
    let rows = [
        row(
            "payment",
            "SBX-JUNK-1",
            "PAY JUNK 1",
            ("", ""),
            "10.00",
            "CNY",
            &booked,
        ),
        row(
            "payment",
            "SBX-JUNK-2",
            "付款2",
            ("", ""),
            "10.00",
            "CNY",
            &booked,
        ),
        row(
            "payment",
            "SBX-JUNK-3",
            &long,
            ("", ""),
            "10.00",
            "CNY",
            &booked,
        ),
        row(
            "payment",
            "SBX-GOOD-4",
            "PAYGOOD4",
            ("", ""),
            "10.00",
            "CNY",
            &booked,
        ),
    ];
    assert_eq!(j.tickets_of_day(&rows, "PROVIDER_ONLY").await.len(), 4);
    j.clock(&j.next, "10:00:00");
    for no in ["PAY JUNK 1", "付款2", long.as_str()] {
        let ticket = &j.d.ticket_of(no, "PROVIDER_ONLY").await;
        let (_, detail) = j.d.call(&j.d.sam, "tickets/show", &[("id", ticket)]).await;
        assert_eq!(
            detail["fixes"],
            serde_json::json!([]),
            "not offered: {detail}"
        );
        let (status, err) =
            j.d.call(
                &j.d.sam,
                "fixes/propose",
                &[
                    ("id", ticket),
                    ("kind", "BACKFILL"),
                    ("reason", "r"),
                    ("evidence", "e"),
                    ("order_no", "ORDER-JUNK"),
                ],
            )
            .await;
        assert_eq!(status, 400, "{err}");
        let why = err["FixNotApplicable"]["detail"]
            .as_str()
            .unwrap_or_default();
        assert!(why.contains("payment_no cannot be used"), "{err}");
        let (_, detail) = j.d.call(&j.d.sam, "tickets/show", &[("id", ticket)]).await;
        assert_eq!(detail["summary"]["status"], "OPEN", "nothing proposed");
    }
    // A valid row, an order number no merchant could give.
    let (status, err) =
        j.d.call(
            &j.d.sam,
            "fixes/propose",
            &[
                ("id", &j.d.ticket_of("PAYGOOD4", "PROVIDER_ONLY").await),
                ("kind", "BACKFILL"),
                ("reason", "r"),
                ("evidence", "e"),
                ("order_no", "ORDER WITH SPACES"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(
        err["Invalid"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("order_no"),
        "{err}"
    );
    let payments: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payments")
        .fetch_one(j.d.app.pool())
        .await
        .unwrap();
    assert_eq!(payments, 0);
}

both_databases!(
    a_backfill_is_paid_on_the_day_whose_statement_lists_it,
    an_accepted_amount_is_paid_on_its_statement_day,
    a_closed_payment_stays_closed_through_the_next_runs,
    a_released_hold_is_not_put_back_by_a_rerun,
    a_merge_holds_nothing_again,
    an_accepted_late_success_is_paid_on_its_statement_day,
    a_refunded_late_success_waits_for_the_provider_then_matches,
    a_backfill_refuses_ids_no_merchant_could_give,
);
