//! A channel's message: the [`Notification`] stored as the outbox payload
//! (and sent as is to a webhook channel), and its renderings for Slack
//! (`text` plus Block Kit `blocks`) and for e-mail (subject and plain
//! text). Pure, so each rendering is tested without a receiver.

use crate::domain::AlertSeverity;
use crate::store::alert_dispatch::RoutedAlert;
use serde::{Deserialize, Serialize};

/// Alerts listed in one message; a digest gives the count of the rest.
pub const LISTED: usize = 5;

/// The outbox `event_type` of a channel's message.
pub const EVENT_TYPE: &str = "alert.notification";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Notification {
    /// Always `alert.notification`.
    #[serde(rename = "type")]
    pub kind_of_event: String,
    pub channel: String,
    /// The alert kind every alert of the message shares.
    pub kind: String,
    /// The highest severity among them.
    pub severity: String,
    /// How many alerts the message stands for.
    pub count: usize,
    /// False: one alert sent as it was raised; true: alerts gathered in a
    /// window or held through quiet hours.
    pub digest: bool,
    pub first_raised_at: String,
    pub last_raised_at: String,
    /// The first [`LISTED`] alerts, oldest first.
    pub alerts: Vec<AlertLine>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AlertLine {
    pub alert_id: String,
    pub severity: String,
    pub message: String,
    pub payment_no: Option<String>,
    pub raised_at: String,
}

fn rfc3339(micros: i64) -> String {
    jiff::Timestamp::from_microsecond(micros)
        .map(|t| t.round(jiff::Unit::Second).unwrap_or(t).to_string())
        .unwrap_or_default()
}

impl Notification {
    /// The message for `alerts` (non-empty, oldest first) to `channel`.
    pub fn new(channel: &str, alerts: &[RoutedAlert], digest: bool) -> Notification {
        let severity = alerts
            .iter()
            .map(|a| a.severity.as_str())
            .max_by_key(|s| AlertSeverity::rank_of(s))
            .unwrap_or(AlertSeverity::Warning.as_str());
        Notification {
            kind_of_event: EVENT_TYPE.into(),
            channel: channel.into(),
            kind: alerts.first().map(|a| a.kind.clone()).unwrap_or_default(),
            severity: severity.to_owned(),
            count: alerts.len(),
            digest,
            first_raised_at: rfc3339(alerts.first().map_or(0, |a| a.created_at)),
            last_raised_at: rfc3339(alerts.last().map_or(0, |a| a.created_at)),
            alerts: alerts
                .iter()
                .take(LISTED)
                .map(|a| AlertLine {
                    alert_id: a.alert_id.clone(),
                    severity: a.severity.clone(),
                    message: a.message.clone(),
                    payment_no: a.payment_no.clone(),
                    raised_at: rfc3339(a.created_at),
                })
                .collect(),
        }
    }

    /// One line that says what happened: a notification's first words.
    pub fn title(&self) -> String {
        let severity = self.severity.to_uppercase();
        if self.count == 1 {
            let message = self.alerts.first().map_or("", |a| a.message.as_str());
            format!("[{severity}] {}: {message}", self.kind)
        } else {
            format!(
                "[{severity}] {} {} alerts since {}",
                self.count, self.kind, self.first_raised_at
            )
        }
    }

    /// The listed alerts, one a line, and how many more there were.
    fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .alerts
            .iter()
            .map(|a| {
                let payment = a
                    .payment_no
                    .as_deref()
                    .map(|p| format!(" (payment {p})"))
                    .unwrap_or_default();
                format!("{} {} {}{payment}", a.raised_at, a.severity, a.message)
            })
            .collect();
        if self.count > self.alerts.len() {
            lines.push(format!(
                "… and {} more, until {}: every alert is in the console's alert list.",
                self.count - self.alerts.len(),
                self.last_raised_at
            ));
        }
        lines
    }

    /// An e-mail's subject and plain-text body.
    pub fn email(&self, message_id: &str) -> (String, String) {
        let subject = truncate(&format!("Reckon alert {}", self.title()), 200);
        let mut body = self.title();
        body.push_str("\n\n");
        for line in self.lines() {
            body.push_str(&line);
            body.push('\n');
        }
        body.push_str(&format!(
            "\nSent by Reckon to alert channel {}; message {message_id}.\n",
            self.channel
        ));
        (subject, body)
    }

    /// A Slack-compatible incoming webhook's body: `text` (the
    /// notification's fallback) and `blocks` — a header (plain text, at
    /// most 150 characters), a section (mrkdwn, at most 3,000) and a
    /// context line, as Slack's Block Kit reference limits them.
    pub fn slack(&self, message_id: &str) -> serde_json::Value {
        let title = self.title();
        let body = self
            .lines()
            .iter()
            .map(|l| format!("• {}", mrkdwn_escape(l)))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::json!({
            "text": truncate(&mrkdwn_escape(&title), 3000),
            "blocks": [
                {
                    "type": "header",
                    "text": { "type": "plain_text", "text": truncate(&title, 150) }
                },
                {
                    "type": "section",
                    "text": { "type": "mrkdwn", "text": truncate(&body, 3000) }
                },
                {
                    "type": "context",
                    "elements": [{
                        "type": "mrkdwn",
                        "text": mrkdwn_escape(&format!(
                            "Reckon · channel {} · message {message_id}",
                            self.channel
                        ))
                    }]
                }
            ]
        })
    }
}

