//! Alipay's downloaded trade bill: a zip holding the 业务明细 CSV (every
//! trade and refund) and the 业务明细(汇总) CSV (the figures per store and
//! their 合计), both GBK, entry names GBK too. The detail is what the
//! statement format reads; before it is handed over, its counts and its
//! 商家实收 total must be the summary's.

use crate::domain::{Currency, Money, quote};
use crate::providers::CallError;
use crate::providers::spool::{self, Spooled};
use crate::statement::csv::CsvFields;
use std::io::{BufRead, Read};

/// What both files say about the day: trade and refund orders, and the
/// merchant's net receipts (商家实收) in fen.
#[derive(Debug, Default, PartialEq, Eq)]
struct Figures {
    trades: i64,
    refunds: i64,
    received: i64,
}

/// The zip's 业务明细 entry (its name and file), once the 汇总 agrees.
pub fn detail_of(zip: &Spooled, limit: u64) -> Result<(String, Spooled), CallError> {
    let refused = |why: String| CallError::Refused(format!("the Alipay bill zip: {why}"));
    let (mut detail, mut summary) = (None, None);
    for (name, written) in csv_entries(zip, limit)? {
        if name.contains("汇总") {
            summary = Some((name, written));
        } else if name.ends_with("业务明细.csv") {
            detail = Some((name, written));
        }
    }
    let Some((name, bytes)) = detail else {
        return Err(refused("no …_业务明细.csv in it".into()));
    };
    let Some((summary_name, summary)) = summary else {
        return Err(refused("no …_业务明细(汇总).csv in it".into()));
    };
    let stated = summary_figures(&summary)
        .map_err(|why| refused(format!("{}: {why}", quote(&summary_name))))?;
    let read = detail_figures(&bytes).map_err(|why| refused(format!("{}: {why}", quote(&name))))?;
    if stated != read {
        return Err(refused(format!(
            "the summary {} says {} trades, {} refunds, 商家实收 {} fen; \
             the detail {} lists {}, {}, {}: the bill is incomplete, nothing was read",
            quote(&summary_name),
            stated.trades,
            stated.refunds,
            stated.received,
            quote(&name),
            read.trades,
            read.refunds,
            read.received
        )));
    }
    Ok((name, bytes))
}

/// The zip's 账务明细 entry (bill_type=signcustomer): the account's
/// movements, whose own totals its reader checks.
pub(super) fn account_detail_of(zip: &Spooled, limit: u64) -> Result<(String, Spooled), CallError> {
    csv_entries(zip, limit)?
        .into_iter()
        .find(|(name, _)| name.ends_with("账务明细.csv"))
        .ok_or_else(|| CallError::Refused("the Alipay bill zip: no …_账务明细.csv in it".into()))
}

/// Every CSV entry of the bill zip, each unzipped to a file of its own.
fn csv_entries(zip: &Spooled, limit: u64) -> Result<Vec<(String, Spooled)>, CallError> {
    spool::csv_entries(zip, limit)
        .map_err(|why| CallError::Refused(format!("the Alipay bill zip: {why}")))
}

/// A line's text: GBK as Alipay writes it (UTF-8 when it is valid UTF-8).
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(t) => t.trim_start_matches('\u{feff}').to_owned(),
        Err(_) => encoding_rs::GBK.decode(bytes).0.into_owned(),
    }
}

fn fen(amount: &str) -> Result<i64, String> {
    let cny = Currency::parse("CNY").expect("CNY is known");
    Money::parse_major(amount.trim(), cny)
        .map(|m| m.minor)
        .map_err(|e| format!("amount {}: {e}", quote(amount)))
}

fn count(n: &str) -> Result<i64, String> {
    n.trim()
        .parse()
        .map_err(|_| format!("count {} is not a number", quote(n)))
}

/// The rows of a table read line by line from `file` (`#` lines left
/// out), each split and handed to `row` with the header: the first line
/// whose first field is `first`. A line is read up to the longest a
/// statement's may be, so a file of one endless line costs no more.
fn table(
    file: &Spooled,
    first: &str,
    mut row: impl FnMut(&[String], &[String]) -> Result<(), String>,
) -> Result<(), String> {
    let mut lines = file.open().map_err(|e| format!("cannot be read: {e}"))?;
    let mut csv = CsvFields::new();
    let mut header: Option<Vec<String>> = None;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let n = (&mut lines)
            .take(crate::statement::MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| format!("cannot be read: {e}"))?;
        if n == 0 {
            break;
        }
        if bytes.len() > crate::statement::MAX_LINE {
            return Err(format!(
                "a line longer than {} bytes",
                crate::statement::MAX_LINE
            ));
        }
        let line = text(&bytes);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f = csv.split(line);
        let fields: Vec<String> = (0..f.len())
            .map(|i| f.get(i).trim().trim_start_matches('`').to_owned())
            .collect();
        match &header {
            None if fields.first().is_some_and(|h| h == first) => header = Some(fields),
            None => {}
            Some(h) => row(h, &fields)?,
        }
    }
    if header.is_none() {
        return Err(format!("no header starting {first}"));
    }
    Ok(())
}

fn column(header: &[String], name: &str) -> Result<usize, String> {
    header
        .iter()
        .position(|h| h.replace(['（', '）'], "") == name.replace(['（', '）'], ""))
        .ok_or_else(|| format!("no column {name}"))
}

