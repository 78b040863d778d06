//! The rest of the console's backend: the daily dashboard, callback search
//! and replay (one or all DEAD ones of a provider and time range, as a job
//! that can be left and returned to), payment search and record,
//! reconciliation runs, alerts. Lists are keyset pages.

use super::Desk;
use super::mask;
use super::reading::{Arg, bind_all, money_text};
use crate::accounts::{internal, retrying};
use crate::recon::day_range;
use crate::store::audit;
use crate::store::payments::HOLD_REASON;
use app::console::{
    AlertRow, CallbackDetail, CallbackFigures, CallbackFilter, CallbackPage, CallbackSummary,
    Dashboard, DayFigures, Line, PaymentFilter, PaymentPage, PaymentSummary, PaymentView,
    ReplayJob, RunPage, RunSummary, TrendPoint,
};
use app::error::AppError;
use app::tickets::{ActionResult, PAGE_SIZE};
use app::types::User;
use serde_json::json;
use sqlx::Row;
use sqlx::any::AnyRow;
use std::collections::BTreeMap;

/// A replay job silent this long was cut off (its process stopped).
const JOB_SILENT_US: i64 = 120 * 1_000_000;

fn invalid(detail: impl Into<String>) -> AppError {
    AppError::Invalid {
        detail: detail.into(),
    }
}

impl Desk {
    /// One audit entry in its own transaction.
    async fn audit_one(
        &self,
        actor: &str,
        action: &'static str,
        object_type: &'static str,
        object_id: &str,
        after: serde_json::Value,
    ) -> Result<(), AppError> {
        retrying(|| async {
            let mut tx = self.engine.db.begin_write().await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.to_owned(),
                    action,
                    object_type,
                    object_id: object_id.to_owned(),
                    before: None,
                    after: Some(after.clone()),
                },
                self.now(),
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    fn tz(&self) -> &jiff::tz::TimeZone {
        &self.engine.settings.timezone
    }

    /// Today in the business time zone, moved by `days`.
    fn business_day(&self, days: i64) -> String {
        let now = jiff::Timestamp::from_microsecond(self.now()).unwrap_or_default();
        let today = now.to_zoned(self.tz().clone()).date();
        today
            .checked_add(jiff::Span::new().days(days))
            .unwrap_or(today)
            .to_string()
    }

    fn range(&self, day: &str) -> Result<(i64, i64), AppError> {
        day_range(day, self.tz()).map_err(invalid)
    }

    /// `column` within the business day `day`.
    fn on_day(&self, column: &str, day: &str, args: &mut Vec<Arg>) -> Result<String, AppError> {
        let (start, end) = self.range(day)?;
        args.push(Arg::I(start));
        args.push(Arg::I(end));
        Ok(format!(
            "{column} >= ${} AND {column} < ${}",
            args.len() - 1,
            args.len()
        ))
    }

    fn providers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.engine.providers.names().map(str::to_owned).collect();
        names.sort();
        names
    }

    pub async fn dashboard_of(
        &self,
        day: Option<&str>,
        provider: Option<&str>,
    ) -> Result<Dashboard, AppError> {
        let day = day
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| self.business_day(-1));
        let (start, end) = self.range(&day)?;
        let provider = provider.filter(|p| !p.trim().is_empty()).map(str::to_owned);
        let first: jiff::civil::Date = day.parse().map_err(|_| invalid("a day is YYYY-MM-DD"))?;
        let first = first
            .checked_sub(jiff::Span::new().days(29))
            .map_err(|e| invalid(e.to_string()))?
            .to_string();
        let days = self
            .engine
            .recon_days(&first, &day)
            .await
            .map_err(internal)?;
        let mut per_day: BTreeMap<String, DayFigures> = BTreeMap::new();
        for d in days {
            if provider.as_deref().is_some_and(|p| d.provider != p) {
                continue;
            }
            let date = d.business_date.clone();
            let f = &d.figures;
            let e = per_day.entry(date).or_default();
            let n = |k: &str| f[k].as_i64().unwrap_or(0);
            e.to_process += n("to_process");
            e.matched += n("matched");
            e.pending += n("pending");
            e.repaired += n("repaired");
            e.unknown += n("unknown");
            e.runs.push(d.run_id.clone());
            if let Some(classes) = f["classes"].as_object() {
                for (class, count) in classes {
                    let c = count.as_i64().unwrap_or(0);
                    match e.classes.iter_mut().find(|(k, _)| k == class) {
                        Some((_, v)) => *v += c,
                        None => e.classes.push((class.clone(), c)),
                    }
                }
            }
        }
        let figures = per_day.get(&day).cloned().unwrap_or_default();
        let mut trend = Vec::new();
        let mut d: jiff::civil::Date = first.parse().map_err(|_| invalid("bad day"))?;
        for _ in 0..30 {
            let key = d.to_string();
            let f = per_day.get(&key);
            trend.push(TrendPoint {
                day: key,
                matched: f.map(|f| f.matched).unwrap_or(0),
                pending: f.map(|f| f.pending).unwrap_or(0),
                unknown: f.map(|f| f.unknown).unwrap_or(0),
                reconciled: f.is_some(),
            });
            d = d.tomorrow().map_err(|e| invalid(e.to_string()))?;
        }
        let callbacks = self
            .callback_figures(start, end, provider.as_deref())
            .await
            .map_err(internal)?;
        let alerts = self.alert_rows(true, 20).await.map_err(internal)?;
        let open_alerts: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE acknowledged_at IS NULL")
                .fetch_one(&self.engine.db.pool)
                .await
                .map_err(internal)?;
        Ok(Dashboard {
            day,
            provider,
            providers: self.providers(),
            timezone: self.tz().iana_name().unwrap_or("UTC").to_owned(),
            figures,
            trend,
            callbacks,
            alerts,
            open_alerts,
        })
    }

