//! The Settings page: the money-deciding settings' versions as read, and
//! the console's changes of them handed to `config_versions`, which checks,
//! records and audits them.

use super::Desk;
use crate::accounts::{decision_refusal, internal};
use crate::config::evidence::Edits;
use crate::config_versions::{self, VersionError};
use crate::store::approvals::{self, Subject};
use crate::store::config_versions as versions;
use app::error::AppError;
use app::settings::{EditableSettings, SettingChange, SettingsVersion, SettingsView};
use app::types::User;

/// Versions and proposals the page lists.
const HISTORY: i64 = 50;

fn app_error(e: VersionError) -> AppError {
    match e {
        VersionError::Invalid(detail) => AppError::Invalid { detail },
        VersionError::Busy(detail) => AppError::Refused { detail },
        VersionError::Store(e) => internal(e),
    }
}

fn editable(e: Edits) -> EditableSettings {
    EditableSettings {
        sla_hours: e.sla_hours,
        cut_window_minutes: e.cut_window_minutes,
        bank_window_days: e.bank_window_days,
        statement_missing_hours: e.statement_missing_hours,
        close_allow_open: e.close_allow_open,
        match_keys: Some(e.match_keys),
        match_window_hours: Some(e.match_window_hours),
        amount_tolerance: Some(e.amount_tolerance),
    }
}

#[async_trait::async_trait]
impl app::ssr::SettingsVersions for Desk {
    async fn settings_view(&self) -> Result<SettingsView, AppError> {
        let ctx = self.engine.context();
        let rows = versions::history(&ctx.db.pool, HISTORY)
            .await
            .map_err(internal)?;
        let mut history = Vec::with_capacity(rows.len());
        for v in rows {
            let approved_by = approvals::names(&ctx.db.pool, Subject::Settings, &v.id)
                .await
                .map_err(internal)?;
            let changes = config_versions::changes_of(ctx, &v)
                .await
                .map_err(app_error)?
                .into_iter()
                .map(|c| SettingChange {
                    setting: c.path,
                    before: c.before,
                    after: c.after,
                })
                .collect();
            history.push(SettingsVersion {
                id: v.id,
                version: v.version,
                status: v.status,
                source: v.source,
                digest: v.digest,
                reason: v.reason,
                proposed_by: v.proposed_by,
                proposed_by_id: v.proposed_by_id,
                decided_by: v.approved_by,
                approved_by,
                required: v.required_approvals,
                created_at: v.created_at,
                decided_at: v.decided_at,
                changes,
                preview: v
                    .preview_json
                    .as_deref()
                    .and_then(|p| serde_json::from_str(p).ok())
                    .unwrap_or_default(),
            });
        }
        let pending = history.iter().find(|v| v.status == "PENDING").cloned();
        let mut conn = ctx.db.pool.acquire().await.map_err(internal)?;
        let (_, policy) = crate::policy::changes::in_force(&mut conn)
            .await
            .map_err(internal)?;
        let approvals_needed = policy.required(crate::policy::SETTINGS_CHANGE, None);
        let document =
            serde_json::to_string_pretty(&crate::config::evidence::document(&ctx.settings()))
                .unwrap_or_default();
        Ok(SettingsView {
            in_force: ctx.config_version(),
            document,
            editable: editable(config_versions::edits_in_force(ctx)),
            pending,
            history,
            approvals_needed,
        })
    }

    async fn propose_settings(
        &self,
        actor: &User,
        edits: &EditableSettings,
        reason: &str,
    ) -> Result<(), AppError> {
        // A rule left out (an older form) stays as in force.
        let now = config_versions::edits_in_force(self.engine.context());
        let edits = Edits {
            sla_hours: edits.sla_hours.clone(),
            cut_window_minutes: edits.cut_window_minutes.clone(),
            bank_window_days: edits.bank_window_days.clone(),
            statement_missing_hours: edits.statement_missing_hours.clone(),
            close_allow_open: edits.close_allow_open.clone(),
            match_keys: edits.match_keys.clone().unwrap_or(now.match_keys),
            match_window_hours: edits
                .match_window_hours
                .clone()
                .unwrap_or(now.match_window_hours),
            amount_tolerance: edits
                .amount_tolerance
                .clone()
                .unwrap_or(now.amount_tolerance),
        };
        config_versions::propose(&self.engine, &edits, reason, &actor.id, &actor.username)
            .await
            .map(|_| ())
            .map_err(app_error)
    }

    async fn decide_settings(&self, actor: &User, id: &str, approve: bool) -> Result<(), AppError> {
        let ctx = self.engine.context();
        // The reason a decider may not approve, told plainly; the
        // approving statement refuses it anyway.
        if approve
            && let Some(p) = versions::pending(&ctx.db.pool)
                .await
                .map_err(internal)?
                .filter(|p| p.id == id)
            && let Some(proposer) = p.proposed_by_id.as_deref()
            && let Some(refusal) = decision_refusal(&ctx.db.pool, &actor.id, proposer).await?
        {
            return Err(refusal);
        }
        config_versions::decide(ctx, id, approve, &actor.id, &actor.username)
            .await
            .map(|_| ())
            .map_err(app_error)
    }
}