/// The 汇总's 合计 row (or, without one, its stores added up).
fn summary_figures(file: &Spooled) -> Result<Figures, String> {
    // A store's row that does not read matters only without a 合计.
    let (mut total, mut sum) = (None, Ok(Figures::default()));
    table(file, "门店编号", |header, row| {
        let (t, r, m) = (
            column(header, "交易订单总笔数")?,
            column(header, "退款订单总笔数")?,
            column(header, "商家实收（元）")?,
        );
        let at = |i: usize| row.get(i).map_or("", String::as_str);
        let f = (|| {
            Ok::<_, String>(Figures {
                trades: count(at(t))?,
                refunds: count(at(r))?,
                received: fen(at(m))?,
            })
        })();
        if at(0).starts_with("合计") {
            if total.is_none() {
                total = Some(f?);
            }
        } else if let (Ok(s), Ok(f)) = (&mut sum, &f) {
            s.trades += f.trades;
            s.refunds += f.refunds;
            s.received += f.received;
        } else if let (Ok(_), Err(e)) = (&sum, f) {
            sum = Err(e);
        }
        Ok(())
    })?;
    match total {
        Some(total) => Ok(total),
        None => sum,
    }
}

/// What the 业务明细 lists: its 交易 and 退款 rows, and their 商家实收.
fn detail_figures(file: &Spooled) -> Result<Figures, String> {
    let mut figures = Figures::default();
    table(file, "支付宝交易号", |header, row| {
        let (kind, m) = (
            column(header, "业务类型")?,
            column(header, "商家实收（元）")?,
        );
        match row.get(kind).map(String::as_str) {
            Some("交易") => figures.trades += 1,
            Some("退款") => figures.refunds += 1,
            _ => {}
        }
        figures.received += fen(row.get(m).map_or("", String::as_str))?;
        Ok(())
    })?;
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::spool::{MAX_ENTRIES, entry_name};
    use std::io::Write;

    fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, text) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(&encoding_rs::GBK.encode(text).0).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    const DETAIL: &str = "#支付宝业务明细查询\n支付宝交易号,商户订单号,业务类型,商家实收（元）\n2026001\t,PAYA\t,交易,10.00\n2026001\t,PAYA\t,退款,-2.50\n#交易合计：1笔\n";

    #[test]
    fn entry_names_are_read_as_gbk_unless_they_are_utf8() {
        let gbk = encoding_rs::GBK
            .encode("2088_20261130_业务明细(汇总).csv")
            .0;
        assert_eq!(entry_name(&gbk), "2088_20261130_业务明细(汇总).csv");
        assert_eq!(entry_name("a_业务明细.csv".as_bytes()), "a_业务明细.csv");
    }

    fn detail(zip: &[u8], limit: u64) -> Result<(String, Vec<u8>), CallError> {
        let zip = spool::of_bytes(zip).unwrap();
        detail_of(&zip, limit).map(|(name, f)| (name, std::fs::read(f.path()).unwrap()))
    }

    const LIMIT: u64 = spool::MAX_BILL_BYTES;

    fn summary(t: &str) -> String {
        format!(
            "#支付宝业务汇总查询\n门店编号,门店名称,交易订单总笔数,退款订单总笔数,商家实收（元）\n合计,,{t}\n"
        )
    }

    #[test]
    fn the_detail_is_handed_over_only_when_its_summary_agrees() {
        let good = zip_of(&[
            ("x_业务明细.csv", DETAIL),
            ("x_业务明细(汇总).csv", &summary("1,1,7.50")),
        ]);
        let (name, bytes) = detail(&good, LIMIT).unwrap();
        assert_eq!(name, "x_业务明细.csv");
        assert_eq!(bytes, encoding_rs::GBK.encode(DETAIL).0.into_owned());
        for (off, says) in [("2,1,7.50", "2 trades"), ("1,1,10.00", "1000 fen")] {
            let zip = zip_of(&[
                ("x_业务明细.csv", DETAIL),
                ("x_业务明细(汇总).csv", &summary(off)),
            ]);
            let err = detail(&zip, LIMIT).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        let alone = zip_of(&[("x_业务明细.csv", DETAIL)]);
        assert!(
            detail(&alone, LIMIT)
                .unwrap_err()
                .to_string()
                .contains("汇总")
        );
        assert!(detail(b"PK not a zip", LIMIT).is_err());
    }

    /// The entries together may unpack to the limit, not a byte more; a
    /// zip of more entries than a bill has is refused by its count.
    #[test]
    fn entries_past_the_limit_or_too_many_of_them_are_refused() {
        let s = summary("1,1,7.50");
        let good = zip_of(&[("x_业务明细.csv", DETAIL), ("x_业务明细(汇总).csv", &s)]);
        let both =
            (encoding_rs::GBK.encode(DETAIL).0.len() + encoding_rs::GBK.encode(&s).0.len()) as u64;
        assert!(detail(&good, both).is_ok());
        let err = detail(&good, both - 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!("past the {} bytes", both - 1)) && err.contains("汇总"),
            "{err}"
        );
        let names: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("{i}.txt")).collect();
        let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
        let err = detail(&zip_of(&many), LIMIT).unwrap_err().to_string();
        assert!(
            err.contains(&format!("declares {} entries", MAX_ENTRIES + 1)),
            "{err}"
        );
    }
}
