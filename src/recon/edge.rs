//! The day's edge, stored. A record of the day near one of its cuts,
//! missing from its own day's statement, is IN_TRANSIT (no ticket, no hold,
//! no alert; pending in the day's figures) until the neighbouring statement
//! decides: carrying it, it matches (`ARRIVED`); completing without it, the
//! record is LOCAL_ONLY (a refund REFUND_MISMATCH) with its hold and alert
//! as any other. What each record is, classifying decides, pure
//! ([`super::classify::edge`]); here what it needs is read before
//! ([`load`]) and what it decided is written after ([`settle`]), and the
//! records whose neighbouring statement is overdue are ticketed
//! ([`expire_overdue`]). Either day's run may come first, and each may be
//! run again: every decision is an upsert of `recon_edges`, keyed by the
//! record, and tickets keep their dedupe keys. Only the records near the
//! cut are read: the window's payments no statement row listed (by the
//! `payments_day` index), the day's edge rows, and the payments the
//! statement's exceptions already named.

use super::classify::edge::{Carried, Edges, PAYMENT, REFUND, Unlisted, edge_kind, neighbours};
use super::matching::{DayPayments, paid};
use super::run::{Found, ReconError, Run, day_range};
use super::{local, write};
use crate::domain::{Class, Severity};
use crate::engine::Engine;
use crate::store::recon_edges::{self, ARRIVED, EdgeRow, IN_TRANSIT, MISSING, Mark};
use crate::store::recon_reads::{self, PaymentKey, Refund};
use crate::store::{recon_runs, tickets};
use serde_json::json;

/// The cut window of `provider` (microseconds): its own setting, else the
/// default (`RECKON_CUT_WINDOW_MINUTES`).
pub fn cut_window(engine: &Engine, provider: &str) -> i64 {
    let settings = engine.settings();
    let pulls = &settings.pulls;
    pulls
        .cut_windows
        .get(provider)
        .copied()
        .unwrap_or(pulls.cut_window_us)
}

/// Reads what a run of `run` needs of its day's edges; `day` (the day's
/// payments, matched) is lent to tell which of them no row listed.
pub(super) async fn load(
    engine: &Engine,
    run: &Run<'_>,
    day: DayPayments,
) -> Result<(Edges, DayPayments), ReconError> {
    let pool = &engine.db.pool;
    let (prev, next) = neighbours(run.date)?;
    let window = cut_window(engine, run.provider);
    let done = (
        recon_runs::has_completed(pool, run.provider, &prev).await?,
        recon_runs::has_completed(pool, run.provider, &next).await?,
    );
    let mut edges = Edges::new((&prev, &next), run.range, window, done);
    if window <= 0 {
        return Ok((edges, day));
    }
    let (start, end) = run.range;
    let head = (start, (start + window).min(end));
    let tail = ((end - window).max(head.1), end);
    let (day, near) = local::unlisted_near(engine, run.provider, [head, tail], day).await?;
    for (no, at) in near {
        edges.near_payment(&no, at);
    }
    for row in recon_edges::of_day(pool, run.provider, run.date).await? {
        edges.state(&row.kind, &row.number, &row.state);
    }
    Ok((edges, day))
}

/// What settling the edges did, for the run's figures.
#[derive(Default)]
pub(super) struct Settled {
    /// Neighbours' records this statement carried.
    pub arrived: i64,
    /// Neighbours' records expected in this statement and absent from it:
    /// tickets opened now.
    pub missing: i64,
}

