//! Everything that leaves Reckon: the relay delivering outbox messages to
//! their sinks and alert channels (`relay`, `channels`), the sinks' state —
//! schedule, secrets, pause, failing spells (`sinks`) — and the jobs that
//! queue deliveries again (`jobs`). The console only reads the outbox.

pub mod channels;
pub mod jobs;
pub mod relay;
pub mod sinks;

pub use relay::{Attempt, relay_outbox};
pub use sinks::Failing;

use crate::context::Context;

/// Whether the relay can deliver anywhere at all.
pub fn any_configured(ctx: &Context) -> bool {
    !ctx.settings().sinks.is_empty() || !ctx.settings().channels.is_empty()
}
