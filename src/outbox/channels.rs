//! One delivery attempt of a channel's message, as the relay makes it for
//! a delivery whose sink is a channel: the stored [`Notification`] sent
//! signed to a webhook, rendered for Slack, or mailed over SMTP. The
//! outcome is an [`Attempt`]; the relay's schedule retries a failure.

use super::Attempt;
use crate::alerting::{Channel, Notification, Smtp, SmtpSecurity, Target};
use crate::store::outbox::EventRow;
use secrecy::ExposeSecret;
use std::time::{Duration, Instant};

/// Bytes of a receiver's answer kept with the attempt.
const ANSWER_HEAD: usize = 256;

/// An SMTP conversation's limit per step, as lettre counts it: the relay's
/// HTTP timeout, so one slow server holds a batch no longer than a sink.
pub(super) const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `event` (a channel message) to `channel`, at `now_secs` for the
/// webhook signature's timestamp.
pub async fn deliver(
    http: &reqwest::Client,
    channel: &Channel,
    event: &EventRow,
    now_secs: i64,
) -> Attempt {
    let started = Instant::now();
    let mut attempt = match serde_json::from_str::<Notification>(&event.payload) {
        Err(e) => failed(None, String::new(), format!("not an alert message: {e}")),
        Ok(note) => match &channel.target {
            Target::Webhook { url, secret } => {
                let body = event.payload.clone().into_bytes();
                let request = http
                    .post(url)
                    .header("content-type", "application/json")
                    .header("webhook-id", &event.message_id)
                    .header("webhook-timestamp", now_secs.to_string())
                    .header(
                        "webhook-signature",
                        secret.sign(&event.message_id, now_secs, &body),
                    )
                    .body(body);
                post(request).await
            }
            Target::Slack { url } => {
                let request = http
                    .post(url.expose_secret())
                    .json(&note.slack(&event.message_id));
                post(request).await
            }
            Target::Email(smtp) => mail(smtp, &note, &event.message_id).await,
        },
    };
    attempt.latency_us = started.elapsed().as_micros() as i64;
    attempt
}

fn failed(status_code: Option<u16>, answer_head: String, error: String) -> Attempt {
    Attempt {
        status_code,
        latency_us: 0,
        answer_head,
        error: Some(error),
    }
}

fn head(text: &str) -> String {
    text.chars().take(ANSWER_HEAD).collect()
}

/// A POST whose 2xx answer means delivered.
async fn post(request: reqwest::RequestBuilder) -> Attempt {
    let response = match request.send().await {
        Ok(r) => r,
        // Without the URL: a Slack URL is a secret.
        Err(e) => return failed(None, String::new(), e.without_url().to_string()),
    };
    let status = response.status();
    let answer = head(&response.text().await.unwrap_or_default());
    if status.is_success() {
        Attempt {
            status_code: Some(status.as_u16()),
            latency_us: 0,
            answer_head: answer,
            error: None,
        }
    } else {
        failed(
            Some(status.as_u16()),
            answer,
            format!("channel answered {status}"),
        )
    }
}

/// The message mailed to each recipient, its `Message-ID` the outbox
/// message's, so a retried e-mail is recognisably the same one.
async fn mail(smtp: &Smtp, note: &Notification, message_id: &str) -> Attempt {
    use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
    let (subject, body) = note.email(message_id);
    let mut builder = lettre::Message::builder()
        .from(smtp.from.clone())
        .subject(subject)
        .message_id(Some(format!("<{message_id}@reckon.alerts>")))
        .header(lettre::message::header::ContentType::TEXT_PLAIN);
    for to in &smtp.to {
        builder = builder.to(to.clone());
    }
    let email = match builder.body(body) {
        Ok(m) => m,
        Err(e) => return failed(None, String::new(), format!("e-mail not built: {e}")),
    };
    let transport = match smtp.security {
        SmtpSecurity::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host),
        SmtpSecurity::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host),
        SmtpSecurity::Plain => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(
            &smtp.host,
        )),
    };
    let mut transport = match transport {
        Ok(t) => t.port(smtp.port).timeout(Some(SMTP_TIMEOUT)),
        Err(e) => return failed(None, String::new(), format!("SMTP {}: {e}", smtp.host)),
    };
    if let Some((user, password)) = &smtp.credentials {
        transport =
            transport.credentials(lettre::transport::smtp::authentication::Credentials::new(
                user.clone(),
                password.expose_secret().to_owned(),
            ));
    }
    match transport.build().send(email).await {
        Ok(reply) => Attempt {
            status_code: None,
            latency_us: 0,
            answer_head: head(&format!(
                "{} {}",
                reply.code(),
                reply.message().collect::<Vec<_>>().join(" ")
            )),
            error: None,
        },
        Err(e) => failed(
            None,
            e.status().map(|c| c.to_string()).unwrap_or_default(),
            format!("SMTP {}:{}: {e}", smtp.host, smtp.port),
        ),
    }
}