/// Slack's mrkdwn reads `&`, `<` and `>` as markup: escaped, an alert's
/// text cannot turn into a link or a mention.
fn mrkdwn_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// At most `max` characters, the last an ellipsis when cut.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(i: i64, severity: &str) -> RoutedAlert {
        RoutedAlert {
            alert_id: format!("a{i}"),
            dedupe_key: format!("k{i}"),
            kind: "sla_overdue".into(),
            severity: severity.into(),
            payment_no: (i == 0).then(|| "P-1".into()),
            message: format!("ticket T-{i} <@channel> is past its SLA & overdue"),
            created_at: 1_764_633_600_000_000 + i * 1_000_000,
        }
    }

    #[test]
    fn a_digest_lists_the_first_alerts_and_counts_the_rest() {
        let alerts: Vec<_> = (0..29)
            .map(|i| alert(i, if i == 3 { "critical" } else { "high" }))
            .collect();
        let n = Notification::new("ops", &alerts, true);
        assert_eq!(
            (n.count, n.alerts.len(), n.severity.as_str()),
            (29, 5, "critical")
        );
        assert_eq!(
            n.title(),
            "[CRITICAL] 29 sla_overdue alerts since 2025-12-02T00:00:00Z"
        );
        let (subject, body) = n.email("m1");
        assert!(subject.starts_with("Reckon alert [CRITICAL] 29 sla_overdue"));
        assert!(body.contains("… and 24 more, until 2025-12-02T00:00:28Z"));
        assert!(body.contains("(payment P-1)"));
        let slack = n.slack("m1");
        let header = slack["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(header.chars().count() <= 150);
        let section = slack["blocks"][1]["text"]["text"].as_str().unwrap();
        // A mention or link in an alert's text stays text.
        assert!(section.contains("&lt;@channel&gt;") && !section.contains("<@channel>"));
        assert!(section.contains("SLA &amp; overdue"));
    }

    #[test]
    fn long_texts_are_cut_to_slacks_limits() {
        let mut a = alert(1, "high");
        a.message = "x".repeat(5000);
        let n = Notification::new("ops", &[a], false);
        let slack = n.slack("m");
        assert_eq!(
            slack["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .chars()
                .count(),
            150
        );
        assert_eq!(
            slack["blocks"][1]["text"]["text"]
                .as_str()
                .unwrap()
                .chars()
                .count(),
            3000
        );
    }
}
