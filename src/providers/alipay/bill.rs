//! Alipay's downloaded trade bill: a zip holding the 业务明细 CSV (every
//! trade and refund) and the 业务明细(汇总) CSV (the figures per store and
//! their 合计), both GBK, entry names GBK too. The detail is what the
//! statement format reads; before it is handed over, its counts and its
//! 商家实收 total must be the summary's.

use crate::domain::{Currency, Money, quote};
use crate::providers::CallError;
use crate::statement::csv::CsvFields;
use std::io::Read;

/// An entry that unpacks larger than this is refused.
const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// What both files say about the day: trade and refund orders, and the
/// merchant's net receipts (商家实收) in fen.
#[derive(Debug, Default, PartialEq, Eq)]
struct Figures {
    trades: i64,
    refunds: i64,
    received: i64,
}

/// The zip's 业务明细 entry (its name and bytes), once the 汇总 agrees.
pub(super) fn detail_of(zip: &[u8]) -> Result<(String, Vec<u8>), CallError> {
    let refused = |why: String| CallError::Refused(format!("the Alipay bill zip: {why}"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip))
        .map_err(|e| refused(format!("not a zip ({e})")))?;
    let (mut detail, mut summary) = (None, None);
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| refused(format!("entry {i}: {e}")))?;
        let name = entry_name(entry.name_raw());
        if !name.ends_with(".csv") {
            continue;
        }
        let mut bytes = Vec::new();
        (&mut entry)
            .take(MAX_ENTRY_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| refused(format!("{} does not unzip: {e}", quote(&name))))?;
        if bytes.len() as u64 > MAX_ENTRY_BYTES {
            return Err(refused(format!(
                "{} unpacks to more than {MAX_ENTRY_BYTES} bytes",
                quote(&name)
            )));
        }
        if name.contains("汇总") {
            summary = Some((name, bytes));
        } else if name.ends_with("业务明细.csv") {
            detail = Some((name, bytes));
        }
    }
    let Some((name, bytes)) = detail else {
        return Err(refused("no …_业务明细.csv in it".into()));
    };
    let Some((summary_name, summary)) = summary else {
        return Err(refused("no …_业务明细(汇总).csv in it".into()));
    };
    let stated = summary_figures(&text(&summary))
        .map_err(|why| refused(format!("{}: {why}", quote(&summary_name))))?;
    let read =
        detail_figures(&text(&bytes)).map_err(|why| refused(format!("{}: {why}", quote(&name))))?;
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

/// An entry's name: UTF-8 when it is (the zip's UTF-8 flag), else GBK as
/// Alipay writes it.
fn entry_name(raw: &[u8]) -> String {
    match std::str::from_utf8(raw) {
        Ok(name) => name.to_owned(),
        Err(_) => encoding_rs::GBK.decode(raw).0.into_owned(),
    }
}

/// A file's text: GBK as Alipay writes it (UTF-8 when it is valid UTF-8).
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

/// The lines of a table (`#` lines left out), each split; the header is
/// the first line whose first field is `first`.
fn table(text: &str, first: &str) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut csv = CsvFields::new();
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
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
            Some(_) => rows.push(fields),
        }
    }
    let header = header.ok_or_else(|| format!("no header starting {first}"))?;
    Ok((header, rows))
}

fn column(header: &[String], name: &str) -> Result<usize, String> {
    header
        .iter()
        .position(|h| h.replace(['（', '）'], "") == name.replace(['（', '）'], ""))
        .ok_or_else(|| format!("no column {name}"))
}

/// The 汇总's 合计 row (or, without one, its stores added up).
fn summary_figures(text: &str) -> Result<Figures, String> {
    let (header, rows) = table(text, "门店编号")?;
    let (t, r, m) = (
        column(&header, "交易订单总笔数")?,
        column(&header, "退款订单总笔数")?,
        column(&header, "商家实收（元）")?,
    );
    let at = |row: &Vec<String>, i: usize| row.get(i).cloned().unwrap_or_default();
    let of = |row: &Vec<String>| -> Result<Figures, String> {
        Ok(Figures {
            trades: count(&at(row, t))?,
            refunds: count(&at(row, r))?,
            received: fen(&at(row, m))?,
        })
    };
    if let Some(total) = rows.iter().find(|row| row[0].starts_with("合计")) {
        return of(total);
    }
    let mut sum = Figures::default();
    for row in &rows {
        let f = of(row)?;
        sum.trades += f.trades;
        sum.refunds += f.refunds;
        sum.received += f.received;
    }
    Ok(sum)
}

/// What the 业务明细 lists: its 交易 and 退款 rows, and their 商家实收.
fn detail_figures(text: &str) -> Result<Figures, String> {
    let (header, rows) = table(text, "支付宝交易号")?;
    let (kind, m) = (
        column(&header, "业务类型")?,
        column(&header, "商家实收（元）")?,
    );
    let mut figures = Figures::default();
    for row in &rows {
        match row.get(kind).map(String::as_str) {
            Some("交易") => figures.trades += 1,
            Some("退款") => figures.refunds += 1,
            _ => {}
        }
        figures.received += fen(row.get(m).map_or("", String::as_str))?;
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn the_detail_is_handed_over_only_when_its_summary_agrees() {
        let summary = |t: &str| {
            format!(
                "#支付宝业务汇总查询\n门店编号,门店名称,交易订单总笔数,退款订单总笔数,商家实收（元）\n合计,,{t}\n"
            )
        };
        let good = zip_of(&[
            ("x_业务明细.csv", DETAIL),
            ("x_业务明细(汇总).csv", &summary("1,1,7.50")),
        ]);
        let (name, bytes) = detail_of(&good).unwrap();
        assert_eq!(name, "x_业务明细.csv");
        assert_eq!(bytes, encoding_rs::GBK.encode(DETAIL).0.into_owned());
        for (off, says) in [("2,1,7.50", "2 trades"), ("1,1,10.00", "1000 fen")] {
            let zip = zip_of(&[
                ("x_业务明细.csv", DETAIL),
                ("x_业务明细(汇总).csv", &summary(off)),
            ]);
            let err = detail_of(&zip).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        let alone = zip_of(&[("x_业务明细.csv", DETAIL)]);
        assert!(detail_of(&alone).unwrap_err().to_string().contains("汇总"));
        assert!(detail_of(b"PK not a zip").is_err());
    }
}
