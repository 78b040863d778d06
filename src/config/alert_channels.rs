//! A channel's `[[alert_channels]]` section as the TOML file gives it, and
//! the checked [`Channel`] it becomes: each kind's required keys present,
//! another kind's keys refused, times and addresses parsed once.

use crate::domain::AlertSeverity;
use crate::providers::signing::Secret;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// One `[[alert_channels]]` table, unchecked.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelToml {
    pub name: String,
    /// `webhook`, `slack` or `email`.
    pub kind: String,
    /// webhook and slack: where to POST (a Slack URL is itself a secret).
    pub url: Option<SecretString>,
    /// webhook: the `whsec_…` secret that signs its messages.
    pub secret: Option<SecretString>,
    /// email: the SMTP server.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// email: `starttls` (default), `tls` (implicit, port 465) or `plain`.
    pub tls: Option<String>,
    pub from: Option<String>,
    pub to: Option<Vec<String>>,
    pub user: Option<String>,
    pub password: Option<SecretString>,
    /// Alert kinds sent: `["*"]` (default) or a list.
    pub kinds: Option<Vec<String>>,
    /// The lowest severity sent (default: every alert).
    pub min_severity: Option<String>,
    /// Minutes a kind's further alerts are gathered into one digest after
    /// a message (default 15; 0: every alert at once).
    pub group_minutes: Option<i64>,
    /// `HH:MM-HH:MM` in `quiet_zone`: alerts below critical wait for its end.
    pub quiet_hours: Option<String>,
    /// IANA zone of `quiet_hours` (default `RECKON_TIMEZONE`).
    pub quiet_zone: Option<String>,
}

/// A configured alert channel: where its messages go and which alerts.
#[derive(Clone, Debug)]
pub struct Channel {
    /// Its sink name in `outbox_deliveries`.
    pub name: String,
    pub target: Target,
    pub routing: Routing,
}

#[derive(Clone, Debug)]
pub enum Target {
    /// Generic JSON, signed Standard-Webhooks style.
    Webhook {
        url: String,
        secret: Secret,
    },
    /// A Slack-compatible incoming webhook (`text` and `blocks`).
    Slack {
        url: SecretString,
    },
    Email(Smtp),
}

impl Target {
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Webhook { .. } => "webhook",
            Target::Slack { .. } => "slack",
            Target::Email(_) => "email",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpSecurity {
    StartTls,
    Tls,
    /// No encryption: a local test server or relay only.
    Plain,
}

#[derive(Clone, Debug)]
pub struct Smtp {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub from: lettre::message::Mailbox,
    pub to: Vec<lettre::message::Mailbox>,
    pub credentials: Option<(String, SecretString)>,
}

#[derive(Clone, Debug)]
pub struct Routing {
    /// None: every kind.
    pub kinds: Option<std::collections::BTreeSet<String>>,
    pub min_severity: u8,
    /// Microseconds; 0: no grouping.
    pub group_us: i64,
    pub quiet: Option<QuietHours>,
}

impl Routing {
    pub fn matches(&self, kind: &str, severity: &str) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(kind))
            && AlertSeverity::rank_of(severity) >= self.min_severity
    }
}

/// The daily span, in minutes of the day in `zone`, in which alerts below
/// critical wait; `from > to` spans midnight.
#[derive(Clone, Debug)]
pub struct QuietHours {
    pub from: u16,
    pub to: u16,
    pub zone: jiff::tz::TimeZone,
}

impl QuietHours {
    /// When the quiet hours around `now` end; None when `now` is outside them.
    pub fn ends_after(&self, now: i64) -> Option<i64> {
        let zoned = jiff::Timestamp::from_microsecond(now)
            .ok()?
            .to_zoned(self.zone.clone());
        let minute = zoned.hour() as u16 * 60 + zoned.minute() as u16;
        let inside = if self.from < self.to {
            (self.from..self.to).contains(&minute)
        } else {
            minute >= self.from || minute < self.to
        };
        if !inside {
            return None;
        }
        let today_end = zoned
            .date()
            .at((self.to / 60) as i8, (self.to % 60) as i8, 0, 0)
            .to_zoned(self.zone.clone())
            .ok()?;
        let end = if minute < self.to {
            today_end
        } else {
            today_end.tomorrow().ok()?
        };
        Some(end.timestamp().as_microsecond())
    }
}

/// A stored alert's severity is critical.
pub fn is_critical(severity: &str) -> bool {
    AlertSeverity::rank_of(severity) == AlertSeverity::Critical.rank()
}

