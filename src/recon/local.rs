//! What Reckon holds, as a run reads it from the store: the business day's
//! payments (into the matcher's compact index), the payments the
//! statement's exceptions name (a first part while the statement is still
//! read, the rest after), and the refund ledger.

use super::classify::Named;
use super::matching::{ByKey, DayPayments, Early, Pay};
use super::run::ReconError;
use crate::engine::Engine;
use crate::statement::StatementRow;
use crate::store;
use crate::store::recon_reads::{self, NamedPayment, PaymentKey, Refund};
use crate::store::scan::ReadOnly;

/// The business day's local payments of `provider`: paid that day, or
/// created that day and not paid. On SQLite read through a read-only
/// connection of their own ([`crate::store::scan`]: sqlx copies every value
/// of a million rows on its way from SQLite's thread, many times slower);
/// on PostgreSQL by binary `COPY`. Either way in two halves at once.
pub(super) async fn day_payments(
    engine: &Engine,
    provider: &str,
    (start, end): (i64, i64),
) -> Result<DayPayments, ReconError> {
    let bad = |e: String| ReconError::Invalid(format!("the day's payments: {e}"));
    if let Some(path) = engine.db.sqlite_path.clone() {
        let joined = |e: tokio::task::JoinError| bad(e.to_string());
        // The day in two halves, each read on a thread of its own (by
        // `payments_day`: only the day's payments are read): while the
        // payments load, the statement's reader can only run a few
        // chunks ahead, and a core would sit idle.
        let middle = start + (end - start) / 2;
        let part = |from: i64, to: i64| {
            let (path, provider) = (path.clone(), provider.to_owned());
            tokio::task::spawn_blocking(move || {
                let mut day = DayPayments::default();
                let mut refused = None;
                let db = ReadOnly::open(&path).map_err(store)?;
                recon_reads::day_payments_on(&db, &provider, (from, to), |p| {
                    add(&mut day, &mut refused, p)
                })
                .map_err(store)?;
                match refused {
                    Some(e) => Err(bad(e)),
                    None => Ok(day),
                }
            })
        };
        let (head, tail) = tokio::join!(part(start, middle), part(middle, end));
        let (mut day, tail) = (head.map_err(joined)??, tail.map_err(joined)??);
        return tokio::task::spawn_blocking(move || {
            day.append(tail).map_err(bad)?;
            day.index();
            Ok(day)
        })
        .await
        .map_err(joined)?;
    }
    // PostgreSQL: the two halves by binary COPY, each on a connection
    // (and a server process) of its own.
    let joined = |e: tokio::task::JoinError| bad(e.to_string());
    let middle = start + (end - start) / 2;
    let part = |from: i64, to: i64| {
        let (pool, provider) = (engine.db.pool.clone(), provider.to_owned());
        tokio::spawn(async move {
            let mut day = DayPayments::default();
            let mut refused = None;
            recon_reads::day_payments_copy(&pool, &provider, (from, to), |p| {
                add(&mut day, &mut refused, p)
            })
            .await?;
            match refused {
                Some(e) => Err(bad(e)),
                None => Ok(day),
            }
        })
    };
    let (head, tail) = tokio::join!(part(start, middle), part(middle, end));
    let (mut day, tail) = (head.map_err(joined)??, tail.map_err(joined)??);
    tokio::task::spawn_blocking(move || {
        day.append(tail).map_err(bad)?;
        day.index();
        Ok(day)
    })
    .await
    .map_err(joined)?
}

/// One of the day's payments into `day`; after the first it refuses, the
/// rest are skipped and `refused` says why.
fn add(day: &mut DayPayments, refused: &mut Option<String>, p: recon_reads::DayPayment<'_>) {
    if refused.is_none()
        && let Err(e) = day.push(
            p.payment_no,
            p.provider_txn_id,
            p.amount_minor,
            p.currency,
            p.status,
        )
    {
        *refused = Some(e);
    }
}

