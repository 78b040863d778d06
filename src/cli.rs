//! The command line: `reckon [serve]`, `migrate`, `user …`, `token …`,
//! `audit verify`. Errors end with one line on stderr and a non-zero exit.

use crate::accounts::{Accounts, Actor};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::startup::{Application, open_database, shutdown_signal};
use crate::store::audit;
use crate::telemetry;
use anyhow::{Context, bail};
use app::error::AppError;
use app::types::Role;
use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "reckon",
    version,
    about = "Reckon: payment callbacks, reconciliation and the finance console.",
    long_about = "Reckon: payment callbacks, reconciliation and the finance console.\n\n\
        Configuration comes from the TOML file named by RECKON_CONFIG (optional), \
        overridden by the environment: RECKON_LISTEN, DATABASE_URL, RECKON_DATA_DIR, \
        RECKON_TIMEZONE, RECKON_LOG_FORMAT, RECKON_SITE_DIR, RECKON_COOKIE_SECURE. \
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
    /// Apply the database migrations and exit (the server also applies them
    /// at start).
    Migrate,
    /// Manage console users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage merchant API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Inspect the audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Reconcile provider statements.
    #[command(subcommand)]
    Recon(ReconCommand),
    /// The bank's statements against the providers' payouts.
    #[command(subcommand)]
    Bank(BankCommand),
    /// Decisions on payments.
    #[command(subcommand)]
    Payment(PaymentCommand),
    /// Outbox messages: resend one, many by a filter, recover a sink's
    /// DEAD deliveries after an outage (the same message id each time), or
    /// make its deliveries waiting for a retry due now.
    #[command(subcommand)]
    Outbox(OutboxCommand),
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
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// Create a user. The password is read from standard input (or from
    /// --password-file), never from the command line.
    Add {
        #[arg(long)]
        username: String,
        /// operator, supervisor or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Read the password from this file instead of standard input.
        #[arg(long)]
        password_file: Option<PathBuf>,
    },
    /// Set a new password, read from standard input (or --password-file).
    Passwd {
        #[arg(long)]
        username: String,
        #[arg(long)]
        password_file: Option<PathBuf>,
    },
    /// Disable a user: their sessions stop working at once.
    Disable {
        #[arg(long)]
        username: String,
    },
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Create a merchant API token. The token is printed once, alone on
    /// standard output; only its hash is stored.
    Create {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand, Debug)]
enum ReconCommand {
    /// Read a provider's statement for one business day (streamed from the
    /// file, any size) and reconcile the day; prints the run as JSON.
    Import {
        /// The provider account, as configured (e.g. alipay, wechat, sandbox).
        #[arg(long)]
        provider: String,
        /// The business day, YYYY-MM-DD, in RECKON_TIMEZONE.
        #[arg(long)]
        date: String,
        file: PathBuf,
        /// Skip up to this many malformed lines instead of refusing the
        /// statement (each is listed on the run; totals then go unchecked).
        #[arg(long, default_value_t = 0)]
        accept_bad_lines: u32,
    },
    /// Pull a provider's statement for one business day through its API
    /// (page by page) and reconcile the day; prints the run as JSON.
    Pull {
        #[arg(long)]
        provider: String,
        #[arg(long)]
        date: String,
    },
    /// Go on with a pull that failed, from its saved cursor.
    Resume { run_id: String },
}

#[derive(Subcommand, Debug)]
enum BankCommand {
    /// Import a bank statement (ISO 20022 camt.053 XML, or CSV) and match
    /// the providers' payouts against it; prints what was stored and
    /// decided as JSON. The same file twice changes nothing.
    Import {
        file: PathBuf,
        /// camt053 or csv (default: XML is camt.053, anything else CSV).
        #[arg(long)]
        format: Option<String>,
        /// The CSV's columns, `field=Header;…` over the default
        /// date,amount,currency,reference,counterparty,direction.
        #[arg(long)]
        csv_columns: Option<String>,
    },
    /// Match payouts against the bank's credits now; prints what was decided.
    Match,
}

#[derive(Subcommand, Debug)]
enum OutboxCommand {
    /// Queue messages again, due now: one (`--message`, to `--sink` or all
    /// its sinks), or every delivery a filter matches that is not pending
    /// (`--status DEAD --sink S …`). Prints what was queued as JSON.
    Resend {
        #[arg(long)]
        message: Option<String>,
        #[arg(long)]
        sink: Option<String>,
        /// DELIVERED | DEAD (with no --message).
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        event_type: Option<String>,
        /// The payment the messages announce.
        #[arg(long)]
        payment: Option<String>,
        /// Created from / to: RFC 3339 or YYYY-MM-DD.
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
        /// Who resends (recorded in the audit log).
        #[arg(long, default_value = "cli")]
        actor: String,
    },
    /// After a sink's outage: every delivery to it that went DEAD since
    /// `--since` (RFC 3339 or YYYY-MM-DD) queued again.
    Recover {
        #[arg(long)]
        sink: String,
        #[arg(long)]
        since: String,
        #[arg(long, default_value = "cli")]
        actor: String,
    },
    /// After a sink's outage: its pending deliveries that wait for a later
    /// retry made due now (audited with the reason). Prints how many.
    RetryNow {
        #[arg(long)]
        sink: String,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: String,
        #[arg(long, default_value = "cli")]
        actor: String,
    },
}

