//! The third side: the bank's statements against the providers' payouts.
//! A statement comes in as ISO 20022 camt.053 XML ([`camt`]), SWIFT MT940
//! ([`mt940`]), BAI2 ([`bai2`]) or a CSV read through a column mapping
//! ([`csv`]); it is stored whole or not at all,
//! once per file (its SHA-256). Payouts come from the providers' statement
//! pulls ([`payouts_seen`]). [`match_payouts`] pairs them ([`matching`])
//! and opens PAYOUT_MISSING, BANK_ONLY and PAYOUT_AMOUNT_MISMATCH tickets
//! in the same workflow as every other ticket; no money moves. From the
//! payouts the bank paid it learns each provider's usual delay
//! ([`expected`]): the cash expected per day ([`cash`]), and PAYOUT_LATE
//! for a payout past its usual range — raised before the fixed window's
//! PAYOUT_MISSING, which then opens no second ticket for it, and closed
//! by the pass that finds its credit.

pub mod bai2;
pub mod camt;
pub mod cash;
pub mod csv;
pub mod expected;
pub mod matching;
pub mod mt940;

use crate::accounts::TxError;
use crate::context::Context;
use crate::domain::{Class, Money, Severity, clip, quote};
use crate::providers::{PayoutSeen, Statements};
use crate::store::bank::{self as store, NewEntry, NewPayout, StatementRow};
use crate::store::tickets::{
    NewDiscrepancy, append_action, close_with, open_by_key, open_discrepancy,
};
use crate::store::{match_groups, tickets};
use crate::triage::fixes::{MATCHER, propose_group_in};
use matching::{Anchor, Decision, Grouped, OpenCredit, OpenPayout};
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Credit,
    Debit,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Credit => "CRDT",
            Direction::Debit => "DBIT",
        }
    }
}

/// One booked entry as a statement gives it.
#[derive(Clone, Debug)]
pub struct BankEntry {
    pub line_no: i64,
    pub booked_on: String,
    pub value_on: Option<String>,
    /// Positive; the direction says which way.
    pub money: Money,
    pub direction: Direction,
    /// A reversal of an earlier entry: kept, never matched.
    pub reversal: bool,
    pub bank_ref: Option<String>,
    pub end_to_end_id: Option<String>,
    pub remittance: Option<String>,
    pub counterparty: Option<String>,
}

#[derive(Debug, Default)]
pub struct ParsedStatement {
    pub format: &'static str,
    pub account: Option<String>,
    pub bank_ref: Option<String>,
    pub entries: Vec<BankEntry>,
    /// Entries not booked yet (pending, information only), left out.
    pub skipped: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum BankError {
    /// The file or the request was refused; nothing was stored.
    #[error("{0}")]
    Refused(String),
    #[error("storage error: {0}")]
    Store(#[from] crate::store::Error),
}

/// A statement to import.
pub struct BankImport<'a> {
    pub bytes: &'a [u8],
    pub file_name: Option<&'a str>,
    /// `camt053`, `mt940`, `bai2` or `csv`; `None` tells them by their
    /// content ([`detect`]).
    pub format: Option<&'a str>,
    /// The CSV column mapping ([`csv::Columns::parse`]).
    pub csv_columns: Option<&'a str>,
    pub actor: &'a str,
}

/// What an import did (serialized as the CLI prints it).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Imported {
    pub statement: StatementRow,
    /// `true` when the same file had been imported before: nothing changed.
    pub duplicate: bool,
    /// What the matching pass after it decided.
    pub matching: MatchFigures,
}

/// What one matching pass decided.
#[derive(Clone, Debug, Default, serde::Serialize, utoipa::ToSchema)]
pub struct MatchFigures {
    pub matched: i64,
    pub amount_mismatch: i64,
    pub missing: i64,
    pub bank_only: i64,
    /// Payouts whose amount is not the net of the transactions they
    /// settle (each a PAYOUT_AMOUNT_MISMATCH ticket).
    pub net_differs: i64,
    /// Payouts past their provider's usual range with no credit (each a
    /// PAYOUT_LATE ticket; none while a provider has too little history).
    pub late: i64,
}

/// How many payouts one pass asks their provider about.
const NET_CHECKS_PER_PASS: i64 = 50;

