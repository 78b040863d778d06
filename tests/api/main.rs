//! Integration tests over real HTTP on 127.0.0.1, each on SQLite and on
//! PostgreSQL, plus the command line as a real process.

mod engine_helpers;
mod helpers;

mod ageing;
mod alert_channels;
mod alerts;
mod alipay;
mod assets;
mod auth;
mod bank;
mod bulk;
mod cli;
mod cli_accounts;
mod close;
mod connections;
mod console;
mod crash;
mod day_edge;
mod demo;
mod engine;
mod fees;
mod fix_journeys;
mod health;
mod lanes;
mod late_success;
mod money;
mod openapi;
mod outbox_ops;
mod pipeline;
mod provider_truth;
mod pulls;
mod recon;
mod refunds;
mod refused;
mod relay;
mod run_once;
mod schedule;
mod sinks;
mod standard;
mod stripe;
mod tour;
mod triage;
mod uploads;
mod users;
mod wechatpay;
