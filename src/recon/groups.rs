//! What a run's grouped search found ([`super::classify::groups`]), written
//! after the run's tickets: on the row's ticket, a `match_groups` row and a
//! GROUP_MATCH proposal (proposed by `reckon`, so two people decide it), a
//! note on each member's ticket; an ambiguity or a search past its cap
//! said once in a note. Each is recorded once per row and set, so the same
//! statement run again, or a group people rejected, proposes nothing again.

use super::classify::groups::{RowGroup, Search};
use super::matching::Pay;
use super::run::{ReconError, Run};
use crate::accounts::TxError;
use crate::domain::TicketStatus;
use crate::domain::grouping::GROUP_CANDIDATES;
use crate::engine::Engine;
use crate::store::{match_groups, proposals, tickets};
use crate::triage::fixes::{MATCHER, propose_group_in};

/// The dedupe key of a run's ticket of `class` and `key`.
pub(super) fn ticket_key(run: &Run<'_>, class: &str, key: &str) -> String {
    format!("recon:{}:{}:{class}:{key}", run.provider, run.date)
}

/// The key a payment is a group's member by: its LOCAL_ONLY ticket's (a
/// payment not paid has none; the key still names it).
pub(super) fn payment_key(run: &Run<'_>, no: &str) -> String {
    ticket_key(run, "LOCAL_ONLY", no)
}

fn shown(minor: i64, currency: &str) -> String {
    app::format::money(minor, currency)
}

fn pay_text(p: &Pay) -> String {
    format!("{} {} ({})", p.no, shown(p.amount, &p.currency), p.status)
}

/// Writes what the search found, in one transaction.
pub(super) async fn record(
    engine: &Engine,
    run: &Run<'_>,
    found: &[RowGroup],
    window_us: i64,
) -> Result<(), ReconError> {
    if found.is_empty() {
        return Ok(());
    }
    let mut tx = engine.db.begin_write().await?;
    let now = engine.now();
    let minutes = window_us / 60_000_000;
    for g in found {
        let row = &g.row;
        let anchor_key = ticket_key(run, row.class.as_str(), &row.key);
        let Some((ticket, status)) = tickets::by_key(&mut *tx, &anchor_key).await? else {
            continue;
        };
        if status == TicketStatus::Closed.as_str()
            || proposals::live_count(&mut *tx, &ticket, now).await? > 0
        {
            continue;
        }
        let row_text = format!(
            "statement row {} (line {}) of {}",
            row.txn.as_deref().unwrap_or("-"),
            row.line_no,
            shown(row.amount, &row.currency)
        );
        let anchor = match_groups::Member {
            role: "ANCHOR".into(),
            side: "ROW".into(),
            provider: Some(run.provider.to_owned()),
            amount_minor: row.amount,
            on_date: run.date.to_owned(),
            ticket_key: anchor_key.clone(),
            run_id: Some(run.run_id.to_owned()),
            line_no: Some(row.line_no),
            provider_txn_id: row.txn.clone(),
            ..Default::default()
        };
        let member = |p: &Pay| match_groups::Member {
            role: "MEMBER".into(),
            side: "PAYMENT".into(),
            provider: Some(run.provider.to_owned()),
            amount_minor: p.amount,
            on_date: run.date.to_owned(),
            ticket_key: payment_key(run, &p.no),
            payment_no: Some(p.no.clone()),
            ..Default::default()
        };
        let keys = |ps: &[Pay]| {
            let mut k: Vec<String> = ps.iter().map(|p| payment_key(run, &p.no)).collect();
            k.sort_unstable();
            k.join(" ")
        };
        let (status, members_key, members, note) = match &g.found {
            Search::Payments(ps) => ("PROPOSED", keys(ps), ps.iter().map(member).collect(), None),
            Search::Ambiguous(sets) => {
                let listed: Vec<String> = sets
                    .iter()
                    .map(|s| {
                        format!(
                            "[{}]",
                            s.iter().map(pay_text).collect::<Vec<_>>().join(" + ")
                        )
                    })
                    .collect();
                let key: Vec<String> = sets.iter().map(|s| keys(s)).collect();
                (
                    "AMBIGUOUS",
                    format!("AMBIGUOUS {}", key.join(" | ")),
                    Vec::new(),
                    Some(format!(
                        "grouped match not proposed: {} sets of the day's unlisted payments sum exactly to the {row_text} within {minutes} minutes and none is made nearer it: {}; decide by hand",
                        sets.len(),
                        listed.join("; ")
                    )),
                )
            }
            Search::TooMany(n) => (
                "TOO_MANY",
                format!("TOO_MANY {n}"),
                Vec::new(),
                Some(format!(
                    "grouped match not searched: {n} unlisted payments within {minutes} minutes of the {row_text}, more than the {GROUP_CANDIDATES} a search takes; decide by hand"
                )),
            ),
        };
        let group_id = uuid::Uuid::now_v7().to_string();
        let mut sides = vec![anchor];
        sides.extend(members.iter().cloned());
        let recorded = match_groups::insert(
            &mut tx,
            &match_groups::NewGroup {
                group_id: &group_id,
                shape: "PAYMENTS_TO_ROW",
                provider: run.provider,
                currency: &row.currency,
                total_minor: row.amount,
                anchor: &anchor_key,
                members_key: &members_key,
                status,
                ticket_id: Some(&ticket),
                found_at: now,
                business_date: Some(run.date),
            },
            &sides,
        )
        .await?;
        if !recorded {
            continue;
        }
        if let Some(note) = note {
            tickets::insert_note(&mut tx, &ticket, "action", &note, None, MATCHER, now).await?;
            tracing::debug!(ticket = %ticket, "{note}");
            continue;
        }
        let Search::Payments(ps) = &g.found else {
            continue;
        };
        let reason = match ps.as_slice() {
            [one] => format!(
                "{} is by amount and date the one payment of the {row_text}, and no other row's",
                pay_text(one)
            ),
            _ => format!(
                "{} sum exactly to the {row_text}",
                ps.iter().map(pay_text).collect::<Vec<_>>().join(" + ")
            ),
        };
        let evidence = format!(
            "found by run {}: {} payment(s) of {} the statement of {} does not list, {}, made within {minutes} minutes of the row; group {group_id}",
            run.run_id,
            ps.len(),
            run.provider,
            run.date,
            row.currency
        );
        let proposal = match propose_group_in(
            &mut tx,
            &engine.db.audit,
            &ticket,
            (&reason, &evidence),
            now,
        )
        .await
        {
            Ok(id) => id,
            Err(TxError::Db(e)) => return Err(e.into()),
            // Not proposable after all (a member moved meanwhile): the
            // group stays recorded, and a person may propose it.
            Err(TxError::App(e)) => {
                tracing::warn!(ticket = %ticket, error = %e, "grouped match found but not proposed");
                continue;
            }
        };
        match_groups::set_proposal(&mut *tx, &group_id, &proposal).await?;
        for m in &members {
            if let Some((id, status)) = tickets::by_key(&mut *tx, &m.ticket_key).await?
                && status != TicketStatus::Closed.as_str()
            {
                let body = format!(
                    "part of a grouped match proposed on ticket {ticket} (proposal {proposal}): {reason}"
                );
                tickets::insert_note(&mut tx, &id, "action", &body, None, MATCHER, now).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}
