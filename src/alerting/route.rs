//! The dispatcher pass: each new alert routed to the channels that take
//! its kind and severity, as outbox messages (sink = the channel's name),
//! so the relay retries, dead-letters and resends them like any message.
//!
//! Grouping, per channel and alert kind: the first alert goes at once and
//! opens a window of `group_minutes`; the kind's alerts raised in the
//! window are held, and at its end go as one digest (their count and the
//! first few), which opens the next window — so a steady stream makes one
//! message per window, and a quiet kind's next alert again goes at once.
//! In a channel's quiet hours alerts below critical are held, and go as
//! one digest per kind when they end. A critical alert is never held: it
//! goes at once and leaves the window as it was — with the other critical
//! alerts of its kind routed in the same lease, if any, as one message.

use super::render::{EVENT_TYPE, Notification};
use crate::config::{Channel, is_critical};
use crate::context::Context;
use crate::domain::AlertKind;
use crate::store;
use crate::store::alert_dispatch::{self as dispatch, RoutedAlert};
use crate::store::outbox;

/// Alerts routed per lease (one transaction); the rest wait for the next
/// lease of the pass.
const ALERTS_PER_LEASE: i64 = 1000;

/// Longer than a lease's routing takes, so it lapses only when its holder
/// died.
const LEASE_US: i64 = 120_000_000;

/// Routes the alerts raised since the last pass and sends the digests due
/// at `now`. Returns how many messages it wrote.
pub async fn route_alerts(ctx: &Context, now: i64) -> store::Result<usize> {
    let settings = ctx.settings();
    let channels = &settings.channels;
    let pool = &ctx.db.pool;
    if channels.is_empty() {
        // Nothing to tell anyone: alerts are only marked, so a channel
        // configured later does not receive the backlog.
        if dispatch::any_unrouted(pool, now).await? {
            dispatch::mark_all_routed(pool, now).await?;
        }
        return Ok(0);
    }
    // Due digests first: a new alert of a kind whose window just ended
    // then joins the window the digest opens, instead of reopening it and
    // leaving the held ones waiting another window.
    let mut written = send_due_digests(ctx, channels, now).await?;
    while dispatch::any_unrouted(pool, now).await? {
        let leased = dispatch::lease_unrouted(
            pool,
            now,
            now + LEASE_US,
            ALERTS_PER_LEASE,
            ctx.db.skip_locked(),
        )
        .await?;
        if leased.is_empty() {
            break;
        }
        written += route_lease(ctx, channels, &leased, now).await?;
    }
    if written > 0 {
        tracing::info!(messages = written, "alert channel messages written");
        ctx.wake.notify_one();
    }
    Ok(written)
}

/// A lease's alerts to every channel each matches, in one transaction
/// with their routed marks: routed once, with all their messages or none.
/// The critical alerts of one kind in the lease go at once as one message
/// per channel, so a run that raises thousands is a few messages, not
/// thousands, and none waits.
async fn route_lease(
    ctx: &Context,
    channels: &[Channel],
    leased: &[RoutedAlert],
    now: i64,
) -> store::Result<usize> {
    let mut tx = ctx.db.begin_write().await?;
    let mut written = 0;
    let mut critical: std::collections::BTreeMap<(&str, &str), Vec<&RoutedAlert>> =
        Default::default();
    for alert in leased {
        if !dispatch::mark_routed(&mut tx, &alert.alert_id, now).await? {
            // Another instance routed it after our lease lapsed.
            continue;
        }
        for channel in channels
            .iter()
            .filter(|c| c.routing.matches(&alert.kind, &alert.severity) && !about_itself(c, alert))
        {
            if is_critical(&alert.severity) {
                critical
                    .entry((channel.name.as_str(), alert.kind.as_str()))
                    .or_default()
                    .push(alert);
                continue;
            }
            let at_once = !quiet(channel, now)
                && dispatch::open_window(
                    &mut tx,
                    &channel.name,
                    &alert.kind,
                    now,
                    now + channel.routing.group_us,
                )
                .await?;
            let message_id = at_once.then(new_message_id);
            if let Some(id) = &message_id {
                write_message(
                    &mut tx,
                    channel,
                    id,
                    std::slice::from_ref(alert),
                    false,
                    now,
                )
                .await?;
                written += 1;
            }
            dispatch::insert_route(&mut tx, alert, &channel.name, message_id.as_deref(), now)
                .await?;
        }
    }
    for ((name, _), alerts) in critical {
        let Some(channel) = channels.iter().find(|c| c.name == name) else {
            continue;
        };
        let message_id = new_message_id();
        let owned: Vec<RoutedAlert> = alerts.iter().map(|a| (*a).clone()).collect();
        write_message(&mut tx, channel, &message_id, &owned, owned.len() > 1, now).await?;
        for alert in alerts {
            dispatch::insert_route(&mut tx, alert, name, Some(&message_id), now).await?;
        }
        written += 1;
    }
    tx.commit().await?;
    Ok(written)
}