/// Asks each provider what its new automatic payouts settle, and opens a
/// PAYOUT_AMOUNT_MISMATCH ticket for one whose amount is not that net. A
/// payout the provider cannot answer for now is asked again next pass.
async fn check_nets(ctx: &Context, now: i64) -> Result<i64, BankError> {
    let pool = &ctx.db.pool;
    let mut differs = 0;
    for p in store::unchecked_payouts(pool, NET_CHECKS_PER_PASS).await? {
        let Some(provider) = ctx.providers.get(&p.provider).cloned() else {
            store::set_net(pool, &p.provider, &p.payout_id, "NOT_DERIVABLE", None).await?;
            continue;
        };
        let net = match provider.statements() {
            Some(Statements::Pages(pages)) => pages.payout_net(&p.payout_id).await,
            _ => Ok(None),
        };
        let net = match net {
            Ok(net) => net,
            Err(e) => {
                tracing::warn!(payout = %p.payout_id, error = %e, "payout's transactions not listed; asked again next pass");
                continue;
            }
        };
        let state = match net {
            None => "NOT_DERIVABLE",
            Some(n) if n == p.amount_minor => "EQUAL",
            Some(_) => "DIFFERS",
        };
        let mut tx = ctx.db.begin_write().await?;
        if store::set_net(&mut *tx, &p.provider, &p.payout_id, state, net).await?
            && state == "DIFFERS"
        {
            let details = format!(
                "payout {} of {} settles transactions netting {}",
                p.payout_id,
                shown(p.amount_minor, &p.currency),
                shown(net.unwrap_or_default(), &p.currency),
            );
            ticket(
                &mut tx,
                Class::PayoutAmountMismatch,
                &format!("bank:PAYOUT_NET:{}:{}", p.provider, p.payout_id),
                &p,
                None,
                &details,
                now,
            )
            .await?;
            differs += 1;
        }
        tx.commit().await?;
    }
    Ok(differs)
}

/// The payment provider a bank entry names, by its counterparty, its
/// references and its text: only these credits are matched against
/// payouts (a customer's transfer is not a payout). A Stripe payout id
/// (`po_…`) names Stripe wherever it stands.
pub fn provider_kind_of(e: &BankEntry) -> Option<&'static str> {
    let text = [
        e.counterparty.as_deref(),
        e.remittance.as_deref(),
        e.end_to_end_id.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ")
    .to_lowercase();
    crate::providers::KINDS
        .iter()
        .find(|kind| kind.payout_names.iter().any(|w| text.contains(w)))
        .map(|kind| kind.name)
}

/// The format a file's content shows: XML is camt.053, a first record
/// `01,` is BAI2, `:20:` and `:25:` fields are MT940, anything else CSV.
pub fn detect(bytes: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]);
    let text = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    let starts = |tag: &str| text.starts_with(tag) || text.contains(&format!("\n{tag}"));
    if text.starts_with('<') {
        "camt053"
    } else if text.starts_with("01,") {
        "bai2"
    } else if starts(":20:") && starts(":25:") {
        "mt940"
    } else {
        "csv"
    }
}

fn parse(imp: &BankImport<'_>) -> Result<ParsedStatement, String> {
    let format = match imp.format.map(str::trim) {
        None | Some("") => detect(imp.bytes),
        Some("camt053" | "camt.053") => "camt053",
        Some("mt940" | "MT940") => "mt940",
        Some("bai2" | "BAI2") => "bai2",
        Some("csv") => "csv",
        Some(other) => {
            return Err(format!(
                "unknown format {}: camt053, mt940, bai2 or csv",
                quote(other)
            ));
        }
    };
    match format {
        "camt053" => camt::parse(imp.bytes),
        "mt940" => mt940::parse(imp.bytes),
        "bai2" => bai2::parse(imp.bytes),
        _ => csv::parse(
            imp.bytes,
            &csv::Columns::parse(imp.csv_columns.unwrap_or(""))?,
        ),
    }
}

/// The longest reference a statement may give (camt.053's are 35
/// characters): what a provider's ids may be.
const MAX_REF: usize = crate::statement::MAX_ID;
/// The longest remittance or counterparty text (camt.053's are 140
/// characters a line, a few lines at most).
const MAX_TEXT: usize = 1024;

/// Refuses a statement holding a reference or text longer than any bank
/// writes, so what is stored, and every page that lists it, stays small.
fn bounded(parsed: &ParsedStatement) -> Result<(), String> {
    let place = if parsed.format == "csv" {
        "line"
    } else {
        "entry"
    };
    let whole = [
        ("account", &parsed.account),
        ("reference", &parsed.bank_ref),
    ];
    for (name, value) in whole {
        if let Some(v) = value.as_deref().filter(|v| v.len() > MAX_REF) {
            return Err(format!(
                "the statement's {name} {} is longer than {MAX_REF} bytes",
                quote(v)
            ));
        }
    }
    for e in &parsed.entries {
        let fields = [
            ("bank reference", e.bank_ref.as_deref(), MAX_REF),
            ("end-to-end id", e.end_to_end_id.as_deref(), MAX_REF),
            ("remittance", e.remittance.as_deref(), MAX_TEXT),
            ("counterparty", e.counterparty.as_deref(), MAX_TEXT),
        ];
        for (name, value, max) in fields {
            if let Some(v) = value.filter(|v| v.len() > max) {
                return Err(format!(
                    "{place} {}: {name} {} is longer than a bank writes ({max} bytes at most)",
                    e.line_no,
                    quote(v)
                ));
            }
        }
    }
    Ok(())
}