#[derive(Subcommand, Debug)]
enum PaymentCommand {
    /// Lift reconciliation's hold on a payment (LOCAL_ONLY, ONE_TO_MANY)
    /// once a person has decided; audited with the note.
    Release {
        payment_no: String,
        #[arg(long)]
        note: String,
        /// Who decides (recorded in the audit log).
        #[arg(long, default_value = "cli")]
        actor: String,
    },
}

#[derive(Subcommand, Debug)]
enum AuditCommand {
    /// Walk the keyed hash chain of the audit log; report the first broken
    /// entry.
    Verify {
        /// A checkpoint line printed by `audit checkpoint` (or the file
        /// holding it): also prove that nothing up to it has changed.
        #[arg(long, value_name = "CHECKPOINT")]
        against: Option<String>,
    },
    /// Print the chain's head, signed with the audit key: keep the line
    /// outside the database (the server also logs one daily).
    Checkpoint,
    /// Make a new audit key that signs from now on; older keys stay to
    /// verify what they signed. Restart the server to use it.
    RotateKey,
}

/// `reckon outbox …`: the jobs run here, to their end.
async fn outbox(config: &Config, cmd: OutboxCommand) -> anyhow::Result<ExitCode> {
    use crate::outbox::jobs::{self as outbox, Run};
    let engine = crate::startup::engine_of(config).await?;
    let done = match cmd {
        OutboxCommand::Resend {
            message: Some(id),
            sink,
            actor,
            ..
        } => outbox::resend(&engine, &actor, &id, sink.as_deref())
            .await
            .map(|r| serde_json::to_value(r).unwrap_or_default()),
        OutboxCommand::Resend {
            message: None,
            sink,
            status,
            event_type,
            payment,
            from,
            to,
            actor,
        } => {
            let filter = app::outbox::OutboxFilter {
                event_type,
                sink,
                status,
                payment,
                from,
                to,
                after: None,
            };
            if filter == app::outbox::OutboxFilter::default() {
                eprintln!("reckon: error: name --message, or a filter (--status, --sink, …)");
                return Ok(ExitCode::from(2));
            }
            outbox::start_resend(&engine, &actor, &filter, Run::ToTheEnd)
                .await
                .map(|j| serde_json::to_value(j).unwrap_or_default())
        }
        OutboxCommand::Recover { sink, since, actor } => {
            outbox::start_recover(&engine, &actor, &sink, &since, Run::ToTheEnd)
                .await
                .map(|j| serde_json::to_value(j).unwrap_or_default())
        }
        OutboxCommand::RetryNow {
            sink,
            reason,
            actor,
        } => crate::outbox::sinks::retry_now(&engine, &actor, &sink, &reason)
            .await
            .map(|r| {
                serde_json::json!({ "sink": r.sink, "made_due": r.made_due, "detail": r.detail() })
            })
            .map_err(|e| match e {
                AppError::NotFound => AppError::Invalid {
                    detail: format!("no sink {sink} is configured"),
                },
                e => e,
            }),
    };
    match done {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ AppError::Internal { .. }) => Err(anyhow::anyhow!("{e}")),
        Err(e) => {
            eprintln!("reckon: error: {}", refusal(&e));
            Ok(ExitCode::from(2))
        }
    }
}

/// A refusal's own words.
fn refusal(e: &AppError) -> String {
    match e {
        AppError::Invalid { detail } | AppError::Refused { detail } => detail.clone(),
        AppError::NotFound => "no such message".into(),
        other => other.to_string(),
    }
}

/// A checkpoint given as its line, or as a file holding it.
fn read_checkpoint(arg: &str) -> Result<audit::Checkpoint, String> {
    let text = if arg.trim_start().starts_with("reckon-audit-checkpoint") {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read checkpoint {arg}: {e}"))?
    };
    audit::Checkpoint::parse(&text)
}

