//! The signed daily close. A provider's business day is closed when its
//! latest run read rows and leaves no open ticket above the allowed severity
//! (`RECKON_CLOSE_ALLOW_OPEN`, checked after every completed run), or when
//! a supervisor closes it with a reason. The close is a record of the day's
//! figures and the statements (by SHA-256) its runs read, who closed it, how
//! and why; its hash covers all of that and the hash of the provider's
//! previous close, so the closes of a provider form one chain; the hash is
//! signed with the audit log's key (an HMAC: whoever holds the key — the
//! server, `reckon`'s command line beside it — can check it, and nobody who
//! can only write the database can forge one).
//!
//! A closed day refuses new statements (a clear refusal naming the close)
//! until it is reopened: one supervisor proposes with a reason, a second one
//! approves. The next close of the day is a new record, chained after it.

use super::run::ReconError;
use crate::domain::Severity;
use crate::engine::Engine;
use crate::policy::{REOPEN_DAY, changes::in_force};
use crate::store::approvals::{self, Approver, Subject};
use crate::store::audit;
use crate::store::closes::{self, CloseRow, ReopenRow};
use crate::store::recon_runs;
use crate::store::{self, ResultExt};
use hmac::Mac;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What a close report says it is (and what the verifier accepts).
pub const REPORT_FORMAT: &str = "reckon.day-close.v1";
/// The hash before a provider's first close.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Who closes a day by itself.
pub const AUTO_ACTOR: &str = "reckon (auto-close)";

/// JSON with every object's keys in sorted order, written without spaces:
/// the one text a report's hash is taken over, whatever order the keys
/// were written in.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The SHA-256 (hex) of a report's canonical body.
fn body_hash(body: &Value) -> String {
    hex::encode(Sha256::digest(canonical(body).to_string().as_bytes()))
}

