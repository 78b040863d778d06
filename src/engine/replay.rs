//! A person's low-risk actions on one payment: replay a stored callback
//! whose signature verified, or ask the provider again. Both end in
//! `apply`, like every other outcome; neither can change what a provider
//! did not say.

use super::apply::{Applied, Source};
use super::intake::{notice_outcome, view_outcome};
use super::refunds::RefundOutcome;
use super::{Engine, headers_from_json};
use crate::domain::{PaymentNo, ProviderTxnId};
use crate::providers::Notification;
use crate::store;
use crate::store::{callbacks, payments};

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no such callback or payment")]
    NotFound,
    #[error("only a callback whose signature verified may be replayed (this one: {0})")]
    NotVerified(String),
    #[error("provider {0} is not configured")]
    NoProvider(String),
    #[error("provider {0} cannot be asked about a payment")]
    NotQueryable(String),
    #[error("the stored callback cannot be read: {0}")]
    Unreadable(String),
    #[error("the provider could not be asked: {0}")]
    Provider(String),
    #[error(transparent)]
    Db(#[from] store::Error),
}

/// What a replay or a query did, in words a person reads.
#[derive(Clone, Debug)]
pub struct ActionOutcome {
    /// `Applied::class`, or refund / ignored / failed.
    pub class: &'static str,
    pub detail: String,
    pub payment_no: Option<String>,
    /// The error the replay met, when it failed.
    pub error: Option<String>,
}

pub fn describe(applied: &Applied) -> String {
    match applied {
        Applied::Moved { from, to } => format!("moved {from} → {to}"),
        Applied::Duplicate { status } => format!("duplicate: already {status}, nothing changed"),
        Applied::OutOfOrder { current, target } => {
            format!("out of order: {current} cannot go to {target}; state kept")
        }
        Applied::Conflict { reason } => format!("conflict: {reason}; nothing overwritten"),
        Applied::PaidAfterClose { current } => format!(
            "paid after {current}: money taken without an order; state kept, PAID_AFTER_CLOSE ticket opened"
        ),
        Applied::UnknownPayment => "unknown payment".into(),
        Applied::Held { reason } => format!("held: {reason}"),
    }
}

impl Engine {
    /// Runs a stored callback through `apply` again (source = replay) and
    /// records how it went on the callback row, as its first processing
    /// did — after keeping that first processing as the callback's
    /// original. A callback that failed verification never runs.
    /// Each replay's own result (or the error that refused it) is kept
    /// beside that original, by whom and for which job.
    pub async fn replay_callback(
        &self,
        id: &str,
        actor: &str,
        job: Option<&str>,
    ) -> Result<ActionOutcome, ActionError> {
        let result = self.replay_stored(id).await;
        let (class, detail, error) = match &result {
            Ok(out) => (out.class, out.detail.clone(), out.error.clone()),
            Err(ActionError::NotFound) => return result,
            Err(e) => ("refused", String::new(), Some(e.to_string())),
        };
        let replay = callbacks::Replay {
            at: self.now(),
            actor: actor.to_owned(),
            class: class.to_owned(),
            detail,
            error,
            job: job.map(str::to_owned),
        };
        callbacks::record_replay(&self.db.pool, id, &replay).await?;
        result
    }

    async fn replay_stored(&self, id: &str) -> Result<ActionOutcome, ActionError> {
        let row = callbacks::stored(&self.db.pool, id).await?;
        let Some((provider_name, payment_no, verify, headers_json, payload, trace_id)) = row else {
            return Err(ActionError::NotFound);
        };
        if verify != "VERIFIED" {
            self.metrics.replayed("refused");
            return Err(ActionError::NotVerified(verify));
        }
        let provider = self
            .providers
            .get(&provider_name)
            .cloned()
            .ok_or_else(|| ActionError::NoProvider(provider_name.clone()))?;
        callbacks::keep_original(&self.db.pool, id).await?;
        let headers = headers_from_json(&headers_json);
        let out = match provider.parse(&headers, &payload) {
            Ok(Notification::Payment(n)) => {
                let mut o = notice_outcome(&n, provider.name(), id, &trace_id);
                o.source = Source::Replay;
                match self.process(id, &o).await {
                    Some(applied) => ActionOutcome {
                        class: applied.class(),
                        detail: describe(&applied),
                        payment_no: Some(o.payment_no.to_string()),
                        error: None,
                    },
                    None => ActionOutcome {
                        class: "failed",
                        detail: "apply failed; the callback is scheduled for retry".into(),
                        payment_no: Some(o.payment_no.to_string()),
                        error: callbacks::error_of(&self.db.pool, id).await?,
                    },
                }
            }
            Ok(Notification::Refund(n)) => {
                let mut o = RefundOutcome::of_notice(&n, provider.name(), id, &trace_id);
                o.source = Source::Replay;
                self.process_refund(id, &o).await;
                let outcome = callbacks::outcome_of(&self.db.pool, id).await?;
                ActionOutcome {
                    class: "refund",
                    detail: format!(
                        "refund notification processed: {}",
                        outcome.unwrap_or_else(|| "-".into())
                    ),
                    payment_no,
                    error: None,
                }
            }
            Ok(Notification::Dispute(n)) => {
                // Applied again, a dispute event is told from its own
                // earlier application: it moves nothing a second time.
                self.process_dispute(id, &provider_name, &n, &trace_id)
                    .await;
                let outcome = callbacks::outcome_of(&self.db.pool, id).await?;
                ActionOutcome {
                    class: "dispute",
                    detail: format!(
                        "dispute notification processed: {}",
                        outcome.unwrap_or_else(|| "-".into())
                    ),
                    payment_no,
                    error: None,
                }
            }
            Ok(Notification::Ignored { .. }) => ActionOutcome {
                class: "ignored",
                detail: "not a payment or refund event: nothing to apply".into(),
                payment_no,
                error: None,
            },
            Err(e) => return Err(ActionError::Unreadable(e)),
        };
        self.metrics.replayed(out.class);
        Ok(out)
    }

    /// Asks the payment's provider now and applies its answer (source =
    /// query). An answer without a result counts as PENDING.
    pub async fn requery_payment(&self, payment_no: &str) -> Result<ActionOutcome, ActionError> {
        let Some(p) = payments::get(&self.db.pool, payment_no).await? else {
            return Err(ActionError::NotFound);
        };
        let provider = self
            .providers
            .get(&p.provider)
            .cloned()
            .ok_or_else(|| ActionError::NoProvider(p.provider.clone()))?;
        let Some(queries) = provider.queries() else {
            return Err(ActionError::NotQueryable(p.provider.clone()));
        };
        let no = PaymentNo::parse(&p.payment_no).map_err(|_| ActionError::NotFound)?;
        let txn = p
            .provider_txn_id
            .as_deref()
            .and_then(|t| ProviderTxnId::parse(t).ok());
        let view = queries
            .query_payment(&no, txn.as_ref())
            .await
            .map_err(|e| ActionError::Provider(e.to_string()))?;
        let outcome = view_outcome(view, no, provider.name(), Source::Query, "console re-query");
        let applied = self.apply(&outcome).await?;
        Ok(ActionOutcome {
            class: applied.class(),
            detail: format!(
                "the provider says {}: {}",
                outcome.target,
                describe(&applied)
            ),
            payment_no: Some(p.payment_no),
            error: None,
        })
    }
}
