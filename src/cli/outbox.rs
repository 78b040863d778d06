//! `reckon outbox …`: resend, recover and retry now, each job run here to
//! its end.

use crate::config::Config;
use app::error::AppError;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub(super) enum OutboxCommand {
    /// Queue messages again, due now: one (`--message`, to `--sink` or all
    /// its sinks), or every delivery a filter matches that is not pending
    /// (`--status DEAD --sink S …`). Prints what was queued as JSON.
    Resend {
        #[arg(long)]
        message: Option<String>,
        #[arg(long)]
        sink: Option<String>,
        /// DELIVERED | DEAD (with no --message).
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        event_type: Option<String>,
        /// The payment the messages announce.
        #[arg(long)]
        payment: Option<String>,
        /// Created from / to: RFC 3339 or YYYY-MM-DD.
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
        /// Who resends (recorded in the audit log).
        #[arg(long, default_value = "cli")]
        actor: String,
    },
    /// After a sink's outage: every delivery to it that went DEAD since
    /// `--since` (RFC 3339 or YYYY-MM-DD) queued again.
    Recover {
        #[arg(long)]
        sink: String,
        #[arg(long)]
        since: String,
        #[arg(long, default_value = "cli")]
        actor: String,
    },
    /// After a sink's outage: its pending deliveries that wait for a later
    /// retry made due now (audited with the reason). Prints how many.
    RetryNow {
        #[arg(long)]
        sink: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: String,
        #[arg(long, default_value = "cli")]
        actor: String,
    },
}

/// `reckon outbox …`: the jobs run here, to their end.
pub(super) async fn outbox(config: &Config, cmd: OutboxCommand) -> anyhow::Result<ExitCode> {
    use crate::outbox::jobs::{self as outbox, Run};
    let engine = crate::startup::engine_of(config).await?;
    let done = match cmd {
        OutboxCommand::Resend {
            message: Some(id),
            sink,
            actor,
            ..
        } => outbox::resend(&engine, &actor, &id, sink.as_deref())
            .await
            .map(|r| serde_json::to_value(r).unwrap_or_default()),
        OutboxCommand::Resend {
            message: None,
            sink,
            status,
            event_type,
            payment,
            from,
            to,
            actor,
        } => {
            let filter = app::outbox::OutboxFilter {
                event_type,
                sink,
                status,
                payment,
                from,
                to,
                after: None,
            };
            if filter == app::outbox::OutboxFilter::default() {
                eprintln!("reckon: error: name --message, or a filter (--status, --sink, …)");
                return Ok(ExitCode::from(2));
            }
            outbox::start_resend(&engine, &actor, None, &filter, Run::ToTheEnd)
                .await
                .map(|j| serde_json::to_value(j).unwrap_or_default())
        }
        OutboxCommand::Recover { sink, since, actor } => {
            outbox::start_recover(&engine, &actor, &sink, &since, Run::ToTheEnd)
                .await
                .map(|j| serde_json::to_value(j).unwrap_or_default())
        }
        OutboxCommand::RetryNow {
            sink,
            reason,
            actor,
        } => crate::outbox::sinks::retry_now(&engine, &actor, &sink, &reason)
            .await
            .map(|r| {
                serde_json::json!({ "sink": r.sink, "made_due": r.made_due, "detail": r.detail() })
            })
            .map_err(|e| match e {
                AppError::NotFound => AppError::Invalid {
                    detail: format!("no sink {sink} is configured"),
                },
                e => e,
            }),
    };
    match done {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ AppError::Internal { .. }) => Err(anyhow::anyhow!("{e}")),
        Err(e) => {
            eprintln!("reckon: error: {}", refusal(&e));
            Ok(ExitCode::from(2))
        }
    }
}

/// A refusal's own words.
fn refusal(e: &AppError) -> String {
    match e {
        AppError::Invalid { detail } | AppError::Refused { detail } => detail.clone(),
        AppError::NotFound => "no such message".into(),
        other => other.to_string(),
    }
}