impl ChannelToml {
    /// The channel checked; `Err` is the hint naming what is wrong.
    /// `timezone` is the business zone, the default of `quiet_zone`.
    pub fn check(&self, timezone: &str) -> Result<Channel, String> {
        let name = self.name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "channel name {name:?}: expected lowercase letters, digits, '-' or '_'"
            ));
        }
        let routing = self.routing(timezone)?;
        let foreign = |keys: &[(&str, bool)]| -> Result<(), String> {
            match keys.iter().find(|(_, given)| *given) {
                Some((key, _)) => Err(format!(
                    "`{key}` is not a key of a {} channel",
                    self.kind.trim()
                )),
                None => Ok(()),
            }
        };
        let target = match self.kind.trim() {
            "webhook" => {
                foreign(&self.email_keys())?;
                let url = self.http_url()?;
                let secret = self
                    .secret
                    .as_ref()
                    .ok_or("a webhook channel needs `secret` = \"whsec_…\"")?;
                let secret = Secret::parse(secret.expose_secret())
                    .map_err(|_| crate::providers::signing::WHSEC_HINT.to_string())?;
                Target::Webhook {
                    url: url.expose_secret().to_owned(),
                    secret,
                }
            }
            "slack" => {
                foreign(&self.email_keys())?;
                foreign(&[("secret", self.secret.is_some())])?;
                Target::Slack {
                    url: self.http_url()?,
                }
            }
            "email" => {
                foreign(&[
                    ("url", self.url.is_some()),
                    ("secret", self.secret.is_some()),
                ])?;
                Target::Email(self.smtp()?)
            }
            other => {
                return Err(format!(
                    "kind {other:?}: expected \"webhook\", \"slack\" or \"email\""
                ));
            }
        };
        Ok(Channel {
            name: name.to_owned(),
            target,
            routing,
        })
    }

    fn email_keys(&self) -> [(&'static str, bool); 7] {
        [
            ("host", self.host.is_some()),
            ("port", self.port.is_some()),
            ("tls", self.tls.is_some()),
            ("from", self.from.is_some()),
            ("to", self.to.is_some()),
            ("user", self.user.is_some()),
            ("password", self.password.is_some()),
        ]
    }

    fn http_url(&self) -> Result<SecretString, String> {
        let url = self
            .url
            .as_ref()
            .ok_or("this channel needs `url` = \"https://…\"")?;
        let text = url.expose_secret().trim();
        if !(text.starts_with("https://") || text.starts_with("http://"))
            || reqwest::Url::parse(text).is_err()
        {
            return Err("`url`: expected an http:// or https:// URL".into());
        }
        Ok(SecretString::from(text.to_owned()))
    }

    fn smtp(&self) -> Result<Smtp, String> {
        let host = self
            .host
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or("an email channel needs `host`, the SMTP server")?;
        let security = match self.tls.as_deref().map(str::trim).unwrap_or("starttls") {
            "starttls" => SmtpSecurity::StartTls,
            "tls" => SmtpSecurity::Tls,
            "plain" => SmtpSecurity::Plain,
            other => {
                return Err(format!(
                    "tls {other:?}: expected \"starttls\", \"tls\" or \"plain\""
                ));
            }
        };
        let port = self.port.unwrap_or(match security {
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
            SmtpSecurity::Plain => 25,
        });
        let mailbox = |text: &str| {
            text.trim()
                .parse::<lettre::message::Mailbox>()
                .map_err(|e| format!("{text:?} is not an e-mail address: {e}"))
        };
        let from = mailbox(
            self.from
                .as_deref()
                .ok_or("an email channel needs `from`")?,
        )?;
        let to = self
            .to
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or("an email channel needs `to`, a list of addresses")?
            .iter()
            .map(|t| mailbox(t))
            .collect::<Result<Vec<_>, _>>()?;
        let credentials = match (&self.user, &self.password) {
            (Some(user), Some(password)) => Some((user.clone(), password.clone())),
            (None, None) => None,
            _ => return Err("`user` and `password` go together".into()),
        };
        Ok(Smtp {
            host: host.to_owned(),
            port,
            security,
            from,
            to,
            credentials,
        })
    }

    fn routing(&self, timezone: &str) -> Result<Routing, String> {
        let kinds = match self.kinds.as_deref() {
            None => None,
            Some([]) => return Err("`kinds` is empty: use [\"*\"] for every kind".into()),
            Some(list) if list.iter().any(|k| k.trim() == "*") => None,
            Some(list) => Some(list.iter().map(|k| k.trim().to_owned()).collect()),
        };
        let min_severity = match self.min_severity.as_deref() {
            None => 0,
            Some(word) => word
                .parse::<AlertSeverity>()
                .map(AlertSeverity::rank)
                .map_err(|_| {
                    format!(
                        "min_severity {word:?}: expected info, low, warning, medium, high or critical"
                    )
                })?,
        };
        let group_minutes = self.group_minutes.unwrap_or(15);
        if !(0..=1440).contains(&group_minutes) {
            return Err(format!(
                "group_minutes {group_minutes}: expected minutes from 0 to 1440"
            ));
        }
        let quiet = match self.quiet_hours.as_deref() {
            None => {
                if self.quiet_zone.is_some() {
                    return Err("`quiet_zone` without `quiet_hours`".into());
                }
                None
            }
            Some(span) => {
                let zone_name = self.quiet_zone.as_deref().unwrap_or(timezone).trim();
                let zone = jiff::tz::TimeZone::get(zone_name).map_err(|_| {
                    format!("quiet_zone {zone_name:?}: expected an IANA time zone name")
                })?;
                let (from, to) = parse_span(span).ok_or_else(|| {
                    format!("quiet_hours {span:?}: expected HH:MM-HH:MM such as 22:00-07:00")
                })?;
                Some(QuietHours { from, to, zone })
            }
        };
        Ok(Routing {
            kinds,
            min_severity,
            group_us: group_minutes * 60_000_000,
            quiet,
        })
    }
}