/// Reads and stores a bank statement (whole, or nothing when it cannot be
/// read), then runs a matching pass. The same file again is recognised by
/// its hash and changes nothing.
pub async fn import(ctx: &Context, imp: BankImport<'_>) -> Result<Imported, BankError> {
    let sha256 = hex::encode(Sha256::digest(imp.bytes));
    let pool = &ctx.db.pool;
    if let Some(statement) = store::statement_by_hash(pool, &sha256).await? {
        return Ok(Imported {
            statement,
            duplicate: true,
            matching: MatchFigures::default(),
        });
    }
    // A parser's own message may carry what it read: kept short whatever.
    let parsed = parse(&imp)
        .and_then(|p| bounded(&p).map(|()| p))
        .map_err(|e| BankError::Refused(clip(&e, 2048).into_owned()))?;
    if parsed.entries.is_empty() {
        return Err(BankError::Refused(
            "the statement holds no booked entry".into(),
        ));
    }
    let kinds: Vec<Option<&str>> = parsed.entries.iter().map(provider_kind_of).collect();
    let entries: Vec<NewEntry> = parsed
        .entries
        .iter()
        .zip(&kinds)
        .map(|(e, kind)| {
            let in_scope = e.direction == Direction::Credit && !e.reversal && kind.is_some();
            NewEntry {
                line_no: e.line_no,
                booked_on: &e.booked_on,
                value_on: e.value_on.as_deref(),
                amount_minor: e.money.minor,
                currency: e.money.currency.code(),
                direction: e.direction.as_str(),
                bank_ref: e.bank_ref.as_deref(),
                end_to_end_id: e.end_to_end_id.as_deref(),
                remittance: e.remittance.as_deref(),
                counterparty: e.counterparty.as_deref(),
                provider_kind: *kind,
                state: if in_scope {
                    "UNMATCHED"
                } else {
                    "OUT_OF_SCOPE"
                },
            }
        })
        .collect();
    let statement = StatementRow {
        statement_id: uuid::Uuid::now_v7().to_string(),
        sha256,
        format: parsed.format.to_owned(),
        file_name: imp.file_name.map(str::to_owned),
        account: parsed.account.clone(),
        bank_ref: parsed.bank_ref.clone(),
        entries: entries.len() as i64,
        credits: parsed
            .entries
            .iter()
            .filter(|e| e.direction == Direction::Credit)
            .count() as i64,
        imported_by: imp.actor.to_owned(),
        imported_at: ctx.now(),
    };
    let mut tx = ctx.db.begin_write().await?;
    let inserted = store::insert_statement(&mut tx, &ctx.db.audit, &statement, &entries).await?;
    tx.commit().await?;
    if !inserted {
        // The same file, imported at the same moment by someone else.
        let statement = store::statement_by_hash(pool, &statement.sha256)
            .await?
            .unwrap_or(statement);
        return Ok(Imported {
            statement,
            duplicate: true,
            matching: MatchFigures::default(),
        });
    }
    let matching = match_payouts(ctx, ctx.now()).await?;
    Ok(Imported {
        statement,
        duplicate: false,
        matching,
    })
}

/// The payouts a provider's statement page reported, recorded (again,
/// harmlessly, when a page is read twice).
pub async fn payouts_seen(
    ctx: &Context,
    provider: &str,
    run_id: Option<&str>,
    payouts: &[PayoutSeen],
) -> Result<(), crate::store::Error> {
    for p in payouts {
        // A failed or cancelled payout never reaches the bank.
        let expected = !matches!(p.status.as_str(), "failed" | "canceled");
        let mut tx = ctx.db.begin_write().await?;
        store::upsert_payout(
            &mut *tx,
            &NewPayout {
                provider,
                payout_id: &p.payout_id,
                kind: p.kind,
                amount_minor: p.money.minor,
                currency: p.money.currency.code(),
                arrival_on: &p.arrival_on,
                descriptor: p.descriptor.as_deref(),
                status: &p.status,
                run_id,
                state: if expected { "PENDING" } else { "NOT_SENT" },
                automatic: p.automatic,
                now: ctx.now(),
            },
        )
        .await?;
        if !expected {
            not_sent(&mut tx, ctx, provider, &p.payout_id, &p.status).await?;
        }
        tx.commit().await?;
    }
    Ok(())
}