/// After the run's own tickets: the edges written. The neighbours'
/// records this statement carried are ARRIVED (a ticket opened for one
/// as absent is closed: the statement carries it); those it was expected
/// to carry and does not are MISSING, and ticketed on their own day; the
/// day's own records near a cut as classifying decided; the day's own
/// records no longer at the edge (its statement carries them now)
/// forgotten.
pub(super) async fn settle(
    engine: &Engine,
    run: &Run<'_>,
    edges: &Edges,
    carried: &[Carried],
) -> Result<Settled, ReconError> {
    let (pool, provider, date) = (&engine.db.pool, run.provider, run.date);
    let mut settled = Settled::default();
    let is_carried: hashbrown::HashSet<(&str, &str)> = carried
        .iter()
        .map(|c| (c.kind, c.number.as_str()))
        .collect();
    // Expected here, not carried: absent from both statements, unless its
    // own day is still to be reconciled (its run will say).
    let mut gone: Vec<EdgeRow> = Vec::new();
    for row in recon_edges::expected_in(pool, provider, date).await? {
        if is_carried.contains(&(row.kind.as_str(), row.number.as_str())) {
            continue;
        }
        gone.push(row);
    }
    let mut ticketed: Vec<&EdgeRow> = Vec::new();
    for row in &gone {
        if row.state == IN_TRANSIT
            || recon_runs::has_completed(pool, provider, &row.local_date).await?
        {
            ticketed.push(row);
        }
    }
    settled.missing = open_missing(engine, run, &ticketed, false).await?;

    let now = engine.now();
    let db = engine.db.kind;
    fn mark<'m>(
        kind: &'static str,
        number: &'m str,
        local_date: &'m str,
        expected_date: &'m str,
    ) -> Mark<'m> {
        Mark {
            kind,
            number,
            local_date,
            expected_date,
        }
    }
    let mut tx = engine.db.begin_write().await?;
    // Carried here: arrived, and a ticket opened for one as absent closed.
    let marks: Vec<Mark> = carried
        .iter()
        .map(|c| mark(c.kind, &c.number, &c.local_date, date))
        .collect();
    recon_edges::mark(&mut tx, db, provider, ARRIVED, &marks, run.run_id, now).await?;
    settled.arrived = carried.len() as i64;
    let keys: Vec<String> = carried
        .iter()
        .map(|c| {
            let class = if c.kind == PAYMENT {
                Class::LocalOnly
            } else {
                Class::RefundMismatch
            };
            format!("recon:{provider}:{}:{class}:{}", c.local_date, c.number)
        })
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let conclusion = format!(
        "{provider}'s statement of {date} carries it (run {}): not lost, booked past the day's cut; \
         a hold on the payment stays until a person releases it",
        run.run_id
    );
    let entry = json!({"action": "carried by the neighbouring day's statement", "run": run.run_id, "statement_date": date, "at": now});
    for id in tickets::open_absent(&mut tx, db, &keys).await? {
        tickets::close_with(&mut tx, &id, &entry, &conclusion, now).await?;
    }
    // Expected here and absent.
    let marks: Vec<Mark> = gone
        .iter()
        .map(|r| mark(edge_kind(&r.kind), &r.number, &r.local_date, date))
        .collect();
    recon_edges::mark(&mut tx, db, provider, MISSING, &marks, run.run_id, now).await?;
    // The day's own, as classifying decided.
    for (state, what) in [
        (IN_TRANSIT, Unlisted::InTransit),
        (MISSING, Unlisted::Missing),
    ] {
        let marks: Vec<Mark> = edges
            .decided
            .iter()
            .filter(|d| d.what == what)
            .map(|d| mark(d.kind, &d.number, date, &d.expected))
            .collect();
        recon_edges::mark(&mut tx, db, provider, state, &marks, run.run_id, now).await?;
    }
    for (kind, number) in edges.forgotten() {
        recon_edges::forget(&mut tx, provider, kind, number).await?;
    }
    tx.commit().await?;
    Ok(settled)
}

