//! A completed run's results, row by row, for finance's tools: every
//! statement row with what the run made of it, then the records Reckon has
//! and the statement lacked.
//!
//! A run stores no outcome per row: a plain match leaves nothing behind
//! (`matching`), and a file's run keeps only the rows behind its tickets.
//! So the rows are read again — a file's run from its kept file, a pull
//! from the rows it staged — and each row's outcome is derived: the class
//! of the most severe ticket the run left on its line, or MATCHED when it
//! left none. Read in chunks of [`CHUNK`] rows, each joined with its
//! tickets and with the payments and refunds it names, so a run of a
//! million rows never sits in memory.
//!
//! A re-run of the same day moves the open tickets it finds again to
//! itself (their run and line), and leaves a closed one where it was: an
//! earlier run's rows whose tickets moved, and a later run's rows whose
//! ticket was closed before it, read MATCHED. The day's latest run, with
//! no ticket closed before it, is exact.

use super::local;
use super::run::ReconError;
use crate::domain::{Currency, Fee, Money, quote};
use crate::engine::Engine;
use crate::statement::{self, Pause};
use crate::store::recon_reads::{self, PaymentKey};
use crate::store::recon_runs::{self, RunRow};
use crate::store::tickets::{self, RunResultTicket};
use std::collections::HashMap;
use tokio::sync::mpsc;

/// Rows read, joined and handed on at once.
pub const CHUNK: usize = 2_000;

/// What a run's results call a row without a ticket.
pub const MATCHED: &str = "MATCHED";

/// One row of a run's results: a statement row (`line_no` set), or a
/// record Reckon has that the statement lacks (`kind` "local").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultRow {
    pub line_no: Option<i64>,
    /// payment | refund (a statement row), local (a record it lacks).
    pub kind: &'static str,
    pub provider_txn_id: Option<String>,
    pub payment_no: Option<String>,
    pub refund_no: Option<String>,
    /// In the currency's decimal form (`199.00`), and in its minor units.
    pub amount: Option<String>,
    pub amount_minor: Option<i64>,
    /// The provider's fee as its statement states it (to five places where
    /// it does), and rounded to the minor unit.
    pub fee: Option<String>,
    pub fee_minor: Option<i64>,
    pub currency: Option<String>,
    pub provider_status: Option<String>,
    /// The payment's (or refund's) status in Reckon now.
    pub reckon_status: Option<String>,
    /// MATCHED, or the ticket class.
    pub outcome: String,
    /// For a match, the key that found Reckon's record: provider_txn_id,
    /// payment_no or refund_no.
    pub matched_by: Option<&'static str>,
    pub ticket_id: Option<String>,
    pub ticket_severity: Option<String>,
    pub ticket_status: Option<String>,
}

/// A statement row as read again, from its file or the rows kept.
struct Line {
    line_no: i64,
    kind: &'static str,
    txn: Option<String>,
    payment_no: Option<String>,
    refund_no: Option<String>,
    money: Money,
    fee: Option<Fee>,
    status: String,
}

/// Where a run's rows are read again from.
enum Source {
    /// The kept file, read with the provider's statement format.
    File(statement::Format, Vec<u8>),
    /// The rows the run staged (a pull keeps every row).
    Kept,
}

/// The run `run_id` if its results can be read: it exists (else `None`),
/// it completed, and its rows are at hand (its file is still kept, or it
/// staged them).
pub async fn results_of(engine: &Engine, run_id: &str) -> Result<Option<RunRow>, ReconError> {
    let Some(run) = super::find_run(engine, run_id).await? else {
        return Ok(None);
    };
    if run.status != "COMPLETED" {
        return Err(ReconError::Invalid(format!(
            "run {} is {}: only a completed run has results",
            quote(run_id),
            run.status
        )));
    }
    if run.source != "pull"
        && crate::store::statement_files::describe(&engine.db.pool, run_id)
            .await?
            .is_none()
    {
        return Err(ReconError::Invalid(format!(
            "run {} kept no statement file (past its retention): its matched rows cannot be read again",
            quote(run_id)
        )));
    }
    Ok(Some(run))
}