/// A late payout its provider now says failed or was cancelled: it will
/// not reach the bank, so its PAYOUT_LATE ticket closes, saying so, with
/// an audit entry; the money stays in the provider's balance, for the
/// next payout.
async fn not_sent(
    tx: &mut crate::store::Conn,
    ctx: &Context,
    provider: &str,
    payout_id: &str,
    status: &str,
) -> Result<(), crate::store::Error> {
    let Some(p) = store::payout(&mut *tx, provider, payout_id).await? else {
        return Ok(());
    };
    if p.state != "NOT_SENT" {
        return Ok(());
    }
    let now = ctx.now();
    let conclusion = format!(
        "{provider} reports payout {payout_id} of {} {status}: it will not reach the bank; \
         the amount stays in {provider}'s balance",
        shown(p.amount_minor, &p.currency)
    );
    let closing = LateClosing {
        entry: serde_json::json!({"action": "payout not sent", "status": status, "by": MATCHING_ACTOR, "at": now}),
        conclusion,
        audited: ("payout_status", serde_json::json!(status)),
    };
    close_late(tx, ctx, provider, payout_id, closing, now).await
}

/// Today in the business time zone, as of `now` (µs).
fn today(ctx: &Context, now: i64) -> jiff::civil::Date {
    jiff::Timestamp::from_microsecond(now)
        .unwrap_or_default()
        .to_zoned(ctx.settings().timezone.clone())
        .date()
}

/// One matching pass over every open payout and provider credit: the
/// decisions and their tickets in one transaction, so a pass repeated (a
/// second instance, the next beat) finds them already decided.
pub async fn match_payouts(ctx: &Context, now: i64) -> Result<MatchFigures, BankError> {
    // The provider is asked outside the matching transaction.
    let net_differs = check_nets(ctx, now).await?;
    let window = ctx.settings().pulls.bank_window_days;
    let mut tx = ctx.db.begin_write().await?;
    store::lock_matching(&mut tx, ctx.db.kind).await?;
    let payout_rows = store::open_payouts(&mut *tx).await?;
    let credit_rows = store::open_credits(&mut *tx).await?;
    let waiting: std::collections::HashSet<String> = match_groups::waiting_keys(&mut *tx)
        .await?
        .into_iter()
        .collect();
    let date = |s: &str| s.parse::<jiff::civil::Date>().ok();
    let payouts: Vec<(OpenPayout, &store::PayoutRow)> = payout_rows
        .iter()
        .filter_map(|p| {
            Some((
                OpenPayout {
                    provider: p.provider.clone(),
                    payout_id: p.payout_id.clone(),
                    kind: p.provider_kind.clone(),
                    amount_minor: p.amount_minor,
                    currency: p.currency.clone(),
                    arrival_on: date(&p.arrival_on)?,
                    descriptor: p.descriptor.clone(),
                    missing: p.state == "PAYOUT_MISSING",
                    grouped: waiting.contains(&payout_key(p)),
                },
                p,
            ))
        })
        .collect();
    let credits: Vec<(OpenCredit, &store::EntryRow)> = credit_rows
        .iter()
        .filter_map(|c| {
            let text = [&c.end_to_end_id, &c.bank_ref, &c.remittance]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            Some((
                OpenCredit {
                    entry_id: c.entry_id.clone(),
                    kind: c.provider_kind.clone()?,
                    amount_minor: c.amount_minor,
                    currency: c.currency.clone(),
                    booked_on: date(&c.booked_on)?,
                    text,
                    bank_only: c.state == "BANK_ONLY",
                    grouped: waiting.contains(&credit_key(c)),
                },
                c,
            ))
        })
        .collect();
    let open_p: Vec<OpenPayout> = payouts.iter().map(|(p, _)| p.clone()).collect();
    let open_c: Vec<OpenCredit> = credits.iter().map(|(c, _)| c.clone()).collect();
    let mut figures = MatchFigures {
        net_differs,
        ..MatchFigures::default()
    };
    for d in matching::decide(&open_p, &open_c, window, today(ctx, now)) {
        match d {
            Decision::Matched { payout, credit } => {
                let (p, c) = (payouts[payout].1, credits[credit].1);
                store::set_payout_state(
                    &mut *tx,
                    &p.provider,
                    &p.payout_id,
                    "PAYOUT_MATCHED",
                    Some(&c.entry_id),
                    now,
                )
                .await?;
                store::set_entry_state(&mut *tx, &c.entry_id, "MATCHED").await?;
                late_paid(&mut tx, ctx, p, c, now).await?;
                figures.matched += 1;
            }
            Decision::AmountMismatch { payout, credit } => {
                let (p, c) = (payouts[payout].1, credits[credit].1);
                store::set_payout_state(
                    &mut *tx,
                    &p.provider,
                    &p.payout_id,
                    "PAYOUT_AMOUNT_MISMATCH",
                    Some(&c.entry_id),
                    now,
                )
                .await?;
                store::set_entry_state(&mut *tx, &c.entry_id, "MATCHED").await?;
                late_paid(&mut tx, ctx, p, c, now).await?;
                let details = format!(
                    "payout {} of {} arrived as a bank credit of {} (booked {}, statement line {})",
                    p.payout_id,
                    shown(p.amount_minor, &p.currency),
                    shown(c.amount_minor, &c.currency),
                    c.booked_on,
                    c.line_no
                );
                ticket(
                    &mut tx,
                    Class::PayoutAmountMismatch,
                    &format!("bank:PAYOUT_AMOUNT_MISMATCH:{}:{}", p.provider, p.payout_id),
                    p,
                    Some(c),
                    &details,
                    now,
                )
                .await?;
                figures.amount_mismatch += 1;
            }
            Decision::Missing { payout } => {
                let p = payouts[payout].1;
                store::set_payout_state(
                    &mut *tx,
                    &p.provider,
                    &p.payout_id,
                    "PAYOUT_MISSING",
                    None,
                    now,
                )
                .await?;
                let details = format!(
                    "payout {} of {} due {} has no bank credit within {window} days",
                    p.payout_id,
                    shown(p.amount_minor, &p.currency),
                    p.arrival_on
                );
                figures.missing += 1;
                // Raised late already: that ticket says it is missing now,
                // no second one.
                if p.state == "PAYOUT_LATE" {
                    if let Some(id) =
                        open_by_key(&mut *tx, &late_key(&p.provider, &p.payout_id)).await?
                    {
                        let entry = serde_json::json!({"action": "past the bank window: PAYOUT_MISSING", "detail": details, "at": now});
                        append_action(&mut tx, &id, &entry, now).await?;
                    }
                    continue;
                }
                ticket(
                    &mut tx,
                    Class::PayoutMissing,
                    &payout_key(p),
                    p,
                    None,
                    &details,
                    now,
                )
                .await?;
            }
            Decision::BankOnly { credit } => {
                let c = credits[credit].1;
                store::set_entry_state(&mut *tx, &c.entry_id, "BANK_ONLY").await?;
                let details = format!(
                    "a bank credit of {} booked {} from {} ({}) matches no {} payout within {window} days",
                    shown(c.amount_minor, &c.currency),
                    c.booked_on,
                    c.counterparty.as_deref().unwrap_or("an unnamed payer"),
                    c.remittance.as_deref().unwrap_or(""),
                    c.provider_kind.as_deref().unwrap_or("provider"),
                );
                let key = credit_key(c);
                let kind = c.provider_kind.as_deref().unwrap_or("bank");
                let account = store::account_of_kind(&mut *tx, kind).await?;
                open_discrepancy(
                    &mut *tx,
                    &NewDiscrepancy {
                        dedupe_key: &key,
                        class: Class::BankOnly,
                        severity: Severity::Medium,
                        provider: account.as_deref().unwrap_or(kind),
                        payment_no: None,
                        provider_txn_id: c.end_to_end_id.as_deref().or(c.bank_ref.as_deref()),
                        trace_id: None,
                        local: Some((c.amount_minor, &c.currency, "BANK_CREDIT")),
                        provider_side: None,
                        source: "bank",
                        details: &details,
                        now,
                    },
                )
                .await?;
                figures.bank_only += 1;
            }
            Decision::Group(g) => {
                let rows = (payouts.as_slice(), credits.as_slice());
                group_found(ctx, &mut tx, &g, rows, window, now).await?;
            }
        }
    }
    figures.late = raise_late(ctx, &mut tx, &payout_rows, now).await?;
    tx.commit().await?;
    Ok(figures)
}