/// Tickets for the neighbours' records neither statement carried, each on
/// its own business day (the day whose figures showed it in transit, and
/// whose own run opens the same ticket under the same key), found by this
/// run: LOCAL_ONLY with hold and alert for a paid payment, REFUND_MISMATCH
/// for a succeeded refund. How many.
async fn open_missing(
    engine: &Engine,
    run: &Run<'_>,
    rows: &[&EdgeRow],
    overdue: bool,
) -> Result<i64, ReconError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let db = &engine.db;
    let (provider, date) = (run.provider, run.date);
    let nos: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == PAYMENT)
        .map(|r| r.number.as_str())
        .collect();
    let pays = local::payments_by(engine, PaymentKey::PaymentNo, provider, &nos).await?;
    let rnos: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == REFUND)
        .map(|r| r.number.as_str())
        .collect();
    let refunds: hashbrown::HashMap<String, Refund> =
        recon_reads::refunds_by_no(&db.pool, db.kind, &rnos)
            .await?
            .into_iter()
            .map(|r| (r.refund_no.clone(), r))
            .collect();
    let mut by_day: std::collections::BTreeMap<&str, Vec<Found>> = Default::default();
    for row in rows {
        let why = |what: &str| {
            if overdue {
                format!(
                    "{what} near the cut of {}, absent from {provider}'s statement of {}; the \
                     statement of {} that might carry it is overdue (past its ready time and the \
                     missing-statement hours)",
                    row.local_date, row.local_date, row.expected_date
                )
            } else {
                format!(
                    "{what} near the cut of {}, absent from {provider}'s statements of {} and {date}",
                    row.local_date, row.local_date
                )
            }
        };
        let found = if row.kind == PAYMENT {
            let Some(p) = pays.get(&row.number).filter(|p| paid(&p.status)) else {
                continue;
            };
            Found {
                class: Class::LocalOnly,
                severity: Severity::Critical,
                key: p.no.clone(),
                payment_no: Some(p.no.clone()),
                order_no: p.order.clone(),
                txn: p.txn.clone(),
                line_no: None,
                local: Some((p.amount, p.currency.clone(), p.status.clone())),
                provider_side: None,
                reason: why(&format!("{} here", p.status)),
                hold: vec![p.no.clone()],
            }
        } else {
            let Some(r) = refunds.get(&row.number).filter(|r| r.status == "SUCCEEDED") else {
                continue;
            };
            Found {
                class: Class::RefundMismatch,
                severity: Severity::High,
                key: r.refund_no.clone(),
                payment_no: Some(r.payment_no.clone()),
                order_no: None,
                txn: None,
                line_no: None,
                local: Some((r.amount_minor, r.currency.clone(), r.status.clone())),
                provider_side: None,
                reason: why(&format!("refund {} succeeded here", r.refund_no)),
                hold: Vec::new(),
            }
        };
        by_day
            .entry(row.local_date.as_str())
            .or_default()
            .push(found);
    }
    let mut opened = 0;
    let zone = super::schedule::statement_zone(engine, provider);
    for (day, found) in by_day {
        opened += found.len() as i64;
        let range = day_range(day, &zone).map_err(ReconError::Invalid)?;
        let on_day = Run {
            date: day,
            range,
            ..*run
        };
        let findings = write::Findings::of(found, &pays);
        write::write(engine, &on_day, findings, None, &[]).await?;
    }
    Ok(opened)
}

/// Records in transit to a neighbouring day whose statement is overdue
/// (its ready time plus the missing-statement hours passed with no
/// completed run: a day the provider never delivers, or the day before
/// Reckon's first), or whose neighbour's run completed without deciding
/// them (it overlapped their own day's run), are absent: ticketed on their
/// own day — LOCAL_ONLY with hold and alert, a refund REFUND_MISMATCH — and
/// MISSING, so no window
/// hides a loss for longer than a missing statement would. A statement
/// that comes later still carries them: its run closes the ticket. How many
/// were ticketed.
pub async fn expire_overdue(engine: &Engine, now: i64) -> Result<i64, ReconError> {
    let pool = &engine.db.pool;
    let mut opened = 0;
    let providers: Vec<String> = engine.providers.names().map(str::to_owned).collect();
    for provider in &providers {
        let day = super::schedule::statement_day(engine, provider);
        let mut due: Vec<EdgeRow> = Vec::new();
        for row in recon_edges::in_transit(pool, provider).await? {
            let Ok(expected) = row.expected_date.parse::<jiff::civil::Date>() else {
                continue;
            };
            let overdue = super::schedule::ready_at(expected, &day)
                .is_some_and(|ready| now >= ready + engine.settings().pulls.missing_after_us);
            // A row still in transit after its neighbour's completed run was
            // missed by it (the two runs overlapped): absent now as well.
            if overdue || recon_runs::has_completed(pool, provider, &row.expected_date).await? {
                due.push(row);
            }
        }
        // Each own day's tickets under its latest completed run, as that
        // run would have opened them.
        let mut by_day: std::collections::BTreeMap<String, Vec<&EdgeRow>> = Default::default();
        for row in &due {
            by_day.entry(row.local_date.clone()).or_default().push(row);
        }
        for (date, rows) in by_day {
            let Some(last) = recon_runs::completed_between(pool, &date, &date)
                .await?
                .into_iter()
                .rfind(|r| &r.provider == provider)
            else {
                continue;
            };
            let zone = super::schedule::statement_zone(engine, provider);
            let range = day_range(&date, &zone).map_err(ReconError::Invalid)?;
            let run = Run {
                run_id: &last.run_id,
                provider,
                date: &date,
                file: None,
                range,
            };
            opened += open_missing(engine, &run, &rows, true).await?;
            let marks: Vec<Mark> = rows
                .iter()
                .map(|r| Mark {
                    kind: edge_kind(&r.kind),
                    number: &r.number,
                    local_date: &r.local_date,
                    expected_date: &r.expected_date,
                })
                .collect();
            let mut tx = engine.db.begin_write().await?;
            recon_edges::mark(
                &mut tx,
                engine.db.kind,
                provider,
                MISSING,
                &marks,
                &last.run_id,
                now,
            )
            .await?;
            tx.commit().await?;
        }
    }
    Ok(opened)
}
