//! Alert channels: the alerts Reckon raises (the `alerts` table) told to
//! people — a signed JSON webhook, a Slack-compatible incoming webhook or
//! e-mail over SMTP — routed by kind and severity, grouped per kind, held
//! through quiet hours except when critical. Each message is an outbox
//! message whose sink is the channel's name, so the relay delivers,
//! retries and dead-letters it like any other (`crate::outbox::channels` sends it).
//! The channels are `[[alert_channels]]` in the TOML file (their shapes
//! and checks are `crate::config`'s, `alert_channels`); the
//! routing pass is `route`, on a worker's beat.

mod render;
mod route;

pub use crate::config::{Channel, ChannelToml, QuietHours, Routing, Smtp, SmtpSecurity, Target};
pub use render::{AlertLine, EVENT_TYPE, Notification};
pub use route::route_alerts;