/// The dedupe key of a payout's PAYOUT_MISSING ticket.
fn payout_key(p: &store::PayoutRow) -> String {
    format!("bank:PAYOUT_MISSING:{}:{}", p.provider, p.payout_id)
}

/// The dedupe key of a credit's BANK_ONLY ticket.
fn credit_key(c: &store::EntryRow) -> String {
    format!("bank:BANK_ONLY:{}", c.entry_id)
}

type Rows<'a, 'b> = (
    &'b [(OpenPayout, &'a store::PayoutRow)],
    &'b [(OpenCredit, &'a store::EntryRow)],
);

/// A side of a group as recorded.
fn payout_member(role: &str, p: &store::PayoutRow) -> match_groups::Member {
    match_groups::Member {
        role: role.into(),
        side: "PAYOUT".into(),
        provider: Some(p.provider.clone()),
        payout_id: Some(p.payout_id.clone()),
        entry_id: None,
        amount_minor: p.amount_minor,
        on_date: p.arrival_on.clone(),
        ticket_key: payout_key(p),
        ..Default::default()
    }
}

fn credit_member(role: &str, c: &store::EntryRow) -> match_groups::Member {
    match_groups::Member {
        role: role.into(),
        side: "CREDIT".into(),
        provider: None,
        payout_id: None,
        entry_id: Some(c.entry_id.clone()),
        amount_minor: c.amount_minor,
        on_date: c.booked_on.clone(),
        ticket_key: credit_key(c),
        ..Default::default()
    }
}

