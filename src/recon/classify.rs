//! Classification, and nothing but: what each statement row, each local
//! payment and each refund of the day is, in DESIGN.md's table. Pure — the
//! payments and refunds the rows name were looked up before, the findings
//! are written after ([`super::write`]); here they are only decided and
//! counted.

pub(super) mod amounts;
pub(super) mod edge;
pub(super) mod groups;

use super::figures::Figures;
use super::matching::{ByKey, DayPayments, Pay, paid};
use super::run::Found;
use crate::domain::{Class, Severity};
use crate::statement::StatementRow;
use crate::store::recon_reads::Refund;
use edge::{Edges, PAYMENT, REFUND, Unlisted};

/// The matching rules as one provider's run applies them (the settings'
/// [`crate::config::MatchRules`] for its account).
#[derive(Clone, Debug)]
pub(super) struct Applied {
    /// A row whose transaction id names no payment is found by its
    /// payment_no.
    pub by_payment_no: bool,
    /// When the two keys name different payments, the ticket is the
    /// payment_no's.
    pub payment_no_first: bool,
    /// A row found by payment_no must be this close to the payment's
    /// creation (microseconds).
    pub window_us: i64,
    /// Per currency, the amount difference (minor units) that is an
    /// AMOUNT_MISMATCH of LOW severity, to ACCEPT.
    pub tolerances: hashbrown::HashMap<String, i64>,
    /// A row no identifier found is paired by amount and date
    /// ([`amounts`]).
    pub by_amount: bool,
    /// A row whose transaction id names no payment is found by the
    /// merchant's reference it states (the order), within the window.
    pub by_reference: bool,
    /// ... before its payment_no.
    pub reference_first: bool,
}

impl Applied {
    pub fn of(rules: &crate::config::MatchRules, provider: &str) -> Applied {
        let tolerances = rules
            .tolerances
            .keys()
            .map(|(_, c)| (c.clone(), rules.tolerance(provider, c)))
            .filter(|(_, t)| *t > 0)
            .collect();
        Applied {
            by_payment_no: rules.by_payment_no(),
            payment_no_first: rules.payment_no_first(),
            window_us: rules.window(provider),
            tolerances,
            by_amount: rules.by_amount(),
            by_reference: rules.by_reference(),
            reference_first: rules.reference_before_payment_no(),
        }
    }

    fn tolerance(&self, currency: &str) -> i64 {
        self.tolerances.get(currency).copied().unwrap_or(0)
    }
}

impl Default for Applied {
    fn default() -> Self {
        Applied::of(&crate::config::MatchRules::default(), "")
    }
}

/// What one exception row is.
#[derive(Debug)]
pub(super) enum Verdict {
    Matched,
    Ticket(Ticket),
}

/// The particulars of an exception row's ticket.
#[derive(Debug)]
pub(super) struct Ticket {
    pub class: Class,
    pub severity: Severity,
    pub key: String,
    pub payment_no: Option<String>,
    pub order_no: Option<String>,
    pub local: Option<(i64, String, String)>,
    pub reason: String,
    /// A STATUS_LAG the engine may repair (the payment can still move).
    pub repairable: bool,
}

/// The keys the exceptions `from` name for classification: the
/// transaction ids of rows not among the day's payments, and every
/// payment_no.
pub(super) fn exception_keys(from: &[(StatementRow, Option<u32>)]) -> (Vec<&str>, Vec<&str>) {
    let txns = from
        .iter()
        .filter(|(_, slot)| slot.is_none())
        .filter_map(|(r, _)| r.provider_txn_id.as_deref())
        .collect();
    let nos = from
        .iter()
        .filter_map(|(r, _)| r.payment_no.as_deref())
        .collect();
    (txns, nos)
}

/// What the exceptions name, each key once: the transaction ids of rows
/// not among the day's payments (with how often each is listed), and the
/// payment_nos.
pub(super) struct Named<'a> {
    pub txns: Vec<&'a str>,
    pub nos: Vec<&'a str>,
    pub copies: hashbrown::HashMap<&'a str, i64>,
}