/// The signature of a close's hash under `key` (hex): an HMAC of its own
/// domain, so it never equals an audit entry's.
fn sign(key: &crate::store::audit_keys::Key, hash: &str) -> String {
    let mut mac = key.mac();
    mac.update(b"reckon day close\0");
    mac.update(hash.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn object_id(provider: &str, date: &str) -> String {
    format!("{provider}:{date}")
}

fn rfc3339(us: i64) -> String {
    jiff::Timestamp::from_microsecond(us)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// The day's dispute money per currency: withdrawn, reinstated, dispute
/// fees booked in the day (by the provider's time of each movement, cut in
/// the provider's statement zone), and the disputes open at its end.
pub async fn disputes_of_day(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<Vec<crate::store::disputes::DayFigures>, ReconError> {
    let zone = super::schedule::statement_zone(engine, provider);
    let range = super::run::day_range(date, &zone).map_err(ReconError::Invalid)?;
    Ok(crate::store::disputes::day_figures(&engine.db.pool, provider, range).await?)
}

/// Refuses a statement for a closed day, naming the close and the way
/// to reopen it.
pub async fn refuse_if_closed(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<(), ReconError> {
    if let Some(c) = closes::closed(&engine.db.pool, provider, date).await? {
        return Err(ReconError::Busy(format!(
            "{provider}'s day {date} is closed (close #{} by {} at {}, hash {}): a statement for it is refused until a supervisor proposes reopening the day and a second supervisor approves",
            c.seq,
            c.closed_by,
            rfc3339(c.closed_at),
            &c.hash[..12]
        )));
    }
    Ok(())
}

/// Closes the day by itself if it qualifies: a completed run, not closed
/// already, and no open ticket above the allowed severity. Returns the
/// close made, if one was.
pub async fn auto_close(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<Option<CloseRow>, ReconError> {
    let pool = &engine.db.pool;
    if !engine.settings().closing.auto || closes::closed(pool, provider, date).await?.is_some() {
        return Ok(None);
    }
    // An empty statement is as often a bill not ready as a quiet day: such
    // a day is closed by a supervisor, not by itself.
    let latest = recon_runs::completed_between(pool, date, date)
        .await?
        .into_iter()
        .rfind(|r| r.provider == provider);
    if latest.is_none_or(|r| r.rows_read == 0) {
        return Ok(None);
    }
    // A payment or refund still in transit to the neighbouring statement is
    // undecided: the day closes once that statement has carried it or not.
    if crate::store::recon_edges::count_in_transit(pool, provider, date).await? > 0 {
        return Ok(None);
    }
    // Three-way: a provider with a balance side closes once its balance
    // bill agreed with the trades (a difference is a ticket that keeps the
    // day open anyway).
    if super::settlement::has_balance(engine, provider)
        && crate::store::settlements::of_day(pool, provider, date)
            .await?
            .is_none_or(|s| s.state != crate::store::settlements::AGREED)
    {
        return Ok(None);
    }
    let allowed = engine
        .settings()
        .closing
        .allow_open
        .map_or(0, Severity::rank);
    for (severity, n) in closes::open_by_severity(pool, provider, date).await? {
        let rank = severity
            .parse::<Severity>()
            .map_or(i64::MAX, Severity::rank);
        if n > 0 && rank > allowed {
            return Ok(None);
        }
    }
    match close(engine, provider, date, "auto", AUTO_ACTOR, None).await {
        Ok(c) => Ok(Some(c)),
        // Closed meanwhile by someone else, or no run yet: nothing to do.
        Err(ReconError::Busy(_) | ReconError::Invalid(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The periodic pass: every recent day with a completed run that is not
/// closed is closed if it now qualifies (its last tickets were repaired or
/// concluded since its run). Returns how many were closed.
pub async fn close_ready_days(engine: &Engine, now: i64) -> Result<usize, ReconError> {
    let Ok(today) =
        jiff::Timestamp::from_microsecond(now).map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date())
    else {
        return Ok(0);
    };
    // Zones run up to a day either side of UTC.
    let back = engine.settings().pulls.catch_up_days.max(1) + 1;
    let from = today
        .checked_sub(jiff::Span::new().days(back))
        .unwrap_or(today);
    let to = today.tomorrow().unwrap_or(today);
    let mut days: Vec<(String, String)> =
        recon_runs::completed_between(&engine.db.pool, &from.to_string(), &to.to_string())
            .await?
            .into_iter()
            .map(|r| (r.provider, r.business_date))
            .collect();
    days.sort();
    days.dedup();
    let mut closed = 0;
    for (provider, date) in days {
        if engine.providers.names().any(|n| n == provider)
            && auto_close(engine, &provider, &date).await?.is_some()
        {
            closed += 1;
        }
    }
    Ok(closed)
}

/// A supervisor closes the day with a reason, whatever is still open.
pub async fn close_by_supervisor(
    engine: &Engine,
    provider: &str,
    date: &str,
    by: &str,
    reason: &str,
) -> Result<CloseRow, ReconError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(ReconError::Invalid(
            "a reason is required to close a day by hand".into(),
        ));
    }
    close(engine, provider, date, "supervisor", by, Some(reason)).await
}

/// Writes the close record of the day: its body (figures, statements,
/// open tickets, who/how/why/when, the previous close's hash) hashed and
/// signed, audited in the same transaction.
async fn close(
    engine: &Engine,
    provider: &str,
    date: &str,
    how: &str,
    by: &str,
    reason: Option<&str>,
) -> Result<CloseRow, ReconError> {
    if !engine.providers.names().any(|n| n == provider) {
        return Err(ReconError::Invalid(format!(
            "provider {provider} is not configured"
        )));
    }
    let pool = &engine.db.pool;
    let runs: Vec<_> = recon_runs::completed_between(pool, date, date)
        .await?
        .into_iter()
        .filter(|r| r.provider == provider)
        .collect();
    let Some(latest) = runs.last() else {
        return Err(ReconError::Invalid(format!(
            "{provider}'s day {date} has no completed run: reconcile its statement before closing it"
        )));
    };
    let figures: Value = latest
        .figures_json
        .as_deref()
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default();
    let open: serde_json::Map<String, Value> = closes::open_by_severity(pool, provider, date)
        .await?
        .into_iter()
        .map(|(s, n)| (s, n.into()))
        .collect();
    let statements: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "run_id": r.run_id,
                "source": r.source,
                "bill_type": r.bill_type,
                "statement_sha256": r.file_hash,
                "rows_read": r.rows_read,
                "finished_at": r.finished_at.map(rfc3339),
            })
        })
        .collect();
    let key = engine
        .db
        .audit
        .signing()
        .ok_or_else(|| ReconError::Invalid(engine.db.audit.source.clone()))?
        .clone();
    // The settings in force decided whether the day may close.
    let config_version = engine.config_version();
    let settlement = super::settlement::for_close(engine, provider, date).await?;
    let disputes = disputes_of_day(engine, provider, date).await?;
    // Two closes of one provider at once take the same place in its chain:
    // the second is refused by the key and tries again after the first.
    for _ in 0..3 {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        if closes::closed(&mut *tx, provider, date).await?.is_some() {
            return Err(ReconError::Busy(format!(
                "{provider}'s day {date} is already closed"
            )));
        }
        let prev = closes::last_of_provider(&mut tx, provider).await?;
        let (seq, prev_hash) = prev.map_or((1, GENESIS.to_owned()), |p| (p.seq + 1, p.hash));
        let mut body = json!({
            "format": REPORT_FORMAT,
            "provider": provider,
            "business_date": date,
            "seq": seq,
            "how": how,
            "closed_by": by,
            "reason": reason,
            "closed_at": rfc3339(now),
            "closed_at_us": now,
            "figures": figures,
            "open_tickets": open,
            "statements": statements,
            "prev_hash": prev_hash,
        });
        // The settings' version joins the body only when there is one, so
        // a close's body keeps the shape it had before versions.
        if let Some(v) = config_version {
            body["config_version"] = v.into();
        }
        // The balance side, for a provider that has one and a day settled.
        if let Some(s) = &settlement {
            body["settlement"] = s.clone();
        }
        // Disputes' money, on a day that has any (a day without keeps the
        // body it had before disputes were recorded).
        if !disputes.is_empty() {
            body["disputes"] = serde_json::to_value(&disputes).unwrap_or_default();
        }
        let body = canonical(&body);
        let hash = body_hash(&body);
        let row = CloseRow {
            provider: provider.to_owned(),
            seq,
            business_date: date.to_owned(),
            state: "CLOSED".into(),
            how: how.to_owned(),
            closed_by: by.to_owned(),
            reason: reason.map(str::to_owned),
            closed_at: now,
            body_json: body.to_string(),
            prev_hash,
            signature: sign(&key, &hash),
            hash,
            key_id: key.id.clone(),
            reopened_by: None,
            reopened_at: None,
            config_version,
        };
        match closes::insert(&mut tx, &row).await {
            Err(e) if store::is_unique_violation(&e) => {
                drop(tx);
                continue;
            }
            done => done?,
        }
        audit::append(
            &mut tx,
            &engine.db.audit,
            &audit::Entry {
                actor: by.to_owned(),
                action: "day.close",
                object_type: "day",
                object_id: object_id(provider, date),
                before: None,
                after: Some(json!({
                    "seq": seq, "how": how, "reason": reason, "hash": row.hash,
                })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        tracing::info!(provider, date, seq, how, by, "day closed");
        return Ok(row);
    }
    Err(ReconError::Busy(format!(
        "{provider}'s closes kept changing while {date} was being closed: try again"
    )))
}

fn already_approved() -> String {
    "you approved reopening this day already: another supervisor's approval is needed".into()
}

/// One supervisor proposes reopening a closed day, with a reason; it needs
/// the approvers the policy in force sets for REOPEN_DAY.
pub async fn propose_reopen(
    engine: &Engine,
    provider: &str,
    date: &str,
    by_id: &str,
    by_name: &str,
    reason: &str,
) -> Result<ReopenRow, ReconError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(ReconError::Invalid(
            "a reason is required to reopen a day".into(),
        ));
    }
    let now = engine.now();
    let mut tx = engine.db.begin_write().await?;
    let Some(c) = closes::closed(&mut *tx, provider, date).await? else {
        return Err(ReconError::Invalid(format!(
            "{provider}'s day {date} is not closed"
        )));
    };
    let (policy_version, policy) = in_force(&mut tx).await?;
    let row = ReopenRow {
        reopen_id: format!("REO{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase(),
        provider: provider.to_owned(),
        business_date: date.to_owned(),
        close_seq: c.seq,
        reason: reason.to_owned(),
        proposer_id: by_id.to_owned(),
        proposer_name: by_name.to_owned(),
        proposed_at: now,
        status: "PENDING".into(),
        decided_by_name: None,
        decided_at: None,
        required_approvals: policy.required(REOPEN_DAY, None),
        approved_by: None,
    };
    closes::propose_reopen(&mut tx, &row, policy_version)
        .await
        .on_unique_violation(|| {
            ReconError::Busy(format!(
                "reopening {provider}'s day {date} is already proposed: a second supervisor decides it"
            ))
        })?;
    audit::append(
        &mut tx,
        &engine.db.audit,
        &audit::Entry {
            actor: by_name.to_owned(),
            action: "day.reopen.propose",
            object_type: "day",
            object_id: object_id(provider, date),
            before: Some(json!({ "seq": c.seq, "state": "CLOSED" })),
            after: Some(json!({
                "reopen_id": row.reopen_id,
                "reason": reason,
                "required_approvals": row.required_approvals,
                "policy_version": policy_version,
            })),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// A second supervisor approves (the day is reopened) or rejects the
/// pending proposal. The proposer cannot decide their own, nor can a
/// supervisor whose role is a pending grant or who vouched for the
/// proposer (the deciding statement's conditions).
pub async fn decide_reopen(
    engine: &Engine,
    provider: &str,
    date: &str,
    by_id: &str,
    by_name: &str,
    approve: bool,
) -> Result<(), ReconError> {
    let now = engine.now();
    let mut tx = engine.db.begin_write().await?;
    let Some(p) = closes::pending_reopen(&mut *tx, provider, date).await? else {
        return Err(ReconError::Invalid(format!(
            "no proposal to reopen {provider}'s day {date} is pending"
        )));
    };
    if p.proposer_id == by_id {
        return Err(ReconError::Invalid(
            "the supervisor who proposed reopening the day cannot decide it: a second supervisor does"
                .into(),
        ));
    }
    if approve {
        let approver = Approver {
            id: by_id,
            name: by_name,
            at: now,
            comment: "",
        };
        let refused = || {
            ReconError::Busy(
                "the proposal was decided meanwhile, or is not this supervisor's to decide".into(),
            )
        };
        let count = match approvals::approve(&mut tx, Subject::Reopen, &p.reopen_id, &approver)
            .await
        {
            Ok(Some(count)) => count,
            Ok(None) => {
                drop(tx);
                if approvals::has_approved(&engine.db.pool, Subject::Reopen, &p.reopen_id, by_id)
                    .await?
                {
                    return Err(ReconError::Invalid(already_approved()));
                }
                return Err(refused());
            }
            Err(e) if store::is_unique_violation(&e) => {
                return Err(ReconError::Invalid(already_approved()));
            }
            Err(e) => return Err(e.into()),
        };
        if !count.reached() {
            // Short of the count the proposal needs: recorded; it waits.
            audit::append(
                &mut tx,
                &engine.db.audit,
                &audit::Entry {
                    actor: by_name.to_owned(),
                    action: "day.reopen.approval",
                    object_type: "day",
                    object_id: object_id(provider, date),
                    before: None,
                    after: Some(json!({
                        "reopen_id": p.reopen_id,
                        "approvals": count.approvals,
                        "required_approvals": count.required,
                    })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            return Ok(());
        }
    }
    let status = if approve { "APPROVED" } else { "REJECTED" };
    if !closes::decide_reopen(&mut tx, &p.reopen_id, status, by_id, by_name, now).await? {
        return Err(ReconError::Busy(
            "the proposal was decided meanwhile, or is not this supervisor's to decide".into(),
        ));
    }
    if approve && !closes::mark_reopened(&mut tx, provider, p.close_seq, by_name, now).await? {
        return Err(ReconError::Busy(format!(
            "close #{} of {provider}'s day {date} is no longer in force",
            p.close_seq
        )));
    }
    audit::append(
        &mut tx,
        &engine.db.audit,
        &audit::Entry {
            actor: by_name.to_owned(),
            action: if approve {
                "day.reopen.approve"
            } else {
                "day.reopen.reject"
            },
            object_type: "day",
            object_id: object_id(provider, date),
            before: Some(json!({ "seq": p.close_seq, "state": "CLOSED" })),
            after: Some(json!({
                "reopen_id": p.reopen_id,
                "proposed_by": p.proposer_name,
                "state": if approve { "REOPENED" } else { "CLOSED" },
            })),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The day's latest close (closed or reopened) and its pending reopen
/// proposal, if any.
pub async fn day_close(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> crate::store::Result<(Option<CloseRow>, Option<ReopenRow>)> {
    let pool = &engine.db.pool;
    Ok((
        closes::latest_of_day(pool, provider, date).await?,
        closes::pending_reopen(pool, provider, date).await?,
    ))
}

/// The signed report of a close: its body as hashed, the hash, and the
/// signature with the key's id.
pub fn report(c: &CloseRow) -> Value {
    let body: Value = serde_json::from_str(&c.body_json).unwrap_or_default();
    json!({
        "report": body,
        "hash": c.hash,
        "signature": {
            "alg": "HMAC-SHA256",
            "key_id": c.key_id,
            "value": c.signature,
        },
    })
}

/// What checking a report found.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Verified {
    /// The body hashes to the stated hash and the signature is the audit
    /// key's over it.
    pub valid: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// The report is a close recorded here (same provider, place and hash).
    pub recorded: bool,
    /// Its previous hash is the hash of the provider's close before it.
    pub chained: bool,
}

impl Verified {
    fn invalid(reason: impl Into<String>) -> Verified {
        Verified {
            valid: false,
            reason: Some(reason.into()),
            recorded: false,
            chained: false,
        }
    }
}

/// Checks a report: the hash of its body, the signature under the key it
/// names, and whether it is the close recorded here, chained to the one
/// before.
pub async fn verify(engine: &Engine, doc: &Value) -> crate::store::Result<Verified> {
    let Some(body) = doc.get("report").filter(|b| b.is_object()) else {
        return Ok(Verified::invalid("no report in the document"));
    };
    if body["format"] != REPORT_FORMAT {
        return Ok(Verified::invalid(format!("not a {REPORT_FORMAT} report")));
    }
    let stated = doc["hash"].as_str().unwrap_or_default();
    let hash = body_hash(body);
    if hash != stated {
        return Ok(Verified::invalid(
            "the report's content does not hash to its stated hash: it was altered",
        ));
    }
    let key_id = doc["signature"]["key_id"].as_str().unwrap_or_default();
    let Some(key) = engine.db.audit.by_id(key_id) else {
        return Ok(Verified::invalid(format!(
            "the signing key {key_id:?} is not one of this server's audit keys"
        )));
    };
    let signature = doc["signature"]["value"].as_str().unwrap_or_default();
    let Ok(bytes) = hex::decode(signature) else {
        return Ok(Verified::invalid("the signature is not hex"));
    };
    let mut mac = key.mac();
    mac.update(b"reckon day close\0");
    mac.update(hash.as_bytes());
    if mac.verify_slice(&bytes).is_err() {
        return Ok(Verified::invalid(
            "the signature does not match the report's hash",
        ));
    }
    let provider = body["provider"].as_str().unwrap_or_default();
    let seq = body["seq"].as_i64().unwrap_or_default();
    let pool = &engine.db.pool;
    let recorded = closes::by_seq(pool, provider, seq)
        .await?
        .is_some_and(|c| c.hash == hash);
    let prev = body["prev_hash"].as_str().unwrap_or_default();
    let chained = if seq == 1 {
        prev == GENESIS
    } else {
        closes::by_seq(pool, provider, seq - 1)
            .await?
            .is_some_and(|c| c.hash == prev)
    };
    Ok(Verified {
        valid: true,
        reason: None,
        recorded,
        chained,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_does_not_depend_on_key_order_but_on_every_value() {
        let a = json!({ "b": 1, "a": { "y": [1, 2], "x": "z" } });
        let b: Value = serde_json::from_str(r#"{"a":{"x":"z","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(body_hash(&a), body_hash(&b));
        let c = json!({ "b": 1, "a": { "y": [2, 1], "x": "z" } });
        assert_ne!(body_hash(&a), body_hash(&c));
    }
}