/// A payout as a group's evidence names it.
fn payout_text(p: &store::PayoutRow) -> String {
    format!(
        "{} {} (arriving {})",
        p.payout_id,
        shown(p.amount_minor, &p.currency),
        p.arrival_on
    )
}

/// A credit as a group's evidence names it.
fn credit_text(c: &store::EntryRow) -> String {
    let reference = c
        .end_to_end_id
        .as_deref()
        .or(c.bank_ref.as_deref())
        .map(|r| format!(" {r}"))
        .unwrap_or_default();
    format!(
        "bank credit{reference} {} (booked {}, statement line {})",
        shown(c.amount_minor, &c.currency),
        c.booked_on,
        c.line_no
    )
}

/// What the grouped pass found, on the anchor's ticket (opened by this pass
/// or an earlier one): a covering set proposed as a GROUP_MATCH, with its
/// members, amounts, sum and days, a note on each member's ticket; an
/// ambiguity or a search past its cap said once in a note. Each is
/// recorded once per anchor and set, so a pass repeated, or a group people
/// rejected, proposes nothing again.
async fn group_found(
    ctx: &Context,
    tx: &mut crate::store::Tx<'static>,
    g: &Grouped,
    (payouts, credits): Rows<'_, '_>,
    window: i64,
    now: i64,
) -> Result<(), BankError> {
    let (anchor_key, anchor_member, provider, currency, total) = match g {
        Grouped::Payouts { credit: c, .. }
        | Grouped::Ambiguous {
            anchor: Anchor::Credit(c),
            ..
        }
        | Grouped::TooMany {
            anchor: Anchor::Credit(c),
            ..
        } => {
            let c = credits[*c].1;
            let kind = c.provider_kind.as_deref().unwrap_or("bank");
            let account = match g {
                Grouped::Payouts { payouts: ps, .. } => Some(payouts[ps[0]].1.provider.clone()),
                _ => store::account_of_kind(&mut **tx, kind).await?,
            };
            (
                credit_key(c),
                credit_member("ANCHOR", c),
                account.unwrap_or_else(|| kind.to_owned()),
                c.currency.clone(),
                c.amount_minor,
            )
        }
        Grouped::Credits { payout: p, .. }
        | Grouped::Ambiguous {
            anchor: Anchor::Payout(p),
            ..
        }
        | Grouped::TooMany {
            anchor: Anchor::Payout(p),
            ..
        } => {
            let p = payouts[*p].1;
            (
                payout_key(p),
                payout_member("ANCHOR", p),
                p.provider.clone(),
                p.currency.clone(),
                p.amount_minor,
            )
        }
    };
    // The anchor's ticket is where people decide: open, with no other
    // proposal waiting on it.
    let Some((ticket, status)) = tickets::by_key(&mut **tx, &anchor_key).await? else {
        return Ok(());
    };
    if status == crate::domain::TicketStatus::Closed.as_str()
        || crate::store::proposals::live_count(&mut **tx, &ticket, now).await? > 0
    {
        return Ok(());
    }
    let anchor_text = match &anchor_member.side[..] {
        "PAYOUT" => payouts
            .iter()
            .find(|(_, p)| payout_key(p) == anchor_key)
            .map(|(_, p)| payout_text(p)),
        _ => credits
            .iter()
            .find(|(_, c)| credit_key(c) == anchor_key)
            .map(|(_, c)| credit_text(c)),
    }
    .unwrap_or_default();
    let (members, texts): (Vec<match_groups::Member>, Vec<String>) = match g {
        Grouped::Payouts { payouts: ps, .. } => ps
            .iter()
            .map(|&i| {
                (
                    payout_member("MEMBER", payouts[i].1),
                    payout_text(payouts[i].1),
                )
            })
            .unzip(),
        Grouped::Credits { credits: cs, .. } => cs
            .iter()
            .map(|&i| {
                (
                    credit_member("MEMBER", credits[i].1),
                    credit_text(credits[i].1),
                )
            })
            .unzip(),
        _ => (Vec::new(), Vec::new()),
    };
    let set_text = |set: &[usize]| -> String {
        let names: Vec<String> = set
            .iter()
            .map(|&i| match g {
                Grouped::Ambiguous {
                    anchor: Anchor::Payout(_),
                    ..
                } => credit_text(credits[i].1),
                _ => payout_text(payouts[i].1),
            })
            .collect();
        names.join(" + ")
    };
    let (status, members_key, note) = match g {
        Grouped::Ambiguous { sets, .. } => {
            let listed: Vec<String> = sets.iter().map(|s| format!("[{}]", set_text(s))).collect();
            let key: Vec<String> = sets
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|&i| match g {
                            Grouped::Ambiguous {
                                anchor: Anchor::Payout(_),
                                ..
                            } => credit_key(credits[i].1),
                            _ => payout_key(payouts[i].1),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            (
                "AMBIGUOUS",
                format!("AMBIGUOUS {}", key.join(" | ")),
                Some(format!(
                    "grouped match not proposed: {} sets sum exactly to the {anchor_text} within {window} days and none is preferred (by naming it, then by day): {}; decide by hand",
                    sets.len(),
                    listed.join("; ")
                )),
            )
        }
        Grouped::TooMany { candidates, .. } => (
            "TOO_MANY",
            format!("TOO_MANY {candidates}"),
            Some(format!(
                "grouped match not searched: {candidates} candidates within {window} days of the {anchor_text}, more than the {} a search takes; decide by hand",
                matching::GROUP_CANDIDATES
            )),
        ),
        _ => {
            let mut keys: Vec<&str> = members.iter().map(|m| m.ticket_key.as_str()).collect();
            keys.sort_unstable();
            ("PROPOSED", keys.join(" "), None)
        }
    };
    let group_id = uuid::Uuid::now_v7().to_string();
    let shape = match g {
        Grouped::Credits { .. }
        | Grouped::Ambiguous {
            anchor: Anchor::Payout(_),
            ..
        }
        | Grouped::TooMany {
            anchor: Anchor::Payout(_),
            ..
        } => "ONE_TO_N",
        _ => "N_TO_ONE",
    };
    let mut sides = vec![anchor_member];
    sides.extend(members.iter().cloned());
    let recorded = match_groups::insert(
        tx,
        &match_groups::NewGroup {
            group_id: &group_id,
            shape,
            provider: &provider,
            currency: &currency,
            total_minor: total,
            anchor: &anchor_key,
            members_key: &members_key,
            status,
            ticket_id: Some(&ticket),
            found_at: now,
            business_date: None,
        },
        &sides,
    )
    .await?;
    if !recorded {
        return Ok(());
    }
    if let Some(note) = note {
        tickets::insert_note(tx, &ticket, "action", &note, None, MATCHER, now).await?;
        tracing::info!(ticket = %ticket, "{note}");
        return Ok(());
    }
    let reason = format!("{} sum exactly to the {anchor_text}", texts.join(" + "),);
    let evidence = format!(
        "found by the bank matching pass: {} member(s) of {provider}, {currency}, within {window} days, together {}; group {group_id}",
        members.len(),
        shown(total, &currency),
    );
    let proposal = match propose_group_in(tx, &ctx.db.audit, &ticket, (&reason, &evidence), now)
        .await
    {
        Ok(id) => id,
        Err(TxError::Db(e)) => return Err(e.into()),
        // Not proposable after all (the ticket moved meanwhile): the group
        // stays recorded, and a person may propose it from the ticket.
        Err(TxError::App(e)) => {
            tracing::warn!(ticket = %ticket, error = %e, "grouped match found but not proposed");
            return Ok(());
        }
    };
    match_groups::set_proposal(&mut **tx, &group_id, &proposal).await?;
    for m in &members {
        if let Some((id, status)) = tickets::by_key(&mut **tx, &m.ticket_key).await?
            && status != crate::domain::TicketStatus::Closed.as_str()
        {
            let body = format!(
                "part of a grouped match proposed on ticket {ticket} (proposal {proposal}): {reason}"
            );
            tickets::insert_note(tx, &id, "action", &body, None, MATCHER, now).await?;
        }
    }
    Ok(())
}

fn late_key(provider: &str, payout_id: &str) -> String {
    format!("bank:PAYOUT_LATE:{provider}:{payout_id}")
}

/// Who closes a late payout's ticket when its credit comes.
const MATCHING_ACTOR: &str = "reckon (bank matching)";

/// The payouts still waiting after this pass's decisions that are past
/// their provider's usual range: PAYOUT_LATE, each with its ticket. The
/// delays are learned from the history as this pass leaves it.
async fn raise_late(
    ctx: &Context,
    tx: &mut crate::store::Conn,
    open: &[store::PayoutRow],
    now: i64,
) -> Result<i64, crate::store::Error> {
    let today = today(ctx, now);
    let payouts = store::payouts_for_cash(&mut *tx, &cash::since(today).to_string()).await?;
    let delays = cash::delays(ctx, &payouts, today);
    let mut late = 0;
    for p in payouts.iter().filter(|p| p.state == "PENDING") {
        let key = expected::Key::new(&p.provider, &p.currency);
        let Some(delay) = delays.get(&key) else {
            continue;
        };
        let Ok(arrival) = p.arrival_on.parse() else {
            continue;
        };
        let origin = cash::origin(ctx, p);
        if !expected::is_late(origin, arrival, Some(delay), today) {
            continue;
        }
        let Some(row) = open
            .iter()
            .find(|o| o.provider == p.provider && o.payout_id == p.payout_id)
        else {
            continue;
        };
        store::set_payout_state(
            &mut *tx,
            &p.provider,
            &p.payout_id,
            "PAYOUT_LATE",
            None,
            now,
        )
        .await?;
        let details = format!(
            "payout {} of {} made {origin}, due {} — {}'s {} payouts usually reach the bank {} days after they are made, \
             at most {} ({} of the last {} days): no bank credit by {today}",
            p.payout_id,
            shown(p.amount_minor, &p.currency),
            p.arrival_on,
            p.provider,
            p.currency,
            delay.median_days,
            delay.late_after_days,
            delay.samples,
            expected::HISTORY_DAYS,
        );
        ticket(
            tx,
            Class::PayoutLate,
            &late_key(&p.provider, &p.payout_id),
            row,
            None,
            &details,
            now,
        )
        .await?;
        late += 1;
    }
    Ok(late)
}

/// A payout's credit found: the PAYOUT_LATE ticket it had, if still open,
/// closed with the credit on it and an audit entry.
async fn late_paid(
    tx: &mut crate::store::Conn,
    ctx: &Context,
    p: &store::PayoutRow,
    c: &store::EntryRow,
    now: i64,
) -> Result<(), crate::store::Error> {
    if !matches!(p.state.as_str(), "PAYOUT_LATE" | "PAYOUT_MISSING") {
        return Ok(());
    }
    let conclusion = format!(
        "the bank credited payout {} with {} booked {} (statement line {}): late, not lost",
        p.payout_id,
        shown(c.amount_minor, &c.currency),
        c.booked_on,
        c.line_no
    );
    let closing = LateClosing {
        entry: serde_json::json!({"action": "credit arrived", "entry": c.entry_id, "booked_on": c.booked_on, "by": MATCHING_ACTOR, "at": now}),
        conclusion,
        audited: ("entry", serde_json::json!(c.entry_id)),
    };
    close_late(tx, ctx, &p.provider, &p.payout_id, closing, now).await
}

/// How the matcher closes a PAYOUT_LATE ticket: the action on it, the
/// conclusion, and what the audit entry adds.
struct LateClosing {
    entry: serde_json::Value,
    conclusion: String,
    audited: (&'static str, serde_json::Value),
}

/// Closes a payout's PAYOUT_LATE ticket, if still open, with a
/// `ticket.close` audit entry by the matcher.
async fn close_late(
    tx: &mut crate::store::Conn,
    ctx: &Context,
    provider: &str,
    payout_id: &str,
    c: LateClosing,
    now: i64,
) -> Result<(), crate::store::Error> {
    let Some(id) = open_by_key(&mut *tx, &late_key(provider, payout_id)).await? else {
        return Ok(());
    };
    if close_with(tx, &id, &c.entry, &c.conclusion, now).await? {
        let mut after = serde_json::json!({ "status": "CLOSED", "conclusion": c.conclusion });
        after[c.audited.0] = c.audited.1;
        let audited = crate::store::audit::Entry {
            actor: MATCHING_ACTOR.to_owned(),
            action: "ticket.close",
            object_type: "ticket",
            object_id: id,
            before: Some(
                serde_json::json!({ "class": Class::PayoutLate.as_str(), "payout": payout_id }),
            ),
            after: Some(after),
        };
        crate::store::audit::append(tx, &ctx.db.audit, &audited, now).await?;
    }
    Ok(())
}

/// `9,048.00 EUR`, for a person reading a ticket.
fn shown(minor: i64, currency: &str) -> String {
    app::format::money(minor, currency)
}

/// A payout's ticket: the provider's side is the payout, the other side
/// the bank's credit (where there is one).
async fn ticket(
    tx: &mut crate::store::Conn,
    class: Class,
    key: &str,
    p: &store::PayoutRow,
    c: Option<&store::EntryRow>,
    details: &str,
    now: i64,
) -> Result<(), crate::store::Error> {
    open_discrepancy(
        &mut *tx,
        &NewDiscrepancy {
            dedupe_key: key,
            class,
            // Late is a warning with money on its way; the rest are not.
            severity: if class == Class::PayoutLate {
                Severity::Medium
            } else {
                Severity::High
            },
            provider: &p.provider,
            payment_no: None,
            provider_txn_id: Some(&p.payout_id),
            trace_id: None,
            local: c.map(|c| (c.amount_minor, c.currency.as_str(), "BANK_CREDIT")),
            provider_side: Some((p.amount_minor, &p.currency, &p.status)),
            source: "bank",
            details,
            now,
        },
    )
    .await?;
    Ok(())
}

/// The published and Reckon's own statement files the parsers are tested on.
#[cfg(test)]
pub(crate) mod fixtures {
    pub fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bank")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn text(name: &str) -> String {
        String::from_utf8(fixture(name)).unwrap()
    }
}