/// `HH:MM-HH:MM` as minutes of the day; an empty span is refused.
fn parse_span(span: &str) -> Option<(u16, u16)> {
    let minute = |t: &str| {
        let (h, m) = t.trim().split_once(':')?;
        let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
        (h < 24 && m < 60).then_some(h * 60 + m)
    };
    let (from, to) = span.split_once('-')?;
    let (from, to) = (minute(from)?, minute(to)?);
    (from != to).then_some((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> ChannelToml {
        use figment::providers::Format;
        #[derive(Deserialize)]
        struct File {
            alert_channels: Vec<ChannelToml>,
        }
        let file: File = figment::Figment::from(figment::providers::Toml::string(text))
            .extract()
            .unwrap();
        file.alert_channels.into_iter().next().unwrap()
    }

    #[test]
    fn each_kind_needs_its_own_keys_and_refuses_another_kinds() {
        let hook = toml(
            "[[alert_channels]]\nname = \"ops\"\nkind = \"webhook\"\nurl = \"https://ops.example/hook\"\n",
        );
        assert!(hook.check("UTC").unwrap_err().contains("secret"));
        let mail = toml(
            "[[alert_channels]]\nname = \"m\"\nkind = \"email\"\nhost = \"smtp.example\"\nfrom = \"r@example.com\"\nto = [\"f@example.com\"]\nurl = \"https://x\"\n",
        );
        assert_eq!(
            mail.check("UTC").unwrap_err(),
            "`url` is not a key of a email channel"
        );
        let slack = toml(
            "[[alert_channels]]\nname = \"s\"\nkind = \"slack\"\nurl = \"https://hooks.example/T/B/x\"\nkinds = [\"sla_overdue\"]\nmin_severity = \"high\"\n",
        )
        .check("UTC")
        .unwrap();
        assert!(slack.routing.matches("sla_overdue", "high"));
        assert!(slack.routing.matches("sla_overdue", "CRITICAL"));
        assert!(!slack.routing.matches("sla_overdue", "warning"));
        assert!(!slack.routing.matches("outbox_dead", "critical"));
        // The Slack URL is a secret: the channel's Debug hides it.
        assert!(!format!("{slack:?}").contains("hooks.example"));
        let smtp = toml(
            "[[alert_channels]]\nname = \"m\"\nkind = \"email\"\nhost = \"smtp.example\"\ntls = \"tls\"\nfrom = \"Reckon <r@example.com>\"\nto = [\"f@example.com\", \"g@example.com\"]\nuser = \"u\"\n",
        );
        assert_eq!(
            smtp.check("UTC").unwrap_err(),
            "`user` and `password` go together"
        );
    }

    #[test]
    fn quiet_hours_span_midnight_and_end_in_their_zone() {
        let c = toml(
            "[[alert_channels]]\nname = \"s\"\nkind = \"slack\"\nurl = \"https://h.example/x\"\nquiet_hours = \"22:00-07:00\"\nquiet_zone = \"Asia/Shanghai\"\n",
        )
        .check("UTC")
        .unwrap();
        let quiet = c.routing.quiet.unwrap();
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_microsecond();
        // 23:30 in Shanghai (15:30 UTC): quiet until 07:00 there tomorrow.
        assert_eq!(
            quiet.ends_after(at("2026-12-02T15:30:00Z")),
            Some(at("2026-12-02T23:00:00Z"))
        );
        // 06:59 there: one more minute.
        assert_eq!(
            quiet.ends_after(at("2026-12-02T22:59:00Z")),
            Some(at("2026-12-02T23:00:00Z"))
        );
        assert_eq!(quiet.ends_after(at("2026-12-02T23:00:00Z")), None);
        assert_eq!(quiet.ends_after(at("2026-12-02T06:00:00Z")), None);
        assert!(parse_span("07:00-07:00").is_none());
        assert!(parse_span("24:00-07:00").is_none());
    }
}
