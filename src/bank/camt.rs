//! ISO 20022 `camt.053` (BankToCustomerStatement), versions 001.02 and
//! later, read with `quick-xml`'s serde: each `Stmt`'s account and id, and
//! each booked `Ntry` as a [`BankEntry`]. Only the elements Reckon uses are
//! declared; the rest of a rich statement is skipped. Where the versions
//! differ — `Sts` as a code (001.02–001.06) or as `Sts/Cd` (001.08 on), a
//! party's name as `Dbtr/Nm` or `Dbtr/Pty/Nm` — both shapes are read.

use super::{BankEntry, Direction, ParsedStatement};
use crate::domain::{Currency, Money, quote};
use serde::Deserialize;

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "@xmlns", default)]
    xmlns: Option<String>,
    #[serde(rename = "BkToCstmrStmt")]
    statement: Option<BkToCstmrStmt>,
}

#[derive(Deserialize)]
struct BkToCstmrStmt {
    #[serde(rename = "Stmt", default)]
    stmts: Vec<Stmt>,
}

#[derive(Deserialize)]
struct Stmt {
    #[serde(rename = "Id", default)]
    id: Option<String>,
    #[serde(rename = "Acct", default)]
    acct: Option<Acct>,
    #[serde(rename = "Ntry", default)]
    entries: Vec<Ntry>,
}

#[derive(Deserialize)]
struct Acct {
    #[serde(rename = "Id", default)]
    id: Option<AcctId>,
}

#[derive(Deserialize)]
struct AcctId {
    #[serde(rename = "IBAN", default)]
    iban: Option<String>,
    #[serde(rename = "Othr", default)]
    other: Option<Other>,
}

#[derive(Deserialize)]
struct Other {
    #[serde(rename = "Id", default)]
    id: Option<String>,
}

#[derive(Deserialize)]
struct Ntry {
    #[serde(rename = "Amt")]
    amt: Option<Amt>,
    #[serde(rename = "CdtDbtInd", default)]
    cdt_dbt_ind: Option<String>,
    #[serde(rename = "RvslInd", default)]
    reversal: Option<String>,
    #[serde(rename = "Sts", default)]
    status: Option<Status>,
    #[serde(rename = "BookgDt", default)]
    booked: Option<DateChoice>,
    #[serde(rename = "ValDt", default)]
    value: Option<DateChoice>,
    #[serde(rename = "AcctSvcrRef", default)]
    bank_ref: Option<String>,
    #[serde(rename = "NtryDtls", default)]
    details: Vec<NtryDtls>,
    #[serde(rename = "AddtlNtryInf", default)]
    info: Option<String>,
}

#[derive(Deserialize)]
struct Amt {
    #[serde(rename = "@Ccy")]
    ccy: String,
    #[serde(rename = "$text")]
    value: String,
}

/// `<Sts>BOOK</Sts>` (up to 001.06) or `<Sts><Cd>BOOK</Cd></Sts>`.
#[derive(Deserialize)]
struct Status {
    #[serde(rename = "$text", default)]
    text: Option<String>,
    #[serde(rename = "Cd", default)]
    code: Option<String>,
    #[serde(rename = "Prtry", default)]
    proprietary: Option<String>,
}

#[derive(Deserialize)]
struct DateChoice {
    #[serde(rename = "Dt", default)]
    date: Option<String>,
    #[serde(rename = "DtTm", default)]
    date_time: Option<String>,
}

#[derive(Deserialize)]
struct NtryDtls {
    #[serde(rename = "TxDtls", default)]
    txs: Vec<TxDtls>,
}

#[derive(Deserialize)]
struct TxDtls {
    #[serde(rename = "Refs", default)]
    refs: Option<Refs>,
    #[serde(rename = "RltdPties", default)]
    parties: Option<RltdPties>,
    #[serde(rename = "RmtInf", default)]
    remittance: Option<RmtInf>,
}

#[derive(Deserialize)]
struct Refs {
    #[serde(rename = "EndToEndId", default)]
    end_to_end: Option<String>,
}

#[derive(Deserialize)]
struct RltdPties {
    #[serde(rename = "Dbtr", default)]
    debtor: Option<Party>,
    #[serde(rename = "Cdtr", default)]
    creditor: Option<Party>,
}

/// `Nm` directly (up to 001.07) or inside `Pty` (001.08 on).
#[derive(Deserialize)]
struct Party {
    #[serde(rename = "Nm", default)]
    name: Option<String>,
    #[serde(rename = "Pty", default)]
    party: Option<Box<Party>>,
}

impl Party {
    fn name(&self) -> Option<String> {
        self.name
            .clone()
            .or_else(|| self.party.as_ref().and_then(|p| p.name()))
    }
}

#[derive(Deserialize)]
struct RmtInf {
    #[serde(rename = "Ustrd", default)]
    unstructured: Vec<String>,
}