/// Each (channel, kind) with held alerts whose window has ended, outside
/// the channel's quiet hours: one digest, and the next window opens.
async fn send_due_digests(ctx: &Context, channels: &[Channel], now: i64) -> store::Result<usize> {
    let pool = &ctx.db.pool;
    let mut written = 0;
    for (name, kind) in dispatch::held_groups(pool).await? {
        // A channel taken out of the file keeps its held alerts (in the
        // console and in `alert_routes`); they go if it comes back.
        let Some(channel) = channels.iter().find(|c| c.name == name) else {
            continue;
        };
        if quiet(channel, now)
            || dispatch::window_until(pool, &name, &kind)
                .await?
                .is_some_and(|until| until > now)
        {
            continue;
        }
        let mut tx = ctx.db.begin_write().await?;
        let message_id = new_message_id();
        let claimed = dispatch::claim_held(&mut tx, &name, &kind, &message_id, now).await?;
        if claimed.is_empty() {
            // Another instance sent them first.
            continue;
        }
        write_message(&mut tx, channel, &message_id, &claimed, true, now).await?;
        dispatch::set_window(&mut tx, &name, &kind, now, now + channel.routing.group_us).await?;
        tx.commit().await?;
        written += 1;
    }
    Ok(written)
}

/// A channel's own message dead-lettered (the relay's `outbox_dead` key
/// ends with the sink): announced on the other channels only, since on
/// this one it would die again and raise another, without end.
fn about_itself(channel: &Channel, alert: &RoutedAlert) -> bool {
    alert.kind == AlertKind::OutboxDead.as_str()
        && alert
            .dedupe_key
            .strip_suffix(&channel.name)
            .is_some_and(|rest| rest.ends_with(':'))
}

fn quiet(channel: &Channel, now: i64) -> bool {
    channel
        .routing
        .quiet
        .as_ref()
        .is_some_and(|q| q.ends_after(now).is_some())
}

fn new_message_id() -> String {
    format!("msg_{}", uuid::Uuid::now_v7().simple())
}

/// The message as an outbox event with one delivery, to the channel.
async fn write_message(
    conn: &mut store::Conn,
    channel: &Channel,
    message_id: &str,
    alerts: &[RoutedAlert],
    digest: bool,
    now: i64,
) -> store::Result<()> {
    let note = Notification::new(&channel.name, alerts, digest);
    let payload = serde_json::to_string(&note).map_err(store::unencodable)?;
    let first = alerts.first().map_or("", |a| a.alert_id.as_str());
    outbox::insert_events_many(
        conn,
        &[outbox::NewEvent {
            message_id,
            aggregate_type: "alert",
            aggregate_id: first,
            event_type: EVENT_TYPE,
            payload: &payload,
            now,
        }],
        &[crate::store::sinks::Route {
            name: channel.name.clone(),
            event_types: Vec::new(),
        }],
    )
    .await
}
