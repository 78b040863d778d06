//! The command line: `reckon [serve]`, `migrate`, `sandbox`, and one module
//! per command family — `user`/`token` (`people`), `recon`/`bank`/`payment`
//! (`recon`), `outbox`, `audit`. Errors end with one line on stderr and a
//! non-zero exit.

mod audit;
pub mod docs;
mod doctor;
mod outbox;
mod people;
mod policy;
mod recon;
mod serve;

use crate::config::Config;
use crate::startup::open_database;
use crate::telemetry;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "reckon",
    version,
    about = "Reckon: payment callbacks, reconciliation and the finance console.",
    long_about = "Reckon: payment callbacks, reconciliation and the finance console.\n\n\
        Configuration comes from the TOML file named by RECKON_CONFIG (optional), \
        overridden by the environment: RECKON_LISTEN, DATABASE_URL, RECKON_DATA_DIR, \
        RECKON_TIMEZONE, RECKON_LOG_FORMAT, RECKON_SITE_DIR (a built console served instead of \
        the one in the binary), RECKON_COOKIE_SECURE. \
        Without a command, `serve` runs."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server: console, webhooks and API (the default command).
    Serve {
        /// Create or refresh the demo users (admin, supervisor, operator)
        /// with new random passwords and print them.
        #[arg(long)]
        demo: bool,
    },
    /// Check the setup without changing it: settings, database and
    /// migrations, audit key, provider accounts (DNS, TLS, credentials where
    /// a read-only call exists), outbox sinks, alert channels, clock. One
    /// line each, OK / WARN / FAIL; exit 1 on any FAIL.
    Doctor,
    /// Apply the database migrations and exit (the server also applies them
    /// at start).
    Migrate,
    /// Manage console users.
    #[command(subcommand)]
    User(people::UserCommand),
    /// Manage merchant API tokens.
    #[command(subcommand)]
    Token(people::TokenCommand),
    /// Inspect the audit log.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// The approval policy: how many approvers each action needs.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Reconcile provider statements.
    #[command(subcommand)]
    Recon(recon::ReconCommand),
    /// The bank's statements against the providers' payouts.
    #[command(subcommand)]
    Bank(recon::BankCommand),
    /// Decisions on payments.
    #[command(subcommand)]
    Payment(recon::PaymentCommand),
    /// Providers' disputes (chargebacks), read.
    #[command(subcommand)]
    Dispute(recon::DisputeCommand),
    /// Reports for finance.
    #[command(subcommand)]
    Report(recon::ReportCommand),
    /// Outbox messages: resend one, many by a filter, recover a sink's
    /// DEAD deliveries after an outage (the same message id each time), or
    /// make its deliveries waiting for a retry due now.
    #[command(subcommand)]
    Outbox(outbox::OutboxCommand),
    /// Run the sandbox provider: a fake payment channel with an HTTP API
    /// (create, query, close) that signs and sends webhooks to --notify,
    /// and misbehaves on request (--chaos).
    Sandbox {
        #[arg(long, default_value = "127.0.0.1:4000")]
        listen: std::net::SocketAddr,
        /// Where to send webhooks, e.g. http://127.0.0.1:3000/webhooks/sandbox
        #[arg(long)]
        notify: String,
        /// The whsec_… signing secret; a new one is made and printed if absent.
        #[arg(long)]
        secret: Option<String>,
        /// Chaos knobs as JSON, e.g. '{"duplicates":3,"reorder":true,"drop_rate":0.1}'
        /// (settle_ms, fail_rate, duplicates, reorder, delay_ms, drop_rate,
        /// alter_amount_minor, query_delay_ms, query_error_rate). Also
        /// changeable at runtime: POST /v1/chaos.
        #[arg(long)]
        chaos: Option<String>,
    },
    /// Write one of the book's generated reference pages to stdout.
    #[command(hide = true)]
    Docs { page: docs::Page },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The book's pages come from the code alone: no configuration needed.
    if let Some(Command::Docs { page }) = cli.command {
        print!("{}", page.render());
        return ExitCode::SUCCESS;
    }
    let config = match Config::load() {
        Ok(c) => c,
        Err(e) if matches!(cli.command, Some(Command::Doctor)) => {
            return doctor::config_failed(&e);
        }
        Err(e) => {
            eprintln!("reckon: error: {e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(config.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("reckon: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(
        cli.command.unwrap_or(Command::Serve { demo: false }),
        config,
    )) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reckon: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: Config) -> anyhow::Result<ExitCode> {
    match command {
        Command::Sandbox {
            listen,
            notify,
            secret,
            chaos,
        } => serve::sandbox(listen, &notify, secret, chaos).await?,
        Command::Serve { demo } => serve::serve(&config, demo).await?,
        Command::Doctor => return Ok(doctor::doctor(&config).await),
        Command::Migrate => {
            let db = open_database(&config).await?;
            println!("migrations applied to {}", db.display_url);
        }
        Command::User(cmd) => people::user(&config, cmd).await?,
        Command::Token(cmd) => people::token(&config, cmd).await?,
        Command::Recon(cmd) => return recon::recon(&config, cmd).await,
        Command::Bank(cmd) => return recon::bank(&config, cmd).await,
        Command::Payment(cmd) => return recon::payment(&config, cmd).await,
        Command::Dispute(cmd) => return recon::dispute(&config, cmd).await,
        Command::Report(cmd) => return recon::report(&config, cmd).await,
        Command::Outbox(cmd) => return outbox::outbox(&config, cmd).await,
        Command::Audit(cmd) => return audit::audit(&config, cmd).await,
        Command::Policy(cmd) => policy::policy(&config, cmd).await?,
        Command::Docs { page } => print!("{}", page.render()),
    }
    Ok(ExitCode::SUCCESS)
}