impl<'a> Named<'a> {
    pub fn of(exceptions: &'a [(StatementRow, Option<u32>)]) -> Named<'a> {
        let (mut txns, mut nos) = exception_keys(exceptions);
        txns.sort_unstable();
        let copies = txns
            .chunk_by(|a, b| a == b)
            .map(|c| (c[0], c.len() as i64))
            .collect();
        txns.dedup();
        nos.sort_unstable();
        nos.dedup();
        Named { txns, nos, copies }
    }

    /// The keys `asked` (the exceptions looked up early) did not name.
    pub fn not_in(&self, asked: &[(StatementRow, Option<u32>)]) -> (Vec<&'a str>, Vec<&'a str>) {
        let (txns, nos) = exception_keys(asked);
        let (txns, nos): (hashbrown::HashSet<&str>, hashbrown::HashSet<&str>) =
            (txns.into_iter().collect(), nos.into_iter().collect());
        (
            self.txns
                .iter()
                .copied()
                .filter(|t| !txns.contains(t))
                .collect(),
            self.nos
                .iter()
                .copied()
                .filter(|n| !nos.contains(n))
                .collect(),
        )
    }
}

/// Payments by their order (the `reference` key): every attempt of each.
pub(super) type ByOrder = hashbrown::HashMap<String, Vec<Pay>>;

/// The one payment of the order a row's reference names made within the
/// window of the row (a row without a time: any); `Err` with them when
/// several are.
pub(super) fn referenced<'p>(
    row: &StatementRow,
    by_ref: &'p ByOrder,
    window_us: i64,
) -> Result<Option<&'p Pay>, Vec<&'p Pay>> {
    let Some(all) = row.reference.as_deref().and_then(|r| by_ref.get(r)) else {
        return Ok(None);
    };
    let near: Vec<&Pay> = all
        .iter()
        .filter(|p| match (p.created, row.occurred_at) {
            (Some(c), Some(o)) => (o - c).abs() <= window_us,
            (Some(_), None) => true,
            _ => false,
        })
        .collect();
    match near.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => Err(near),
    }
}

/// [`verdict_under`] the default rules.
#[cfg(test)]
pub(super) fn verdict(
    row: &StatementRow,
    t: Option<&Pay>,
    n: Option<&Pay>,
    copies: i64,
) -> Verdict {
    verdict_under(row, t, n, copies, &Applied::default())
}

