//! The ticket list as CSV: every ticket a filter matches, most severe then
//! oldest first, streamed in keyset chunks so no connection is held while
//! the client reads, each cell safe to open in a spreadsheet.

use super::money_plain;
use super::tickets::{reason, summary};
use crate::store;
use crate::store::Db;
use crate::store::lists::{self, QueueAfter};
use crate::store::tickets::TicketRow;
use app::tickets::TicketFilter;

/// Rows per query of the CSV export.
const EXPORT_CHUNK: i64 = 1000;

/// Streams the CSV lines (header first) to `out`; stops when it is gone.
pub async fn export_csv(
    db: &Db,
    f: &TicketFilter,
    now: i64,
    out: tokio::sync::mpsc::Sender<Result<String, std::io::Error>>,
) -> store::Result<()> {
    let header = "ticket_id,class,severity,status,provider,business_date,payment_no,order_no,provider_txn_id,\
local_amount,local_status,provider_amount,provider_status,owner,found_at_utc,closed_at_utc,reason,conclusion\n";
    if out.send(Ok(header.to_owned())).await.is_err() {
        return Ok(());
    }
    let mut after: Option<QueueAfter> = None;
    loop {
        let chunk = lists::tickets(db, f, after.as_ref(), EXPORT_CHUNK, now).await?;
        let Some(last) = chunk.last() else {
            return Ok(());
        };
        after = Some(QueueAfter::of(last));
        let full = chunk.len() as i64 == EXPORT_CHUNK;
        for t in chunk {
            if out.send(Ok(csv_line(&t))).await.is_err() {
                return Ok(());
            }
        }
        if !full {
            return Ok(());
        }
    }
}

fn csv_line(t: &TicketRow) -> String {
    let s = summary(t);
    let cells = [
        s.id,
        s.class,
        s.severity,
        s.status,
        s.provider,
        s.business_date.unwrap_or_default(),
        s.payment_no.unwrap_or_default(),
        s.order_no.unwrap_or_default(),
        s.provider_txn_id.unwrap_or_default(),
        money_plain(t.local_amount_minor, t.local_currency.as_deref()).unwrap_or_default(),
        t.local_status.clone().unwrap_or_default(),
        money_plain(t.provider_amount_minor, t.provider_currency.as_deref()).unwrap_or_default(),
        t.provider_status.clone().unwrap_or_default(),
        s.owner.unwrap_or_default(),
        app::format::utc_minutes(t.found_at),
        t.closed_at
            .map(app::format::utc_minutes)
            .unwrap_or_default(),
        reason(t),
        t.conclusion.clone().unwrap_or_default(),
    ];
    cells
        .iter()
        .map(|c| csv_cell(c))
        .collect::<Vec<_>>()
        .join(",")
        + "\n"
}

/// A CSV cell: quoted when needed, and a leading `=`, `+`, `-` or `@`
/// neutralised so a spreadsheet never runs it as a formula.
pub(crate) fn csv_cell(value: &str) -> String {
    let mut v = value.to_owned();
    if v.starts_with(['=', '+', '-', '@', '\t', '\r']) && v.parse::<f64>().is_err() {
        v.insert(0, '\'');
    }
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_formula_safe() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_cell("-12.50"), "-12.50");
        assert_eq!(csv_cell("\t=1+1"), "'\t=1+1");
    }
}