    /// The day's callbacks: received, duplicates, failed, DEAD, p99 time
    /// from receipt to processed.
    pub async fn callback_figures(
        &self,
        start: i64,
        end: i64,
        provider: Option<&str>,
    ) -> sqlx::Result<CallbackFigures> {
        let pool = &self.engine.db.pool;
        let mut args = vec![Arg::I(start), Arg::I(end)];
        let mut cond = "received_at >= $1 AND received_at < $2".to_owned();
        if let Some(p) = provider {
            args.push(Arg::S(p.to_owned()));
            cond.push_str(" AND provider = $3");
        }
        let row: AnyRow = bind_all(
            sqlx::query(&format!(
                "SELECT COUNT(*) AS received, \
                   CAST(COALESCE(SUM(duplicates), 0) + COALESCE(SUM(CASE WHEN outcome = 'duplicate' THEN 1 ELSE 0 END), 0) AS BIGINT) AS duplicates, \
                   CAST(COALESCE(SUM(CASE WHEN processing_status = 'FAILED' THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed, \
                   CAST(COALESCE(SUM(CASE WHEN processing_status = 'DEAD' THEN 1 ELSE 0 END), 0) AS BIGINT) AS dead, \
                   CAST(COALESCE(SUM(CASE WHEN processed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS processed \
                 FROM payment_callbacks WHERE {cond}"
            )),
            &args,
        )
        .fetch_one(pool)
        .await?;
        let processed: i64 = row.try_get("processed")?;
        let p99_ms = if processed > 0 {
            let offset = ((processed - 1) as f64 * 0.99).floor() as i64;
            let us: Option<i64> = bind_all(
                sqlx::query(&format!(
                    "SELECT processed_at - received_at FROM payment_callbacks \
                     WHERE {cond} AND processed_at IS NOT NULL ORDER BY processed_at - received_at LIMIT 1 OFFSET {offset}"
                )),
                &args,
            )
            .try_map(|r: AnyRow| r.try_get::<i64, _>(0))
            .fetch_optional(pool)
            .await?;
            us.map(|u| u as f64 / 1000.0)
        } else {
            None
        };
        Ok(CallbackFigures {
            received: row.try_get("received")?,
            duplicates: row.try_get("duplicates")?,
            failed: row.try_get("failed")?,
            dead: row.try_get("dead")?,
            p99_ms,
        })
    }

    pub async fn alert_rows(&self, open_only: bool, limit: i64) -> sqlx::Result<Vec<AlertRow>> {
        let sql = format!(
            "SELECT alert_id, kind, severity, payment_no, message, created_at, acknowledged_at, acknowledged_by, ack_comment \
             FROM alerts {} ORDER BY {} LIMIT {limit}",
            if open_only {
                "WHERE acknowledged_at IS NULL"
            } else {
                ""
            },
            if open_only {
                "created_at, alert_id"
            } else {
                "created_at DESC, alert_id"
            }
        );
        sqlx::query(&sql)
            .try_map(|r: AnyRow| {
                Ok(AlertRow {
                    id: r.try_get("alert_id")?,
                    kind: r.try_get("kind")?,
                    severity: r.try_get("severity")?,
                    payment_no: r.try_get("payment_no")?,
                    message: r.try_get("message")?,
                    created_at: r.try_get("created_at")?,
                    acknowledged_at: r.try_get("acknowledged_at")?,
                    acknowledged_by: r.try_get("acknowledged_by")?,
                    ack_comment: r.try_get("ack_comment")?,
                })
            })
            .fetch_all(&self.engine.db.pool)
            .await
    }