/// A text field, trimmed, `None` when blank.
fn text(s: Option<&String>) -> Option<String> {
    s.map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `YYYY-MM-DD` of a `Dt`, or of a `DtTm`'s date (the bank's own day).
fn day(d: Option<&DateChoice>) -> Option<Result<String, String>> {
    let d = d?;
    let raw = d.date.as_deref().or(d.date_time.as_deref())?.trim();
    let head = raw.get(..10).unwrap_or(raw);
    Some(
        head.parse::<jiff::civil::Date>()
            .map(|d| d.to_string())
            .map_err(|_| format!("{} is not an ISO date", quote(raw))),
    )
}

/// Reads a camt.053 file: every booked entry of every statement in it.
/// Pending (`PDNG`) and information-only (`INFO`) entries are not yet on
/// the account and are left out; anything unreadable refuses the whole
/// file, naming the statement and entry.
pub fn parse(bytes: &[u8]) -> Result<ParsedStatement, String> {
    let text_in = std::str::from_utf8(bytes)
        .map_err(|e| format!("a camt.053 file is UTF-8 XML; this is not: {e}"))?;
    let doc: Document = quick_xml::de::from_str(text_in.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("not a readable camt.053 document: {e}"))?;
    if let Some(ns) = doc.xmlns.as_deref()
        && !ns.contains("camt.053.001.")
    {
        return Err(format!(
            "the document's namespace is {}, not a camt.053 statement (urn:iso:std:iso:20022:tech:xsd:camt.053.001.NN)",
            quote(ns)
        ));
    }
    let Some(statement) = doc.statement else {
        return Err("no BkToCstmrStmt in the document: not a camt.053 statement".into());
    };
    if statement.stmts.is_empty() {
        return Err("the document holds no Stmt".into());
    }
    let mut out = ParsedStatement {
        format: "camt.053",
        ..ParsedStatement::default()
    };
    let mut line_no = 0;
    for (s_at, stmt) in statement.stmts.iter().enumerate() {
        if out.bank_ref.is_none() {
            out.bank_ref = text(stmt.id.as_ref());
        }
        if out.account.is_none() {
            out.account = stmt
                .acct
                .as_ref()
                .and_then(|a| a.id.as_ref())
                .and_then(|id| {
                    text(id.iban.as_ref())
                        .or_else(|| text(id.other.as_ref().and_then(|o| o.id.as_ref())))
                });
        }
        for (n_at, ntry) in stmt.entries.iter().enumerate() {
            let at = format!("Stmt {} Ntry {}", s_at + 1, n_at + 1);
            let status = ntry.status.as_ref().and_then(|s| {
                text(s.code.as_ref())
                    .or_else(|| text(s.text.as_ref()))
                    .or_else(|| text(s.proprietary.as_ref()))
            });
            match status.as_deref() {
                Some("BOOK") | None => {}
                Some("PDNG" | "INFO" | "FUTR") => {
                    out.skipped += 1;
                    continue;
                }
                Some(other) => return Err(format!("{at}: unknown entry status {}", quote(other))),
            }
            line_no += 1;
            out.entries
                .push(entry(ntry, line_no).map_err(|e| format!("{at}: {e}"))?);
        }
    }
    Ok(out)
}