/// Classifies a payment row that did not plainly match under `rules`: `t`
/// is the payment its transaction id names, `n` the one its payment_no
/// names, `copies` how often its transaction is listed.
pub(super) fn verdict_under(
    row: &StatementRow,
    t: Option<&Pay>,
    n: Option<&Pay>,
    copies: i64,
    rules: &Applied,
) -> Verdict {
    let n = n.filter(|_| rules.by_payment_no);
    let txn = row.provider_txn_id.as_deref();
    let key = txn
        .or(row.payment_no.as_deref())
        .map_or_else(|| format!("line-{}", row.line_no), str::to_owned);
    let ticket = |class, pay: Option<&Pay>, reason: String| Ticket {
        class,
        severity: Severity::High,
        key: key.clone(),
        payment_no: pay.map(|p| p.no.clone()),
        order_no: pay.and_then(|p| p.order.clone()),
        local: None,
        reason,
        repairable: false,
    };
    if copies > 1 {
        return Verdict::Ticket(Ticket {
            order_no: None,
            ..ticket(
                Class::Duplicate,
                t.or(n),
                format!(
                    "transaction {} appears {copies} times in the statement",
                    txn.unwrap_or("-")
                ),
            )
        });
    }
    // A payment found by payment_no only is the row's if made near it.
    let near = |n: &Pay| match (n.created, row.occurred_at) {
        (Some(c), Some(o)) => (o - c).abs() <= rules.window_us,
        (Some(_), None) => true,
        _ => false,
    };
    let pay = match (t, n) {
        (Some(t), Some(n)) if n.no != t.no => {
            return Verdict::Ticket(ticket(
                Class::OneToMany,
                Some(if rules.payment_no_first { n } else { t }),
                format!(
                    "transaction {} belongs to payment {}, the statement names {}",
                    txn.unwrap_or("-"),
                    t.no,
                    n.no
                ),
            ));
        }
        (Some(t), _) => t,
        (None, Some(n)) if near(n) => {
            if n.txn.as_deref().is_some_and(|bound| Some(bound) != txn) {
                return Verdict::Ticket(ticket(
                    Class::OneToMany,
                    Some(n),
                    format!(
                        "payment {} is bound to transaction {}, the statement says {}",
                        n.no,
                        n.txn.as_deref().unwrap_or("-"),
                        txn.unwrap_or("-")
                    ),
                ));
            }
            n
        }
        _ => {
            return Verdict::Ticket(Ticket {
                payment_no: row.payment_no.clone(),
                ..ticket(
                    Class::ProviderOnly,
                    None,
                    "the provider reports a payment Reckon does not have".into(),
                )
            });
        }
    };
    let (amount, currency, status) = (
        row.money.minor,
        row.money.currency.code(),
        row.status.as_str(),
    );
    let l_status = pay.status.as_str();
    let (class, severity, reason, repairable) = if pay.currency != currency {
        (
            Class::CurrencyMismatch,
            Severity::High,
            format!("statement {currency}, local {}", pay.currency),
            false,
        )
    } else if pay.amount != amount {
        let shown = format!(
            "statement {}, local {}",
            row.money.shown(),
            app::format::money(pay.amount, &pay.currency)
        );
        // Within the tolerance it is still a ticket, never a match: one
        // ACCEPT (two people's) takes the provider's amount.
        let tolerance = rules.tolerance(currency);
        if (pay.amount - amount).abs() <= tolerance {
            (
                Class::AmountMismatch,
                Severity::Low,
                format!(
                    "{shown}: within the tolerance of {}; ACCEPT takes the provider's amount",
                    app::format::money(tolerance, currency)
                ),
                false,
            )
        } else {
            (Class::AmountMismatch, Severity::High, shown, false)
        }
    } else if status != "SUCCEEDED" {
        if !paid(l_status) {
            return Verdict::Matched;
        }
        (
            Class::LocalOnly,
            Severity::Critical,
            format!("the provider says {status}, Reckon has it {l_status}"),
            false,
        )
    } else if paid(l_status) {
        return Verdict::Matched;
    } else if matches!(l_status, "CREATED" | "PENDING") {
        (
            Class::StatusLag,
            Severity::Medium,
            format!("paid at the provider, {l_status} here"),
            true,
        )
    } else {
        (
            Class::StatusLag,
            Severity::High,
            format!(
                "paid at the provider, {l_status} here: the state machine cannot follow; a person decides"
            ),
            false,
        )
    };
    Verdict::Ticket(Ticket {
        class,
        severity,
        key: pay.no.clone(),
        payment_no: Some(pay.no.clone()),
        order_no: pay.order.clone(),
        local: Some((pay.amount, pay.currency.clone(), pay.status.clone())),
        reason,
        repairable,
    })
}

/// What the payment rows and the day's payments came to: the tickets, the
/// payments whose STATUS_LAG the engine may repair, and the day's payments
/// no row names that a grouped match may take (LOCAL_ONLY, or not paid).
pub(super) struct Classified {
    pub found: Vec<Found>,
    pub lagging: Vec<String>,
    /// By their place among the day's (a string each would cost a day of
    /// many unpaid payments dearly, for a search rarely made).
    pub unlisted: Vec<u32>,
}

/// What the approved grouped matches of the day settled: their rows'
/// transactions and their payments, matched whatever the rows say.
#[derive(Default)]
pub(super) struct Approved {
    pub txns: hashbrown::HashSet<String>,
    pub nos: hashbrown::HashSet<String>,
}

/// The payment rows that did not plainly match (`exceptions`, in statement
/// order), then every payment of the day: listed more than once
/// (DUPLICATE, every row), plainly matched, or not listed at all.
/// `by_txn` and `by_no` are the payments the exceptions name, as
/// [`Named`] lists them. A paid payment not listed near a cut of the day
/// is as `edges` decide: matched in a neighbour's statement, in transit
/// to it, or absent.
#[cfg(test)]
pub(super) fn payments(
    day: &DayPayments,
    exceptions: &[(StatementRow, Option<u32>)],
    named: &Named<'_>,
    by_txn: &ByKey,
    by_no: &ByKey,
    edges: &mut Edges,
    figures: &mut Figures,
) -> Classified {
    let rules = Applied::default();
    payments_under(
        day,
        exceptions,
        named,
        (by_txn, by_no, &ByOrder::new()),
        edges,
        figures,
        &rules,
        &Approved::default(),
    )
}