    pub async fn ack(&self, actor: &User, id: &str, comment: &str) -> Result<(), AppError> {
        let comment = super::required(comment, "comment")?;
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            let done = sqlx::query(
                "UPDATE alerts SET acknowledged_at = $1, acknowledged_by = $2, ack_comment = $3 \
                 WHERE alert_id = $4 AND acknowledged_at IS NULL",
            )
            .bind(now)
            .bind(&actor.username)
            .bind(comment)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Err(crate::accounts::TxError::App(AppError::NotFound));
            }
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action: "alert.acknowledge",
                    object_type: "alert",
                    object_id: id.to_owned(),
                    before: Some(json!({ "acknowledged": false })),
                    after: Some(json!({ "acknowledged": true, "comment": comment })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub async fn callback_page(&self, f: &CallbackFilter) -> Result<CallbackPage, AppError> {
        let mut args = Vec::new();
        let mut parts = vec!["1 = 1".to_owned()];
        if let Some(q) = &f.q {
            args.push(Arg::S(q.clone()));
            let n = args.len();
            parts.push(format!(
                "(payment_no = ${n} OR provider_txn_id = ${n} OR callback_id = ${n} OR trace_id = ${n} OR id = ${n})"
            ));
        }
        if let Some(s) = &f.status {
            parts.push(equals("processing_status", Arg::S(s.clone()), &mut args));
        }
        if let Some(p) = &f.provider {
            parts.push(equals("provider", Arg::S(p.clone()), &mut args));
        }
        if let Some(day) = &f.day {
            parts.push(self.on_day("received_at", day, &mut args)?);
        }
        if let Some(c) = newest_first_after(f.after.as_deref(), "received_at", "id", &mut args) {
            parts.push(c);
        }
        let sql = format!(
            "SELECT {CALLBACK_COLUMNS} FROM payment_callbacks WHERE {} ORDER BY received_at DESC, id DESC LIMIT {}",
            parts.join(" AND "),
            PAGE_SIZE + 1
        );
        let mut items: Vec<CallbackSummary> = bind_all(sqlx::query(&sql), &args)
            .try_map(|r: AnyRow| callback_summary(&r))
            .fetch_all(&self.engine.db.pool)
            .await
            .map_err(internal)?;
        let next = if items.len() as i64 > PAGE_SIZE {
            items.truncate(PAGE_SIZE as usize);
            items.last().map(|c| format!("{}.{}", c.received_at, c.id))
        } else {
            None
        };
        Ok(CallbackPage { items, next })
    }

    pub async fn callback_detail(&self, id: &str) -> Result<CallbackDetail, AppError> {
        let pool = &self.engine.db.pool;
        let row = sqlx::query(&format!(
            "SELECT {CALLBACK_COLUMNS}, headers_json, payload, payload_hash, error_message, next_retry_at, \
               processed_at, refund_no, facts FROM payment_callbacks WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(pool)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
        let summary = callback_summary(&row).map_err(internal)?;
        let headers_json: String = row.try_get("headers_json").map_err(internal)?;
        let payload: Vec<u8> = row.try_get("payload").map_err(internal)?;
        let produced: Vec<String> = sqlx::query_as::<_, (String, String, String, i64)>(
            "SELECT from_status, to_status, source, at FROM payment_status_history WHERE evidence_ref = $1 ORDER BY at",
        )
        .bind(id)
        .fetch_all(pool)
        .await
        .map_err(internal)?
        .into_iter()
        .map(|(from, to, source, at)| {
            format!(
                "{} {from} → {to} ({source})",
                app::format::utc_minutes(at)
            )
        })
        .collect();
        let replays: Vec<String> = sqlx::query_as::<_, (i64, String, Option<String>)>(
            "SELECT at, actor, after_json FROM audit_log WHERE action = 'callback.replay' AND object_type = 'callback' \
               AND object_id = $1 ORDER BY seq",
        )
        .bind(id)
        .fetch_all(pool)
        .await
        .map_err(internal)?
        .into_iter()
        .map(|(at, actor, after)| {
            let class = after
                .as_deref()
                .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                .and_then(|v| v["class"].as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{} {actor}: {class}", app::format::utc_minutes(at))
        })
        .collect();
        let redeliveries = crate::store::callbacks::redeliveries(pool, id)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|(at, hash, same)| {
                let what = if same {
                    "same facts, new envelope"
                } else {
                    "OTHER FACTS: conflict, not applied"
                };
                format!(
                    "{} {what} · sha-256 {}",
                    app::format::utc_minutes(at),
                    &hash[..hash.len().min(16)]
                )
            })
            .collect();
        Ok(CallbackDetail {
            facts: row.try_get("facts").map_err(internal)?,
            redeliveries,
            replayable: summary.verify_result == "VERIFIED",
            summary,
            headers: mask::headers(&headers_json),
            payload_bytes: payload.len() as i64,
            payload: mask::payload(&payload),
            payload_hash: row.try_get("payload_hash").map_err(internal)?,
            error_message: row.try_get("error_message").map_err(internal)?,
            next_retry_at: row.try_get("next_retry_at").map_err(internal)?,
            processed_at: row.try_get("processed_at").map_err(internal)?,
            refund_no: row.try_get("refund_no").map_err(internal)?,
            produced,
            replays,
        })
    }

    /// One stored callback through `apply` again, audited with what it did.
    pub async fn replay_one(
        &self,
        actor: &str,
        id: &str,
        job: Option<&str>,
    ) -> Result<ActionResult, AppError> {
        let out = self
            .engine
            .replay_callback(id)
            .await
            .map_err(super::action_error)?;
        let result = ActionResult {
            class: out.class.into(),
            detail: out.detail,
        };
        retrying(|| async {
            let now = self.now();
            let mut tx = self.engine.db.begin_write().await?;
            audit::append(
                &mut tx,
                &self.engine.db.audit,
                &audit::Entry {
                    actor: actor.to_owned(),
                    action: "callback.replay",
                    object_type: "callback",
                    object_id: id.to_owned(),
                    before: None,
                    after: Some(json!({ "class": result.class, "detail": result.detail, "payment_no": out.payment_no, "job": job })),
                },
                now,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await?;
        Ok(result)
    }

    /// Starts replaying every DEAD callback of `provider` received in
    /// [from, to] (business days, inclusive) in the background; returns the
    /// job to watch.
    pub async fn start_replay_job(
        &self,
        actor: &User,
        provider: &str,
        from: &str,
        to: &str,
    ) -> Result<String, AppError> {
        if self.engine.providers.get(provider).is_none() {
            return Err(invalid(format!("provider {provider} is not configured")));
        }
        let (from_at, _) = self.range(from)?;
        let (_, to_at) = self.range(to)?;
        if to_at <= from_at {
            return Err(invalid("the range ends before it starts"));
        }
        let pool = self.engine.db.pool.clone();
        let total: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM payment_callbacks WHERE provider = $1 AND processing_status = 'DEAD' \
               AND received_at >= $2 AND received_at < $3",
        )
        .bind(provider)
        .bind(from_at)
        .bind(to_at)
        .fetch_one(&pool)
        .await
        .map_err(internal)?;
        let job = format!("JOB{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
        let now = self.now();
        sqlx::query(
            "INSERT INTO replay_jobs (job_id, provider, from_at, to_at, requested_by, status, total, done, started_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, 'RUNNING', $6, 0, $7, $7)",
        )
        .bind(&job)
        .bind(provider)
        .bind(from_at)
        .bind(to_at)
        .bind(&actor.username)
        .bind(total)
        .bind(now)
        .execute(&pool)
        .await
        .map_err(internal)?;
        self.audit_one(
            &actor.username,
            "callback.bulk_replay",
            "replay_job",
            &job,
            json!({ "provider": provider, "from": from, "to": to, "dead": total }),
        )
        .await?;
        let desk = self.clone();
        let (job_id, actor_name, provider) =
            (job.clone(), actor.username.clone(), provider.to_owned());
        tokio::spawn(async move {
            if let Err(e) = desk
                .run_replay_job(&job_id, &actor_name, &provider, from_at, to_at)
                .await
            {
                tracing::error!(job = %job_id, error = %e, "bulk replay failed");
                let _ = sqlx::query(
                    "UPDATE replay_jobs SET status = 'FAILED', error = $1, finished_at = $2, updated_at = $2 WHERE job_id = $3",
                )
                .bind(e.to_string())
                .bind(desk.now())
                .bind(&job_id)
                .execute(&desk.engine.db.pool)
                .await;
            }
        });
        Ok(job)
    }

    async fn run_replay_job(
        &self,
        job: &str,
        actor: &str,
        provider: &str,
        from_at: i64,
        to_at: i64,
    ) -> Result<(), AppError> {
        let pool = &self.engine.db.pool;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM payment_callbacks WHERE provider = $1 AND processing_status = 'DEAD' \
               AND received_at >= $2 AND received_at < $3 ORDER BY received_at, id",
        )
        .bind(provider)
        .bind(from_at)
        .bind(to_at)
        .fetch_all(pool)
        .await
        .map_err(internal)?;
        let mut classes: BTreeMap<String, i64> = BTreeMap::new();
        let total = ids.len();
        for (n, id) in ids.iter().enumerate() {
            let class = match self.replay_one(actor, id, Some(job)).await {
                Ok(r) => r.class,
                Err(e) => format!("refused: {e}"),
            };
            *classes.entry(class).or_default() += 1;
            if (n + 1) % 10 == 0 || n + 1 == total {
                sqlx::query(
                    "UPDATE replay_jobs SET done = $1, classes_json = $2, updated_at = $3 WHERE job_id = $4",
                )
                .bind((n + 1) as i64)
                .bind(serde_json::to_string(&classes).unwrap_or_default())
                .bind(self.now())
                .bind(job)
                .execute(pool)
                .await
                .map_err(internal)?;
            }
        }
        let now = self.now();
        sqlx::query(
            "UPDATE replay_jobs SET status = 'DONE', total = $1, done = $1, classes_json = $2, finished_at = $3, updated_at = $3 \
             WHERE job_id = $4",
        )
        .bind(total as i64)
        .bind(serde_json::to_string(&classes).unwrap_or_default())
        .bind(now)
        .bind(job)
        .execute(pool)
        .await
        .map_err(internal)?;
        tracing::info!(job, total, ?classes, "bulk replay done");
        Ok(())
    }

    pub async fn replay_jobs_list(&self, id: Option<&str>) -> Result<Vec<ReplayJob>, AppError> {
        let now = self.now();
        let sql = format!(
            "SELECT job_id, provider, from_at, to_at, requested_by, status, total, done, classes_json, error, \
               started_at, updated_at, finished_at FROM replay_jobs {} ORDER BY started_at DESC LIMIT 20",
            if id.is_some() {
                "WHERE job_id = $1"
            } else {
                ""
            }
        );
        let mut q = sqlx::query(&sql);
        if let Some(id) = id {
            q = q.bind(id.to_owned());
        }
        q.try_map(move |r: AnyRow| {
            let classes: BTreeMap<String, i64> =
                serde_json::from_str(&r.try_get::<String, _>("classes_json")?).unwrap_or_default();
            let mut status: String = r.try_get("status")?;
            let updated: i64 = r.try_get("updated_at")?;
            let mut error: Option<String> = r.try_get("error")?;
            if status == "RUNNING" && updated < now - JOB_SILENT_US {
                status = "FAILED".into();
                error = Some("interrupted (the server stopped); start it again — callbacks already replayed are no longer DEAD".into());
            }
            Ok(ReplayJob {
                id: r.try_get("job_id")?,
                provider: r.try_get("provider")?,
                from_at: r.try_get("from_at")?,
                to_at: r.try_get("to_at")?,
                requested_by: r.try_get("requested_by")?,
                status,
                total: r.try_get("total")?,
                done: r.try_get("done")?,
                classes: classes.into_iter().collect(),
                error,
                started_at: r.try_get("started_at")?,
                finished_at: r.try_get("finished_at")?,
            })
        })
        .fetch_all(&self.engine.db.pool)
        .await
        .map_err(internal)
    }

    pub async fn payment_page(&self, f: &PaymentFilter) -> Result<PaymentPage, AppError> {
        let mut args = Vec::new();
        let mut parts = vec!["1 = 1".to_owned()];
        if let Some(q) = &f.q {
            args.push(Arg::S(q.clone()));
            let n = args.len();
            parts.push(format!(
                "(payment_no = ${n} OR order_no = ${n} OR provider_txn_id = ${n})"
            ));
        }
        if let Some(s) = &f.status {
            parts.push(equals("status", Arg::S(s.clone()), &mut args));
        }
        if let Some(p) = &f.provider {
            parts.push(equals("provider", Arg::S(p.clone()), &mut args));
        }
        if let Some(a) = &f.amount {
            let minor = parse_major(a).ok_or_else(|| invalid("an amount is like 66.60"))?;
            parts.push(equals("amount_minor", Arg::I(minor), &mut args));
        }
        if let Some(day) = &f.day {
            parts.push(self.on_day("created_at", day, &mut args)?);
        }
        if let Some(c) =
            newest_first_after(f.after.as_deref(), "created_at", "payment_no", &mut args)
        {
            parts.push(c);
        }
        let sql = format!(
            "SELECT {PAYMENT_COLUMNS}, {HOLD_REASON} FROM payments WHERE {} ORDER BY created_at DESC, payment_no DESC LIMIT {}",
            parts.join(" AND "),
            PAGE_SIZE + 1
        );
        let mut items: Vec<PaymentSummary> = bind_all(sqlx::query(&sql), &args)
            .try_map(|r: AnyRow| payment_summary(&r))
            .fetch_all(&self.engine.db.pool)
            .await
            .map_err(internal)?;
        let next = if items.len() as i64 > PAGE_SIZE {
            items.truncate(PAGE_SIZE as usize);
            items
                .last()
                .map(|p| format!("{}.{}", p.created_at, p.payment_no))
        } else {
            None
        };
        Ok(PaymentPage { items, next })
    }

    pub async fn payment_view(&self, no: &str) -> Result<PaymentView, AppError> {
        let pool = &self.engine.db.pool;
        let row = sqlx::query(&format!(
            "SELECT {PAYMENT_COLUMNS}, {HOLD_REASON}, refunded_minor, version FROM payments WHERE payment_no = $1"
        ))
        .bind(no)
        .fetch_optional(pool)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
        let summary = payment_summary(&row).map_err(internal)?;
        let currency: String = row.try_get("currency").map_err(internal)?;
        let line = |at: i64, what: String, detail: String, link: Option<String>| Line {
            at,
            what,
            detail,
            link,
        };
        let rows = |sql: &'static str| {
            let pool = pool.clone();
            let no = no.to_owned();
            async move { sqlx::query(sql).bind(no).fetch_all(&pool).await }
        };
        let history = rows("SELECT from_status, to_status, source, evidence_ref, trace_id, at FROM payment_status_history WHERE payment_no = $1 ORDER BY at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                let evidence: String = r.get("evidence_ref");
                let link = pool_link(&evidence);
                line(
                    r.get("at"),
                    format!("{} → {}", r.get::<String, _>("from_status"), r.get::<String, _>("to_status")),
                    format!("{} · {evidence} · trace {}", r.get::<String, _>("source"), r.get::<String, _>("trace_id")),
                    link,
                )
            })
            .collect();
        let callbacks = sqlx::query(&format!(
            "SELECT {CALLBACK_COLUMNS} FROM payment_callbacks WHERE payment_no = $1 ORDER BY received_at LIMIT 200"
        ))
        .bind(no)
        .try_map(|r: AnyRow| callback_summary(&r))
        .fetch_all(pool)
        .await
        .map_err(internal)?;
        let effects = rows("SELECT effect_type, created_at FROM payment_effects WHERE payment_no = $1 ORDER BY created_at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| line(r.get("created_at"), r.get("effect_type"), String::new(), None))
            .collect();
        let outbox = rows(
            "SELECT e.message_id, e.event_type, e.created_at, d.sink, d.status, d.attempts, d.last_error, d.published_at \
             FROM outbox_events e LEFT JOIN outbox_deliveries d ON d.message_id = e.message_id \
             WHERE e.aggregate_id = $1 ORDER BY e.created_at",
        )
        .await
        .map_err(internal)?
        .iter()
        .map(|r| {
            let sink: Option<String> = r.get("sink");
            let detail = match sink {
                Some(sink) => format!(
                    "{sink}: {} after {} attempt(s){}{}",
                    r.get::<Option<String>, _>("status").unwrap_or_default(),
                    r.get::<Option<i64>, _>("attempts").unwrap_or(0),
                    r.get::<Option<i64>, _>("published_at")
                        .map(|p| format!(", delivered {}", app::format::utc_minutes(p)))
                        .unwrap_or_default(),
                    r.get::<Option<String>, _>("last_error")
                        .map(|e| format!(", last error: {e}"))
                        .unwrap_or_default()
                ),
                None => "no sink configured".into(),
            };
            line(
                r.get("created_at"),
                format!("{} ({})", r.get::<String, _>("event_type"), r.get::<String, _>("message_id")),
                detail,
                None,
            )
        })
        .collect();
        let refunds = rows("SELECT refund_no, amount_minor, currency, status, provider_refund_id, last_error, created_at FROM refunds WHERE payment_no = $1 ORDER BY created_at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                line(
                    r.get("created_at"),
                    format!("{} {}", r.get::<String, _>("refund_no"), r.get::<String, _>("status")),
                    format!(
                        "{}{}{}",
                        money_text(Some(r.get("amount_minor")), Some(&r.get::<String, _>("currency"))).unwrap_or_default(),
                        r.get::<Option<String>, _>("provider_refund_id").map(|p| format!(" · provider {p}")).unwrap_or_default(),
                        r.get::<Option<String>, _>("last_error").map(|e| format!(" · {e}")).unwrap_or_default()
                    ),
                    None,
                )
            })
            .collect();
        let ledger = rows("SELECT refund_no, amount_minor, currency, source, evidence_ref, created_at FROM refund_ledger WHERE payment_no = $1 ORDER BY created_at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                line(
                    r.get("created_at"),
                    r.get("refund_no"),
                    format!(
                        "{} · {} · {}",
                        money_text(Some(r.get("amount_minor")), Some(&r.get::<String, _>("currency"))).unwrap_or_default(),
                        r.get::<String, _>("source"),
                        r.get::<String, _>("evidence_ref")
                    ),
                    None,
                )
            })
            .collect();
        let queries = rows("SELECT kind, status, attempts, last_error, next_run_at, updated_at FROM provider_tasks WHERE payment_no = $1 ORDER BY created_at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                line(
                    r.get("updated_at"),
                    format!("{} {}", r.get::<String, _>("kind"), r.get::<String, _>("status")),
                    format!(
                        "{} attempt(s){}",
                        r.get::<i64, _>("attempts"),
                        r.get::<Option<String>, _>("last_error").map(|e| format!(", last error: {e}")).unwrap_or_default()
                    ),
                    None,
                )
            })
            .collect();
        let discrepancies = rows("SELECT discrepancy_id, class, severity, status, found_at FROM discrepancies WHERE payment_no = $1 ORDER BY found_at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                let id: String = r.get("discrepancy_id");
                line(
                    r.get("found_at"),
                    format!("{} ({})", r.get::<String, _>("class"), r.get::<String, _>("severity")),
                    r.get("status"),
                    Some(format!("/tickets/{id}")),
                )
            })
            .collect();
        let adjustments = rows("SELECT before_minor, after_minor, difference_minor, currency, proposal_id, at FROM payment_adjustments WHERE payment_no = $1 ORDER BY at")
            .await
            .map_err(internal)?
            .iter()
            .map(|r| {
                let cur: String = r.get("currency");
                line(
                    r.get("at"),
                    format!(
                        "{} → {}",
                        money_text(Some(r.get("before_minor")), Some(&cur)).unwrap_or_default(),
                        money_text(Some(r.get("after_minor")), Some(&cur)).unwrap_or_default()
                    ),
                    format!("proposal {}", r.get::<String, _>("proposal_id")),
                    None,
                )
            })
            .collect();
        Ok(PaymentView {
            hold_reason: row.try_get("hold_reason").map_err(internal)?,
            refunded: money_text(
                Some(row.try_get("refunded_minor").map_err(internal)?),
                Some(&currency),
            )
            .unwrap_or_default(),
            version: row.try_get("version").map_err(internal)?,
            summary,
            history,
            callbacks,
            effects,
            outbox,
            refunds,
            ledger,
            queries,
            discrepancies,
            adjustments,
        })
    }

    pub async fn run_page(&self, after: Option<&str>) -> Result<RunPage, AppError> {
        let mut args = Vec::new();
        let cond = newest_first_after(after, "started_at", "run_id", &mut args)
            .unwrap_or_else(|| "1 = 1".into());
        let sql = format!(
            "SELECT run_id, provider, business_date, source, file_name, status, phase, cursor, rows_read, figures_json, \
               error, started_by, started_at, finished_at FROM recon_runs WHERE {cond} \
             ORDER BY started_at DESC, run_id DESC LIMIT {}",
            PAGE_SIZE + 1
        );
        let mut items: Vec<RunSummary> = bind_all(sqlx::query(&sql), &args)
            .try_map(|r: AnyRow| {
                let figures: Option<String> = r.try_get("figures_json")?;
                let classes: Vec<(String, i64)> = figures
                    .as_deref()
                    .and_then(|f| serde_json::from_str::<serde_json::Value>(f).ok())
                    .and_then(|v| {
                        v["classes"].as_object().map(|o| {
                            o.iter()
                                .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                Ok(RunSummary {
                    id: r.try_get("run_id")?,
                    provider: r.try_get("provider")?,
                    business_date: r.try_get("business_date")?,
                    source: r.try_get("source")?,
                    file_name: r.try_get("file_name")?,
                    status: r.try_get("status")?,
                    phase: r.try_get("phase")?,
                    cursor: r.try_get("cursor")?,
                    rows_read: r.try_get("rows_read")?,
                    classes,
                    error: r.try_get("error")?,
                    started_by: r.try_get("started_by")?,
                    started_at: r.try_get("started_at")?,
                    finished_at: r.try_get("finished_at")?,
                })
            })
            .fetch_all(&self.engine.db.pool)
            .await
            .map_err(internal)?;
        let next = if items.len() as i64 > PAGE_SIZE {
            items.truncate(PAGE_SIZE as usize);
            items.last().map(|r| format!("{}.{}", r.started_at, r.id))
        } else {
            None
        };
        let providers = self
            .providers()
            .into_iter()
            .filter(|p| {
                self.engine
                    .providers
                    .get(p)
                    .is_some_and(|p| p.statement_format().is_some())
            })
            .collect();
        Ok(RunPage {
            items,
            next,
            providers,
        })
    }

    pub async fn resume(&self, actor: &User, id: &str) -> Result<(), AppError> {
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM recon_runs WHERE run_id = $1")
                .bind(id)
                .fetch_optional(&self.engine.db.pool)
                .await
                .map_err(internal)?;
        match status.as_deref() {
            None => return Err(AppError::NotFound),
            Some("COMPLETED") => return Err(invalid("the run is complete")),
            Some(_) => {}
        }
        self.audit_one(
            &actor.username,
            "recon.resume",
            "run",
            id,
            json!({ "status": status }),
        )
        .await?;
        let engine = self.engine.clone();
        let run = id.to_owned();
        let who = actor.username.clone();
        // A pull can take a while: it goes on in the background, the runs
        // page shows its progress.
        tokio::spawn(async move {
            if let Err(e) = engine.resume_run(&run).await {
                tracing::warn!(run_id = %run, by = %who, error = %e, "resume failed");
            }
        });
        Ok(())
    }
}

/// `column = $n` with `value` bound.
fn equals(column: &str, value: Arg, args: &mut Vec<Arg>) -> String {
    args.push(value);
    format!("{column} = ${}", args.len())
}

/// The keyset condition of a newest-first list after the cursor
/// `time.key` (the last row of the page before); `None` without a valid one.
fn newest_first_after(
    cursor: Option<&str>,
    time: &str,
    key: &str,
    args: &mut Vec<Arg>,
) -> Option<String> {
    let (at, id) = cursor?.split_once('.')?;
    let at: i64 = at.parse().ok()?;
    args.push(Arg::I(at));
    let a = args.len();
    args.push(Arg::S(id.to_owned()));
    let i = args.len();
    Some(format!(
        "({time} < ${a} OR ({time} = ${a} AND {key} < ${i}))"
    ))
}

/// A link for a history row's evidence: a stored callback, or a proposal.
fn pool_link(evidence: &str) -> Option<String> {
    if evidence.len() == 36 && evidence.chars().filter(|c| *c == '-').count() == 4 {
        Some(format!("/callbacks/{evidence}"))
    } else {
        None
    }
}

/// An amount typed in major units (`66.6`, `66.60`, `66`) as minor units
/// of a two-decimal currency.
fn parse_major(text: &str) -> Option<i64> {
    let t = text.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() || frac.len() > 2 || !whole.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac = format!("{frac:0<2}");
    whole
        .parse::<i64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(frac.parse::<i64>().ok()?)
}

const CALLBACK_COLUMNS: &str = "id, callback_id, provider, payment_no, provider_txn_id, callback_status, verify_result, \
     processing_status, outcome, retry_count, duplicates, trace_id, received_at";

fn callback_summary(r: &AnyRow) -> sqlx::Result<CallbackSummary> {
    Ok(CallbackSummary {
        id: r.try_get("id")?,
        callback_id: r.try_get("callback_id")?,
        provider: r.try_get("provider")?,
        payment_no: r.try_get("payment_no")?,
        provider_txn_id: r.try_get("provider_txn_id")?,
        callback_status: r.try_get("callback_status")?,
        verify_result: r.try_get("verify_result")?,
        processing_status: r.try_get("processing_status")?,
        outcome: r.try_get("outcome")?,
        retry_count: r.try_get("retry_count")?,
        duplicates: r.try_get("duplicates")?,
        trace_id: r.try_get("trace_id")?,
        received_at: r.try_get("received_at")?,
    })
}

const PAYMENT_COLUMNS: &str = "payment_no, order_no, provider, provider_txn_id, amount_minor, currency, status, \
     created_at, paid_at";

fn payment_summary(r: &AnyRow) -> sqlx::Result<PaymentSummary> {
    let currency: String = r.try_get("currency")?;
    Ok(PaymentSummary {
        payment_no: r.try_get("payment_no")?,
        order_no: r.try_get("order_no")?,
        provider: r.try_get("provider")?,
        provider_txn_id: r.try_get("provider_txn_id")?,
        amount: money_text(Some(r.try_get("amount_minor")?), Some(&currency)).unwrap_or_default(),
        status: r.try_get("status")?,
        held: r.try_get::<Option<String>, _>("hold_reason")?.is_some(),
        created_at: r.try_get("created_at")?,
        paid_at: r.try_get("paid_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_typed_in_major_units() {
        assert_eq!(parse_major("66.60"), Some(6660));
        assert_eq!(parse_major("66.6"), Some(6660));
        assert_eq!(parse_major("66"), Some(6600));
        assert_eq!(parse_major("0.05"), Some(5));
        assert_eq!(parse_major("6.666"), None);
        assert_eq!(parse_major("-1"), None);
        assert_eq!(parse_major("1e3"), None);
        assert_eq!(parse_major("99999999999999999999"), None);
        assert_eq!(parse_major("92233720368547758.08"), None);
    }

    #[test]
    fn history_evidence_links_to_its_callback() {
        assert_eq!(
            pool_link("01a22b26-dd5c-766d-923f-67f0359d4383").as_deref(),
            Some("/callbacks/01a22b26-dd5c-766d-923f-67f0359d4383")
        );
        assert_eq!(pool_link("proposal 01a22b26-dd5c"), None);
    }
}