/// Streams `run`'s results to `out` in chunks, statement rows in line
/// order, then the records the statement lacked; stops, without error,
/// when `out` is gone.
pub async fn results(
    engine: &Engine,
    run: &RunRow,
    out: mpsc::Sender<Vec<ResultRow>>,
) -> Result<(), ReconError> {
    let source = match super::kept_file(engine, &run.run_id).await? {
        Some((_, _, bytes)) => {
            let provider = engine.providers.get(&run.provider).ok_or_else(|| {
                ReconError::Invalid(format!(
                    "provider {} is not configured: its statement cannot be read again",
                    quote(&run.provider)
                ))
            })?;
            let format = provider.statement_format().ok_or_else(|| {
                ReconError::Invalid(format!(
                    "provider {} has no statement format Reckon reads",
                    quote(&run.provider)
                ))
            })?;
            Source::File(format, bytes)
        }
        None if run.source == "pull" => Source::Kept,
        None => {
            return Err(ReconError::Invalid(format!(
                "run {} kept no statement file: its matched rows cannot be read again",
                quote(&run.run_id)
            )));
        }
    };
    let (tx, mut lines) = mpsc::channel::<Result<Vec<Line>, ReconError>>(2);
    let reading = match source {
        Source::File(format, bytes) => tokio::task::spawn_blocking(move || {
            if let Err(e) = read_file(format, bytes, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        }),
        Source::Kept => {
            let (pool, run_id) = (engine.db.pool.clone(), run.run_id.clone());
            tokio::spawn(async move {
                if let Err(e) = read_kept(&pool, &run_id, &tx).await {
                    let _ = tx.send(Err(e)).await;
                }
            })
        }
    };
    let _stop = AbortOnDrop(reading.abort_handle());
    while let Some(chunk) = lines.recv().await {
        let rows = joined(engine, run, chunk?).await?;
        if out.send(rows).await.is_err() {
            return Ok(());
        }
    }
    let mut after = String::new();
    loop {
        let chunk =
            tickets::of_run_lineless(&engine.db.pool, &run.run_id, &after, CHUNK as i64).await?;
        let Some(last) = chunk.last() else {
            return Ok(());
        };
        after = last.discrepancy_id.clone();
        let full = chunk.len() == CHUNK;
        if out
            .send(chunk.into_iter().map(lineless).collect())
            .await
            .is_err()
            || !full
        {
            return Ok(());
        }
    }
}

/// Stops the reader when the results stop being read.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads the kept file again, as its run read it (the lines it skipped
/// were accepted once), handing its rows on in chunks. Blocking.
fn read_file(
    format: statement::Format,
    bytes: Vec<u8>,
    tx: &mpsc::Sender<Result<Vec<Line>, ReconError>>,
) -> Result<(), ReconError> {
    let reader: Box<dyn std::io::BufRead + Send> = Box::new(std::io::Cursor::new(bytes));
    let mut statement = statement::read_with(format, reader, u32::MAX);
    let mut chunk = statement::Chunk::with_capacity(CHUNK);
    loop {
        let pause = statement
            .read_rows(&mut chunk, CHUNK)
            .map_err(|e| ReconError::Refused(e.to_string()))?;
        let end = matches!(pause, Pause::End(_));
        if chunk.len() >= CHUNK || (end && !chunk.is_empty()) {
            let lines: Vec<Line> = chunk
                .iter()
                .map(|r| Line {
                    line_no: r.line_no,
                    kind: r.kind.as_str(),
                    txn: r.provider_txn_id.map(str::to_owned),
                    payment_no: r.payment_no.map(str::to_owned),
                    refund_no: r.refund_no.map(str::to_owned),
                    money: r.money,
                    fee: r.fee,
                    status: r.status.to_owned(),
                })
                .collect();
            chunk.clear();
            if tx.blocking_send(Ok(lines)).is_err() {
                return Ok(());
            }
        }
        if end {
            return Ok(());
        }
    }
}

/// Reads the rows a pull staged, a keyset chunk at a time.
async fn read_kept(
    pool: &crate::store::Pool,
    run_id: &str,
    tx: &mpsc::Sender<Result<Vec<Line>, ReconError>>,
) -> Result<(), ReconError> {
    let mut after = i64::MIN;
    loop {
        let chunk = recon_runs::rows_after(pool, run_id, after, CHUNK as i64).await?;
        let Some(last) = chunk.last() else {
            return Ok(());
        };
        after = last.line_no;
        let full = chunk.len() == CHUNK;
        let mut lines = Vec::with_capacity(chunk.len());
        for r in chunk {
            let currency =
                Currency::parse(&r.currency).map_err(|e| ReconError::Invalid(e.to_string()))?;
            let money = Money::new(r.amount_minor, currency);
            lines.push(Line {
                line_no: r.line_no,
                kind: if r.kind == "refund" {
                    "refund"
                } else {
                    "payment"
                },
                txn: r.provider_txn_id,
                payment_no: r.payment_no,
                refund_no: r.refund_no,
                money,
                // Staged rows keep fees in whole minor units.
                fee: r
                    .fee_minor
                    .map(|minor| Fee::of_money(Money::new(minor, currency))),
                status: r.status,
            });
        }
        if tx.send(Ok(lines)).await.is_err() || !full {
            return Ok(());
        }
    }
}

/// A chunk of lines with their outcomes: the tickets the run left on them,
/// and the records they name as Reckon has them now.
async fn joined(
    engine: &Engine,
    run: &RunRow,
    lines: Vec<Line>,
) -> Result<Vec<ResultRow>, ReconError> {
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Ok(Vec::new());
    };
    let (from, to) = (
        first.line_no.min(last.line_no),
        first.line_no.max(last.line_no),
    );
    let mut on_line: HashMap<i64, RunResultTicket> = HashMap::new();
    for t in tickets::of_run_lines(&engine.db.pool, &run.run_id, from, to).await? {
        // Most severe first: the first of a line is its outcome.
        if let Some(line) = t.line_no {
            on_line.entry(line).or_insert(t);
        }
    }
    let txns: Vec<&str> = lines
        .iter()
        .filter(|l| l.kind == "payment")
        .filter_map(|l| l.txn.as_deref())
        .collect();
    let by_txn =
        local::payments_by(engine, PaymentKey::ProviderTxnId, &run.provider, &txns).await?;
    let nos: Vec<&str> = lines
        .iter()
        .filter(|l| l.kind == "payment")
        .filter(|l| l.txn.as_deref().is_none_or(|t| !by_txn.contains_key(t)))
        .filter_map(|l| l.payment_no.as_deref())
        .collect();
    let by_no = local::payments_by(engine, PaymentKey::PaymentNo, &run.provider, &nos).await?;
    let refund_nos: Vec<&str> = lines
        .iter()
        .filter(|l| l.kind == "refund")
        .filter_map(|l| l.refund_no.as_deref())
        .collect();
    let refunds: HashMap<String, String> =
        recon_reads::refunds_by_no(&engine.db.pool, engine.db.kind, &refund_nos)
            .await?
            .into_iter()
            .map(|r| (r.refund_no, r.status))
            .collect();
    Ok(lines
        .into_iter()
        .map(|l| {
            let (reckon_status, key) = if l.kind == "refund" {
                match l.refund_no.as_deref().and_then(|no| refunds.get(no)) {
                    Some(status) => (Some(status.clone()), Some("refund_no")),
                    None => (None, None),
                }
            } else if let Some(p) = l.txn.as_deref().and_then(|t| by_txn.get(t)) {
                (Some(p.status.clone()), Some("provider_txn_id"))
            } else if let Some(p) = l.payment_no.as_deref().and_then(|no| by_no.get(no)) {
                (Some(p.status.clone()), Some("payment_no"))
            } else {
                (None, None)
            };
            let ticket = on_line.remove(&l.line_no);
            ResultRow {
                line_no: Some(l.line_no),
                kind: l.kind,
                amount: Some(l.money.major_string()),
                amount_minor: Some(l.money.minor),
                fee: l.fee.map(fee_text),
                fee_minor: l.fee.map(Fee::minor),
                currency: Some(l.money.currency.code().to_owned()),
                provider_status: Some(l.status),
                reckon_status,
                outcome: ticket
                    .as_ref()
                    .map_or(MATCHED.to_owned(), |t| t.class.clone()),
                matched_by: if ticket.is_none() { key } else { None },
                ticket_id: ticket.as_ref().map(|t| t.discrepancy_id.clone()),
                ticket_severity: ticket.as_ref().map(|t| t.severity.clone()),
                ticket_status: ticket.map(|t| t.status),
                provider_txn_id: l.txn,
                payment_no: l.payment_no,
                refund_no: l.refund_no,
            }
        })
        .collect())
}