/// [`payments`] under `rules`.
#[allow(clippy::too_many_arguments)]
pub(super) fn payments_under(
    day: &DayPayments,
    exceptions: &[(StatementRow, Option<u32>)],
    named: &Named<'_>,
    (by_txn, by_no, by_ref): (&ByKey, &ByKey, &ByOrder),
    edges: &mut Edges,
    figures: &mut Figures,
    rules: &Applied,
    approved: &Approved,
) -> Classified {
    // The day's payments a row's reference found (named by it, as by a
    // payment_no).
    let mut by_reference: hashbrown::HashSet<&str> = hashbrown::HashSet::new();
    // Sized for every finding there can be (the exceptions, the payments
    // named more than once, those named by none): a finding is some 300
    // bytes, and a doubling of hundreds of thousands of them held both
    // copies at the run's peak.
    let most = exceptions.len() + day.indexes().filter(|&i| day.rows(i) != 1).count();
    let mut found: Vec<Found> = Vec::with_capacity(most);
    let mut lagging: Vec<String> = Vec::new();
    let mut unlisted: Vec<u32> = Vec::new();
    // A row of a transaction listed more than once among the day's
    // payments is left for its payment's DUPLICATE ticket below.
    let mut last_duplicate: hashbrown::HashMap<u32, &StatementRow> = hashbrown::HashMap::new();
    for (row, slot) in exceptions {
        let ours;
        let (t, copies) = match slot {
            Some(i) if day.rows(*i) > 1 => {
                if Some(row.line_no) == day.last_line(*i) {
                    last_duplicate.insert(*i, row);
                }
                continue;
            }
            Some(i) => {
                ours = day.pay(*i);
                (Some(&ours), 1)
            }
            None => {
                let txn = row.provider_txn_id.as_deref();
                (
                    txn.and_then(|t| by_txn.get(t)),
                    txn.and_then(|t| named.copies.get(t).copied()).unwrap_or(1),
                )
            }
        };
        let n = row
            .payment_no
            .as_deref()
            .and_then(|no| by_no.get(no))
            .filter(|_| rules.by_payment_no);
        // The reference, for a row whose transaction names no payment.
        let (mut r, mut several) = (None, Vec::new());
        if rules.by_reference && t.is_none() {
            match referenced(row, by_ref, rules.window_us) {
                Ok(p) => r = p,
                Err(many) => several = many,
            }
        }
        let n = match rules.reference_first {
            true => r.or(n),
            false => n.or(r),
        };
        let found_by_reference =
            r.is_some() && n.is_some_and(|n| r.is_some_and(|r| std::ptr::eq(n, r)));
        if found_by_reference && let Some(p) = n {
            by_reference.insert(p.no.as_str());
            figures.count_by_key("reference", "found");
        }
        figures.statement_rows += 1;
        // A row an approved group settled (a combined payment's) is matched.
        if row
            .provider_txn_id
            .as_deref()
            .is_some_and(|t| approved.txns.contains(t))
        {
            figures.count_matched(1);
            continue;
        }
        let v = match verdict_under(row, t, n, copies, rules) {
            Verdict::Matched => {
                figures.count_matched(1);
                continue;
            }
            Verdict::Ticket(mut v) => {
                if v.class == Class::ProviderOnly && !several.is_empty() {
                    let nos: Vec<&str> = several.iter().take(5).map(|p| p.no.as_str()).collect();
                    v.reason.push_str(&format!(
                        "; its reference {} names {} payments made within the window ({}{}): not found by it",
                        row.reference.as_deref().unwrap_or("-"),
                        several.len(),
                        nos.join(", "),
                        if several.len() > 5 { ", …" } else { "" }
                    ));
                }
                v
            }
        };
        figures.count(v.class, 1);
        if v.repairable
            && let Some(no) = &v.payment_no
        {
            lagging.push(no.clone());
        }
        // The other payment a ONE_TO_MANY involves.
        let also = match (t, n) {
            (Some(t), Some(n)) if t.no != n.no => Some(n.no.clone()),
            _ => None,
        };
        let hold = if matches!(v.class, Class::LocalOnly | Class::OneToMany) {
            v.payment_no.iter().cloned().chain(also).collect()
        } else {
            Vec::new()
        };
        found.push(Found {
            class: v.class,
            severity: v.severity,
            key: v.key,
            payment_no: v.payment_no,
            order_no: v.order_no,
            txn: row.provider_txn_id.clone(),
            line_no: Some(row.line_no),
            local: v.local,
            provider_side: Some((
                row.money.minor,
                row.money.currency.code().to_owned(),
                row.status.clone(),
            )),
            reason: v.reason,
            hold,
        });
    }

    // Without the payment_no key a payment only a row's payment_no names
    // is not listed.
    let mut named: hashbrown::HashSet<&str> = match rules.by_payment_no {
        true => named.nos.iter().copied().collect(),
        false => Default::default(),
    };
    named.extend(by_reference);
    // Counted here and added once: a map entry per payment (comparing
    // class names) was a large part of classifying a day (perf).
    let (mut plainly, mut unlisted_matched) = (0i64, 0i64);
    for i in day.indexes() {
        let rows = i64::from(day.rows(i));
        if rows > 1 {
            figures.statement_rows += rows;
            figures.count(Class::Duplicate, rows);
            let pay = day.pay(i);
            let side = match last_duplicate.get(&i) {
                Some(r) => (
                    r.money.minor,
                    r.money.currency.code().to_owned(),
                    r.status.clone(),
                ),
                None => (pay.amount, pay.currency.clone(), "SUCCEEDED".to_owned()),
            };
            let txn = pay.txn.clone().unwrap_or_default();
            found.push(Found {
                class: Class::Duplicate,
                severity: Severity::High,
                key: txn.clone(),
                payment_no: Some(pay.no),
                order_no: None,
                txn: pay.txn,
                line_no: day.last_line(i),
                local: None,
                provider_side: Some(side),
                reason: format!("transaction {txn} appears {rows} times in the statement"),
                hold: Vec::new(),
            });
        } else if rows == 1 {
            if !day.had_exception(i) {
                plainly += 1;
            }
        } else if approved.nos.contains(day.no_of(i)) {
            // Paid by a row an approved group settled.
            unlisted_matched += 1;
        } else if !named.contains(day.no_of(i)) {
            figures.local_without_row += 1;
            let status = day.status_of(i);
            let edge = if paid(status) {
                edges.unlisted(PAYMENT, day.no_of(i), None)
            } else {
                Unlisted::NotNear
            };
            if edge == Unlisted::Arrived {
                unlisted_matched += 1;
                figures.edge_matched += 1;
            } else if edge == Unlisted::InTransit {
                figures.count_in_transit();
            } else if paid(status) {
                figures.count(Class::LocalOnly, 1);
                let pay = day.pay(i);
                unlisted.push(i);
                found.push(Found {
                    class: Class::LocalOnly,
                    severity: Severity::Critical,
                    key: pay.no.clone(),
                    payment_no: Some(pay.no.clone()),
                    order_no: pay.order,
                    txn: pay.txn,
                    line_no: None,
                    reason: if edge == Unlisted::Missing {
                        format!(
                            "{} here near the day's cut, absent from the provider's statement and from the neighbouring day's",
                            pay.status
                        )
                    } else {
                        format!("{} here, absent from the provider's statement", pay.status)
                    },
                    local: Some((pay.amount, pay.currency, pay.status)),
                    provider_side: None,
                    hold: vec![pay.no],
                });
            } else if matches!(status, "CREATED" | "PENDING") {
                // Not paid, so no statement lists it yet: pending, and
                // not matched as well (each record in one figure).
                figures.pending += 1;
                unlisted.push(i);
            } else {
                unlisted_matched += 1;
            }
        }
    }
    figures.statement_rows += plainly;
    if plainly + unlisted_matched > 0 {
        figures.count_matched(plainly + unlisted_matched);
    }
    Classified {
        found,
        lagging,
        unlisted,
    }
}

