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

/// Hands memory freed in bulk back to the system now. mimalloc returns
/// memory freed by a thread other than the one that allocated it only when
/// the allocating thread next allocates: the day's payments of a
/// reconciliation (70 MB at a million) are built on a blocking thread that
/// may sit idle afterwards, and the run's peak RSS was 180 or 250 MiB by
/// chance (whether that thread ran again before the run's writes).
pub(crate) fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers and has no preconditions; it
    // may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