fn parse_role(s: &str) -> Result<Role, String> {
    s.parse()
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load() {
        Ok(c) => c,
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
        } => {
            use crate::providers::signing::Secret;
            use crate::sandbox_server::{Chaos, SandboxServer};
            let secret = match secret {
                Some(s) => Secret::parse(&s).map_err(|e| anyhow::anyhow!("--secret: {e}"))?,
                None => Secret::random(),
            };
            let chaos: Chaos = match chaos {
                Some(json) => {
                    serde_json::from_str(&json).context("--chaos is not valid chaos JSON")?
                }
                None => Chaos::default(),
            };
            let server = SandboxServer::new(&notify, secret.clone(), chaos);
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            println!("sandbox listening on http://{}", listener.local_addr()?);
            println!("webhook secret: {}", secret.to_whsec());
            axum::serve(listener, server.router())
                .with_graceful_shutdown(shutdown_signal())
                .await?;
        }
        Command::Serve { demo } => serve(&config, demo).await?,
        Command::Migrate => {
            let db = open_database(&config).await?;
            println!("migrations applied to {}", db.display_url);
        }
        Command::User(cmd) => user(&config, cmd).await?,
        Command::Token(TokenCommand::Create { name }) => {
            let accounts = accounts(&config).await?;
            let token = accounts.create_token(&Actor::cli(), &name).await?;
            println!("{token}");
        }
        Command::Recon(ReconCommand::Import {
            provider,
            date,
            file,
            accept_bad_lines,
        }) => {
            if !file.is_file() {
                anyhow::bail!("cannot read {}: not a file", file.display());
            }
            let engine = crate::startup::engine_of(&config).await?;
            let name = file.file_name().map(|n| n.to_string_lossy().to_string());
            let imp = crate::recon::Import {
                provider: &provider,
                business_date: &date,
                source: "import",
                file_name: name.as_deref(),
                input: crate::recon::Input::File(file.clone()),
                started_by: "cli",
                accept_bad_lines,
                run_id: None,
                hash: None,
            };
            return report_run(crate::recon::import_statement(&engine, imp).await);
        }
        Command::Bank(BankCommand::Import {
            file,
            format,
            csv_columns,
        }) => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let engine = crate::startup::engine_of(&config).await?;
            let name = file.file_name().map(|n| n.to_string_lossy().to_string());
            let imp = crate::bank::BankImport {
                bytes: &bytes,
                file_name: name.as_deref(),
                format: format.as_deref(),
                csv_columns: csv_columns.as_deref(),
                actor: "cli",
            };
            match crate::bank::import(&engine, imp).await {
                Ok(imported) => println!("{}", serde_json::to_string_pretty(&imported)?),
                Err(crate::bank::BankError::Refused(why)) => {
                    eprintln!("reckon: the bank statement was refused: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Command::Bank(BankCommand::Match) => {
            let engine = crate::startup::engine_of(&config).await?;
            let figures = crate::bank::match_payouts(&engine, engine.now()).await?;
            println!("{}", serde_json::to_string_pretty(&figures)?);
        }
        Command::Recon(ReconCommand::Pull { provider, date }) => {
            let engine = crate::startup::engine_of(&config).await?;
            return report_run(
                crate::recon::pull_statement(&engine, &provider, &date, "cli").await,
            );
        }
        Command::Recon(ReconCommand::Resume { run_id }) => {
            let engine = crate::startup::engine_of(&config).await?;
            return report_run(crate::recon::resume_run(&engine, &run_id).await);
        }
        Command::Payment(PaymentCommand::Release {
            payment_no,
            note,
            actor,
        }) => {
            let engine = crate::startup::engine_of(&config).await?;
            match crate::recon::release_hold(&engine, &actor, &payment_no, &note).await {
                Ok(reason) => println!("released {payment_no} (was held: {reason})"),
                Err(crate::recon::ReconError::Invalid(why)) => {
                    eprintln!("reckon: error: {why}");
                    return Ok(ExitCode::from(2));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Command::Outbox(cmd) => return outbox(&config, cmd).await,
        Command::Audit(AuditCommand::Verify { against }) => {
            let checkpoint = match against.as_deref().map(read_checkpoint).transpose() {
                Ok(cp) => cp,
                Err(why) => {
                    eprintln!("reckon: error: {why}");
                    return Ok(ExitCode::from(2));
                }
            };
            let db = open_database(&config).await?;
            if let Some(cp) = &checkpoint
                && let Err(why) = cp.is_genuine(&db.audit)
            {
                eprintln!("reckon: {why}");
                return Ok(ExitCode::FAILURE);
            }
            let verdict = audit::verify(&db.pool, &db.audit, checkpoint.as_ref()).await?;
            match verdict.first_broken {
                None => {
                    let mut line = format!("audit log intact: {} entries", verdict.entries);
                    if verdict.unkeyed > 0 {
                        line += &format!(
                            " ({} from before the log was keyed, SHA-256 only)",
                            verdict.unkeyed
                        );
                    }
                    if let Some(cp) = &checkpoint {
                        line += &format!("; unchanged up to entry {} since {}", cp.seq, cp.at);
                    }
                    println!("{line}");
                }
                Some((seq, why)) => {
                    eprintln!("reckon: audit log broken at entry {seq}: {why}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        Command::Audit(AuditCommand::Checkpoint) => {
            let db = open_database(&config).await?;
            println!("{}", audit::checkpoint(&db.pool, &db.audit).await?.line());
        }
        Command::Audit(AuditCommand::RotateKey) => {
            let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
            match crate::store::audit_keys::Keys::rotate(&config.data_dir, env)? {
                crate::store::audit_keys::Rotated::Written { id, path } => println!(
                    "new audit key {id} added to {}; restart the server to sign with it",
                    path.display()
                ),
                crate::store::audit_keys::Rotated::Printed { id, key } => {
                    println!(
                        "new audit key {id}: set RECKON_AUDIT_KEY to it and add the old key to RECKON_AUDIT_OLD_KEYS, then restart"
                    );
                    println!("{key}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A run as JSON on standard output; a refused statement is one line on
/// standard error and a failing exit.
fn report_run(
    result: Result<crate::recon::RunRow, crate::recon::ReconError>,
) -> anyhow::Result<ExitCode> {
    match result {
        Ok(run) => {
            if let Some(note) = &run.note {
                eprintln!("reckon: {note}");
            }
            println!("{}", serde_json::to_string_pretty(&run)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(crate::recon::ReconError::Refused(why)) => {
            eprintln!("reckon: the statement was refused: {why}");
            Ok(ExitCode::FAILURE)
        }
        Err(crate::recon::ReconError::Invalid(why)) => {
            eprintln!("reckon: error: {why}");
            Ok(ExitCode::from(2))
        }
        // EX_TEMPFAIL: the same command works once the other pull ends.
        Err(crate::recon::ReconError::Busy(why)) => {
            eprintln!("reckon: busy: {why}");
            Ok(ExitCode::from(75))
        }
        Err(e) => Err(e.into()),
    }
}

async fn accounts(config: &Config) -> anyhow::Result<Accounts> {
    Ok(Accounts::new(open_database(config).await?, Metrics::new()))
}

async fn serve(config: &Config, demo: bool) -> anyhow::Result<()> {
    let options = crate::startup::Options {
        demo,
        ..Default::default()
    };
    let app = Application::build_with(config, options).await?;
    let url = format!("http://{}", app.addr());
    if demo {
        println!("Demo users (new passwords at every start):");
        for (name, role) in [
            ("admin", Role::Admin),
            ("supervisor", Role::Supervisor),
            ("operator", Role::Operator),
        ] {
            let password = app.accounts.ensure_demo_user(name, role).await?;
            println!("  {name:<11} {password}  ({role})");
        }
    } else if !app.accounts.has_users().await? {
        println!(
            "No users yet. Create the first admin with:\n  reckon user add --username admin --role admin   (reads the password from stdin)"
        );
    }
    println!("Reckon is listening on {url}");
    tracing::info!(%url, database = %app.accounts.db.display_url, "listening");
    app.run_until(shutdown_signal()).await
}

async fn user(config: &Config, cmd: UserCommand) -> anyhow::Result<()> {
    match cmd {
        UserCommand::Add {
            username,
            role,
            password_file,
        } => {
            let password = read_password(password_file.as_deref())?;
            let accounts = accounts(config).await?;
            let user = accounts
                .create_user(&Actor::cli(), &username, role, &password)
                .await?;
            println!("created user {} ({})", user.username, user.role);
        }
        UserCommand::Passwd {
            username,
            password_file,
        } => {
            let password = read_password(password_file.as_deref())?;
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            accounts
                .reset_password(&Actor::cli(), &user.id, &password)
                .await?;
            println!("password changed for {}", user.username);
        }
        UserCommand::Disable { username } => {
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            accounts.set_disabled(&Actor::cli(), &user.id, true).await?;
            println!("disabled {}", user.username);
        }
    }
    Ok(())
}

/// From a file, a terminal prompt (not echoed, asked twice), or piped
/// standard input; one trailing newline is dropped.
fn read_password(file: Option<&Path>) -> anyhow::Result<String> {
    let text = if let Some(file) = file {
        std::fs::read_to_string(file)
            .with_context(|| format!("cannot read password file {}", file.display()))?
    } else if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let again = rpassword::prompt_password("Password again: ")?;
        if first != again {
            bail!("the two passwords differ; nothing was changed");
        }
        first
    } else {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("cannot read the password from standard input")?;
        buf
    };
    let password = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text)
        .to_owned();
    if password.is_empty() {
        bail!("no password given: pipe it on standard input or use --password-file FILE");
    }
    Ok(password)
}