/// A row of a dispute's money (taken or given back), not a refund.
pub(super) fn is_dispute_row(row: &StatementRow) -> bool {
    row.status == crate::statement::DISPUTED || row.status == crate::statement::DISPUTE_REVERSED
}

/// A dispute's row: matched when a notification told of the dispute (its
/// money is the dispute's, recorded from its events); else a DISPUTE
/// ticket saying no notification was seen — HIGH, as money left the
/// balance without Reckon hearing why.
fn dispute_row(
    row: &StatementRow,
    known: &hashbrown::HashSet<String>,
    figures: &mut Figures,
    found: &mut Vec<Found>,
) {
    let id = row.provider_refund_id.as_deref();
    if id.is_some_and(|id| known.contains(id)) {
        figures.count_matched(1);
        return;
    }
    figures.count(Class::Dispute, 1);
    let taken = row.status == crate::statement::DISPUTED;
    found.push(Found {
        class: Class::Dispute,
        severity: Severity::High,
        key: id.map_or_else(|| format!("line-{}", row.line_no), str::to_owned),
        payment_no: row.payment_no.clone(),
        order_no: None,
        txn: row.provider_txn_id.clone(),
        line_no: Some(row.line_no),
        local: None,
        provider_side: Some((
            row.money.minor,
            row.money.currency.code().to_owned(),
            row.status.clone(),
        )),
        reason: format!(
            "dispute {} {} {} on the provider's balance; no notification of it was seen",
            id.unwrap_or("(no id)"),
            if taken { "took" } else { "gave back" },
            row.money.shown()
        ),
        hold: Vec::new(),
    });
}