/// The day's payments paid within `parts` (the windows at its cuts) that
/// no statement row listed, with when they were paid: the only ones whose
/// time classifying asks. Filtered as they are read, by the day's index
/// (the windows hold some 4% of a day: 400,000 payments at ten million,
/// held whole they were some 130 MiB at the run's peak with the pool's page
/// cache). On SQLite on a read-only connection of its own (its small page
/// cache), the day lent to the reading thread and handed back.
pub(super) async fn unlisted_near(
    engine: &Engine,
    provider: &str,
    parts: [(i64, i64); 2],
    day: DayPayments,
) -> Result<(DayPayments, Vec<(String, i64)>), ReconError> {
    if let Some(path) = engine.db.sqlite_path.clone() {
        let provider = provider.to_owned();
        return tokio::task::spawn_blocking(move || {
            let conn = ReadOnly::open(&path)?;
            let mut near = Vec::new();
            for part in parts {
                recon_reads::paid_between_on(&conn, &provider, part, |no, txn, at| {
                    if !day.listed(no, txn) {
                        near.push((no.to_owned(), at));
                    }
                })?;
            }
            Ok((day, near))
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
        .map_err(store);
    }
    let mut near = Vec::new();
    for part in parts {
        for (no, txn, at) in recon_reads::paid_between(&engine.db.pool, provider, part).await? {
            if !day.listed(&no, txn.as_deref()) {
                near.push((no, at));
            }
        }
    }
    Ok((day, near))
}

/// A read-only connection's error, as a storage error.
fn store(e: String) -> ReconError {
    ReconError::Store(store::io(e))
}

/// A payment found by `key`, keyed by it, if it is `provider`'s.
fn add_found(out: &mut ByKey, key: PaymentKey, provider: &str, p: NamedPayment) {
    if p.provider != provider {
        return;
    }
    let k = match key {
        PaymentKey::PaymentNo => p.payment_no.clone(),
        PaymentKey::ProviderTxnId => p.provider_txn_id.clone().unwrap_or_default(),
        // An order has an attempt per payment: each is kept.
        PaymentKey::OrderNo => p.payment_no.clone(),
    };
    out.entry(k).or_insert(Pay {
        no: p.payment_no,
        order: p.order_no,
        amount: p.amount_minor,
        currency: p.currency,
        status: p.status,
        txn: p.provider_txn_id,
        created: Some(p.created_at),
        paid: p.paid_at,
    });
}

/// The early lookups of a statement being read (SQLite): each batch of
/// keys `asks` brings, on one read-only connection, until the asking
/// stops; the payments found by transaction id and by payment_no.
/// Blocking.
pub(super) fn early_lookups(
    path: &std::path::Path,
    provider: &str,
    asks: std::sync::mpsc::Receiver<(Vec<String>, Vec<String>)>,
) -> Result<(ByKey, ByKey), String> {
    let conn = ReadOnly::open(path)?;
    let (mut by_txn, mut by_no) = Default::default();
    for (txns, nos) in asks {
        let txn = PaymentKey::ProviderTxnId;
        recon_reads::payments_by_on(&conn, txn, &txns, |p| {
            add_found(&mut by_txn, txn, provider, p)
        })?;
        let no = PaymentKey::PaymentNo;
        recon_reads::payments_by_on(&conn, no, &nos, |p| add_found(&mut by_no, no, provider, p))?;
    }
    Ok((by_txn, by_no))
}

/// Payments of `provider` whose `key` is one of `keys`, by that value. On
/// SQLite read on a read-only connection of their own, whose small page
/// cache the lookups cannot swell.
pub(super) async fn payments_by(
    engine: &Engine,
    key: PaymentKey,
    provider: &str,
    keys: &[&str],
) -> Result<ByKey, ReconError> {
    let mut out = hashbrown::HashMap::new();
    if let Some(path) = engine.db.sqlite_path.clone() {
        let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        let provider = provider.to_owned();
        return tokio::task::spawn_blocking(move || {
            let conn = ReadOnly::open(&path)?;
            recon_reads::payments_by_on(&conn, key, &keys, |p| {
                add_found(&mut out, key, &provider, p)
            })?;
            Ok(out)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
        .map_err(store);
    }
    let db = &engine.db;
    for p in recon_reads::payments_by(&db.pool, db.kind, key, keys).await? {
        add_found(&mut out, key, provider, p);
    }
    Ok(out)
}

/// The payments of the orders the exceptions' references name (the
/// `reference` key), by order: each of their attempts.
pub(super) async fn by_reference(
    engine: &Engine,
    provider: &str,
    exceptions: &[(StatementRow, Option<u32>)],
) -> Result<hashbrown::HashMap<String, Vec<Pay>>, ReconError> {
    let mut refs: Vec<&str> = exceptions
        .iter()
        .filter(|(_, slot)| slot.is_none())
        .filter_map(|(r, _)| r.reference.as_deref())
        .collect();
    refs.sort_unstable();
    refs.dedup();
    let mut out: hashbrown::HashMap<String, Vec<Pay>> = hashbrown::HashMap::new();
    if refs.is_empty() {
        return Ok(out);
    }
    for p in payments_by(engine, PaymentKey::OrderNo, provider, &refs)
        .await?
        .into_values()
    {
        if let Some(order) = p.order.clone() {
            out.entry(order).or_default().push(p);
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.no.cmp(&b.no));
    }
    Ok(out)
}

/// What the database says about the payments the exceptions name: by
/// transaction id (those not among the day's), by payment_no — what was
/// asked while the statement was read, and the rest now.
pub(super) async fn named_payments(
    engine: &Engine,
    provider: &str,
    named: &Named<'_>,
    exceptions: &[(StatementRow, Option<u32>)],
    early: Early,
) -> Result<(ByKey, ByKey), ReconError> {
    let (txns_left, nos_left) = named.not_in(&exceptions[..early.looked_up]);
    let mut by_txn = early.by_txn;
    by_txn.extend(payments_by(engine, PaymentKey::ProviderTxnId, provider, &txns_left).await?);
    let mut by_no = early.by_no;
    by_no.extend(payments_by(engine, PaymentKey::PaymentNo, provider, &nos_left).await?);
    Ok((by_txn, by_no))
}

/// Of the disputes the statement's dispute rows name, those a notification
/// told of.
pub(super) async fn known_disputes(
    engine: &Engine,
    provider: &str,
    rows: &[StatementRow],
) -> store::Result<hashbrown::HashSet<String>> {
    let db = &engine.db;
    let mut ids: Vec<&str> = rows
        .iter()
        .filter(|r| super::classify::is_dispute_row(r))
        .filter_map(|r| r.provider_refund_id.as_deref())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut known = hashbrown::HashSet::new();
    for chunk in ids.chunks(crate::store::recon_reads::KEYS_PER_STATEMENT) {
        known.extend(crate::store::disputes::known(&db.pool, db.kind, provider, chunk).await?);
    }
    Ok(known)
}

/// The refund ledger's entries for the statement's refund rows, by
/// refund_no, and the refunds that succeeded on the day.
pub(super) async fn refund_ledger(
    engine: &Engine,
    provider: &str,
    range: (i64, i64),
    rows: &[StatementRow],
) -> store::Result<(hashbrown::HashMap<String, Refund>, Vec<Refund>)> {
    let db = &engine.db;
    let mut nos: Vec<&str> = rows.iter().filter_map(|r| r.refund_no.as_deref()).collect();
    nos.sort_unstable();
    nos.dedup();
    let ledger = recon_reads::refunds_by_no(&db.pool, db.kind, &nos)
        .await?
        .into_iter()
        .map(|r| (r.refund_no.clone(), r))
        .collect();
    let day = recon_reads::day_refunds(&db.pool, provider, range).await?;
    Ok((ledger, day))
}
