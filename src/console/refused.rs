//! Refused webhooks as the console shows them: the list with
//! its filters and counts per reason per hour over the last 24 hours, one
//! with its headers masked (signatures and secrets shortened), and the
//! dashboard's count.

use super::{Desk, mask, page};
use crate::accounts::internal;
use crate::store::lists::After;
use crate::store::refused as store;
use app::console::RawView;
use app::error::AppError;
use app::refused::{HourCount, RefusedDetail, RefusedFilter, RefusedPage, RefusedSummary};
use app::tickets::PAGE_SIZE;
use app::types::User;
use std::collections::BTreeMap;

const DAY_US: i64 = 86_400_000_000;

impl Desk {
    pub async fn refused_page(&self, f: &RefusedFilter) -> Result<RefusedPage, AppError> {
        use app::filter::QueryFilter;
        // PostgreSQL's text cannot hold a NUL: such a filter names nothing
        // and is refused rather than failing the query.
        if RefusedFilter::KEYS
            .iter()
            .any(|k| f.get(k).is_some_and(|v| v.contains('\0')))
        {
            return Err(super::invalid("a filter may not contain NUL"));
        }
        let from = f.from.as_deref().map(|d| self.range(d)).transpose()?;
        let to = f.to.as_deref().map(|d| self.range(d)).transpose()?;
        let received = match (from, to) {
            (None, None) => None,
            (from, to) => Some((from.map_or(i64::MIN, |r| r.0), to.map_or(i64::MAX, |r| r.1))),
        };
        let query = store::Query {
            provider: f.provider.as_deref(),
            kind: f.kind.as_deref(),
            diagnosis: f.diagnosis.as_deref(),
            received,
            after: After::parse(f.after.as_deref()),
        };
        let db = &self.engine.db;
        let rows = store::list(db, &query, PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let (items, next) = page(rows, |r: &RefusedSummary| {
            format!("{}.{}", r.received_at, r.id)
        });
        // Per hour and reason: the diagnosis where there is one, else the kind.
        let mut hours: BTreeMap<(i64, String), i64> = BTreeMap::new();
        for (hour, kind, diagnosis, n) in store::hourly(&db.pool, self.now() - DAY_US)
            .await
            .map_err(internal)?
        {
            *hours.entry((hour, diagnosis.unwrap_or(kind))).or_default() += n;
        }
        let mut hourly: Vec<HourCount> = hours
            .into_iter()
            .map(|((hour, reason), count)| HourCount {
                hour,
                reason,
                count,
            })
            .collect();
        hourly.sort_by(|a, b| b.hour.cmp(&a.hour).then_with(|| a.reason.cmp(&b.reason)));
        Ok(RefusedPage {
            items,
            next,
            hourly,
        })
    }

    pub async fn refused_detail(&self, id: &str) -> Result<RefusedDetail, AppError> {
        if id.contains('\0') {
            return Err(AppError::NotFound);
        }
        let d = store::detail(&self.engine.db.pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        Ok(RefusedDetail {
            headers: mask::headers(&d.headers_json),
            body: mask::payload(&d.body_excerpt),
            body_hash: d.body_hash,
            summary: d.listed,
        })
    }

    /// Refused webhooks kept in the 24 hours before now (the dashboard's).
    pub(super) async fn refused_last_day(&self) -> Result<i64, AppError> {
        store::count_since(&self.engine.db.pool, self.now() - DAY_US)
            .await
            .map_err(internal)
    }
}

/// The refused page reads what the API reads.
#[async_trait::async_trait]
impl app::ssr::Refused for Desk {
    async fn refused(&self, filter: &RefusedFilter) -> Result<RefusedPage, AppError> {
        self.refused_page(filter).await
    }

    async fn refused_one(&self, id: &str) -> Result<RefusedDetail, AppError> {
        self.refused_detail(id).await
    }

    async fn refused_raw(&self, actor: &User, id: &str) -> Result<RawView, AppError> {
        if !actor.view_raw {
            return Err(AppError::Forbidden);
        }
        if id.contains('\0') {
            return Err(AppError::NotFound);
        }
        let d = store::detail(&self.engine.db.pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        // Written before anything is shown: a look that cannot be recorded
        // is not given.
        super::audit_one(
            &self.engine,
            &actor.username,
            "refused.view_raw",
            ("refused_webhook", id),
            serde_json::json!({ "body_hash": d.body_hash }),
        )
        .await?;
        Ok(RawView {
            headers: mask::raw_headers(&d.headers_json),
            body: mask::raw_payload(&d.body_excerpt),
        })
    }
}