fn entry(ntry: &Ntry, line_no: i64) -> Result<BankEntry, String> {
    let amt = ntry.amt.as_ref().ok_or("no Amt")?;
    let currency =
        Currency::parse(&amt.ccy).map_err(|e| format!("Amt@Ccy {}: {e}", quote(&amt.ccy)))?;
    let money = Money::parse_major(&amt.value, currency)
        .map_err(|e| format!("Amt {}: {e}", quote(&amt.value)))?;
    if money.minor < 0 {
        return Err(format!(
            "Amt {} is negative; camt.053 states the direction in CdtDbtInd",
            quote(&amt.value)
        ));
    }
    let direction = match ntry.cdt_dbt_ind.as_deref().map(str::trim) {
        Some("CRDT") => Direction::Credit,
        Some("DBIT") => Direction::Debit,
        Some(other) => {
            return Err(format!(
                "CdtDbtInd {} is neither CRDT nor DBIT",
                quote(other)
            ));
        }
        None => return Err("no CdtDbtInd: neither CRDT nor DBIT".into()),
    };
    let booked_on = day(ntry.booked.as_ref())
        .or_else(|| day(ntry.value.as_ref()))
        .ok_or("neither BookgDt nor ValDt")??;
    let value_on = day(ntry.value.as_ref()).transpose()?;
    let txs = ntry.details.iter().flat_map(|d| d.txs.iter());
    let mut end_to_end = None;
    let mut counterparty = None;
    let mut remittance: Vec<String> = Vec::new();
    for tx in txs {
        if end_to_end.is_none() {
            end_to_end = text(tx.refs.as_ref().and_then(|r| r.end_to_end.as_ref()))
                // "NOTPROVIDED" is the scheme's word for no reference.
                .filter(|r| r != "NOTPROVIDED");
        }
        if counterparty.is_none() {
            // Money in names who paid; money out, who was paid.
            let party = tx.parties.as_ref().and_then(|p| match direction {
                Direction::Credit => p.debtor.as_ref(),
                Direction::Debit => p.creditor.as_ref(),
            });
            counterparty = party.and_then(Party::name).map(|n| n.trim().to_owned());
        }
        if let Some(r) = &tx.remittance {
            remittance.extend(r.unstructured.iter().map(|u| u.trim().to_owned()));
        }
    }
    if let Some(info) = text(ntry.info.as_ref()) {
        remittance.push(info);
    }
    let remittance = remittance.join(" ").trim().to_owned();
    Ok(BankEntry {
        line_no,
        booked_on,
        value_on,
        money,
        direction,
        reversal: matches!(ntry.reversal.as_deref().map(str::trim), Some("true" | "1")),
        bank_ref: text(ntry.bank_ref.as_ref()),
        end_to_end_id: end_to_end,
        remittance: (!remittance.is_empty()).then_some(remittance),
        counterparty: counterparty.filter(|c| !c.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::fixtures::fixture;

    #[test]
    fn a_camt053_v02_statement_reads_its_booked_entries() {
        let s = parse(&fixture("camt053_v02_stripe.xml")).unwrap();
        assert_eq!(s.format, "camt.053");
        assert_eq!(s.account.as_deref(), Some("DE89370400440532013000"));
        assert_eq!(s.bank_ref.as_deref(), Some("STMT-2026-12-03-001"));
        assert_eq!(s.skipped, 1, "the pending entry is not on the account yet");
        assert_eq!(s.entries.len(), 6);
        let first = &s.entries[0];
        assert_eq!(first.direction, Direction::Credit);
        assert_eq!(
            (first.money.minor, first.money.currency.code()),
            (904_800, "EUR")
        );
        assert_eq!(first.booked_on, "2026-12-03");
        assert_eq!(first.value_on.as_deref(), Some("2026-12-03"));
        assert_eq!(first.bank_ref.as_deref(), Some("20261203-0001"));
        assert_eq!(first.end_to_end_id.as_deref(), Some("po_1QaPAYOUTmatched"));
        assert_eq!(
            first.counterparty.as_deref(),
            Some("STRIPE PAYMENTS EUROPE LTD")
        );
        assert!(
            first.remittance.as_deref().unwrap().contains("STRIPE"),
            "{first:?}"
        );
        let rent = s
            .entries
            .iter()
            .find(|e| e.direction == Direction::Debit)
            .unwrap();
        assert_eq!(
            rent.counterparty.as_deref(),
            Some("Hausverwaltung Nord GmbH")
        );
        assert_eq!(rent.end_to_end_id, None, "NOTPROVIDED is no reference");
    }

    #[test]
    fn a_camt053_v08_statement_reads_the_nested_status_and_party() {
        let s = parse(&fixture("camt053_v08_small.xml")).unwrap();
        assert_eq!(s.entries.len(), 1);
        let e = &s.entries[0];
        assert_eq!(
            e.counterparty.as_deref(),
            Some("Stripe Technology Europe Ltd")
        );
        assert_eq!(e.booked_on, "2026-12-04", "a DtTm's day");
        assert_eq!((e.money.minor, e.money.currency.code()), (12_050, "EUR"));
    }

    #[test]
    fn a_broken_or_foreign_document_is_refused_with_its_reason() {
        let good = String::from_utf8(fixture("camt053_v02_stripe.xml")).unwrap();
        let cut = &good[..good.len() / 2];
        let err = parse(cut.as_bytes()).unwrap_err();
        assert!(err.starts_with("not a readable camt.053 document"), "{err}");
        let bad_amount = good.replacen(">9048.00<", ">90x8.00<", 1);
        let err = parse(bad_amount.as_bytes()).unwrap_err();
        assert!(err.starts_with("Stmt 1 Ntry 1: Amt"), "{err}");
        let bad_ind = good.replace("<CdtDbtInd>CRDT</CdtDbtInd>", "<CdtDbtInd>IN</CdtDbtInd>");
        assert!(parse(bad_ind.as_bytes()).unwrap_err().contains("CdtDbtInd"));
        let camt054 = good.replace("camt.053.001.02", "camt.054.001.02");
        assert!(parse(camt054.as_bytes()).unwrap_err().contains("namespace"));
        assert!(
            parse(b"<Document><Other/></Document>")
                .unwrap_err()
                .contains("BkToCstmrStmt")
        );
        assert!(parse(b"date,amount\n").is_err());
    }
}