/// Why a refund row does not match the refund ledger's entry for it
/// (`None` when it does).
fn refund_reason(row: &StatementRow, ledger: Option<&Refund>) -> Option<String> {
    let (amount, currency) = (row.money.minor, row.money.currency.code());
    match ledger {
        None => Some("a refund in the statement Reckon did not request".to_string()),
        Some(f) if f.currency != currency || f.amount_minor != amount => Some(format!(
            "statement {}, ledger {}",
            row.money.shown(),
            app::format::money(f.amount_minor, &f.currency)
        )),
        Some(f) if f.status == "SUCCEEDED" => None,
        Some(f) => Some(format!(
            "refunded at the provider, {} here (its notification is missing)",
            f.status
        )),
    }
}

/// The statement's refund rows against the refund ledger (`ledger`, by
/// refund_no), then the day's succeeded refunds (`day`) the statement does
/// not list: REFUND_MISMATCH both ways — but for a refund near a cut of
/// the day, as `edges` decide.
#[allow(clippy::too_many_arguments)]
pub(super) fn refunds(
    rows: &[StatementRow],
    ledger: &hashbrown::HashMap<String, Refund>,
    disputes: &hashbrown::HashSet<String>,
    day: Vec<Refund>,
    edges: &mut Edges,
    figures: &mut Figures,
    found: &mut Vec<Found>,
) {
    for row in rows {
        figures.statement_rows += 1;
        if is_dispute_row(row) {
            dispute_row(row, disputes, figures, found);
            continue;
        }
        let f = row.refund_no.as_deref().and_then(|no| ledger.get(no));
        let Some(reason) = refund_reason(row, f) else {
            figures.count_matched(1);
            continue;
        };
        figures.count(Class::RefundMismatch, 1);
        found.push(Found {
            class: Class::RefundMismatch,
            severity: Severity::High,
            key: row
                .refund_no
                .clone()
                .unwrap_or_else(|| format!("line-{}", row.line_no)),
            payment_no: f.map(|f| f.payment_no.clone()).or(row.payment_no.clone()),
            order_no: None,
            txn: row.provider_txn_id.clone(),
            line_no: Some(row.line_no),
            local: f.map(|f| (f.amount_minor, f.currency.clone(), f.status.clone())),
            provider_side: Some((
                row.money.minor,
                row.money.currency.code().to_owned(),
                "REFUNDED".into(),
            )),
            reason,
            hold: Vec::new(),
        });
    }
    let listed: hashbrown::HashSet<&str> =
        rows.iter().filter_map(|r| r.refund_no.as_deref()).collect();
    for r in day {
        if listed.contains(r.refund_no.as_str()) {
            continue;
        }
        figures.local_without_row += 1;
        match edges.unlisted(REFUND, &r.refund_no, r.finished_at) {
            Unlisted::Arrived => {
                figures.count_matched(1);
                figures.edge_matched += 1;
                continue;
            }
            Unlisted::InTransit => {
                figures.count_in_transit();
                continue;
            }
            Unlisted::Missing | Unlisted::NotNear => {}
        }
        figures.count(Class::RefundMismatch, 1);
        found.push(Found {
            class: Class::RefundMismatch,
            severity: Severity::High,
            reason: format!(
                "refund {} succeeded here, absent from the provider's statement",
                r.refund_no
            ),
            key: r.refund_no,
            payment_no: Some(r.payment_no),
            order_no: None,
            txn: None,
            line_no: None,
            local: Some((r.amount_minor, r.currency, r.status)),
            provider_side: None,
            hold: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests;
