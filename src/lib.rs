//! Reckon: payment callbacks, reconciliation and the console that serves
//! them. `cli` is the entry point, `startup::Application` the server.

pub mod accounts;
pub mod alerting;
pub mod audit_anchor;
pub mod auth;
pub mod bank;
pub mod cli;
pub mod config;
pub mod config_versions;
pub mod console;
pub mod context;
pub mod demo;
pub mod domain;
pub mod engine;
pub mod jobs;
mod memory;
pub mod metrics;
pub mod oidc;
pub mod outbox;
pub mod policy;
pub mod providers;
pub mod recon;
pub mod sandbox_server;
pub mod startup;
pub mod statement;
pub mod store;
pub mod telemetry;
pub mod triage;
pub mod web;
pub mod workers;

pub use config::Config;
pub use startup::Application;

pub(crate) use memory::release_freed_memory;