/// A fee in decimal form: the currency's places when whole, five when not.
fn fee_text(fee: Fee) -> String {
    if fee.is_whole() {
        Money::new(fee.minor(), fee.currency).major_string()
    } else {
        app::format::major(fee.e5, Fee::DECIMALS)
    }
}

/// A record the statement lacked, from its ticket.
fn lineless(t: RunResultTicket) -> ResultRow {
    let money = match (t.local_amount_minor, t.local_currency.as_deref()) {
        (Some(minor), Some(c)) => Currency::parse(c).ok().map(|c| Money::new(minor, c)),
        _ => None,
    };
    ResultRow {
        line_no: None,
        kind: "local",
        provider_txn_id: t.provider_txn_id,
        payment_no: t.payment_no,
        refund_no: None,
        amount: money.map(|m| m.major_string()),
        amount_minor: t.local_amount_minor,
        fee: None,
        fee_minor: None,
        currency: t.local_currency,
        provider_status: None,
        reckon_status: t.local_status,
        outcome: t.class,
        matched_by: None,
        ticket_id: Some(t.discrepancy_id),
        ticket_severity: Some(t.severity),
        ticket_status: Some(t.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fee_keeps_its_places_only_where_it_has_them() {
        let cny = Currency::parse("CNY").unwrap();
        assert_eq!(
            fee_text(Fee::parse_major("0.11994", cny).unwrap()),
            "0.11994"
        );
        assert_eq!(fee_text(Fee::parse_major("0.12", cny).unwrap()), "0.12");
        assert_eq!(fee_text(Fee::parse_major("-1.5", cny).unwrap()), "-1.50");
    }
}
