//! Reckon: payment callbacks, reconciliation and the console that serves
//! them. `cli` is the entry point, `startup::Application` the server.

pub mod accounts;
pub mod auth;
pub mod cli;
pub mod config;
pub mod demo;
pub mod domain;
pub mod engine;
pub mod providers;
pub mod recon;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod triage;
pub mod web;

pub use config::Config;
pub use startup::Application;

/// mimalloc instead of glibc's malloc for every binary built on Reckon (the
/// server, the tests, the benchmarks): with 256 connections in flight,
/// glibc's `_int_malloc` and `unlink_chunk` were 7% of the HTTP threads'
/// time in the callback benchmark.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
