//! `reckon recon …`, `reckon bank …` and `reckon payment …`: statements
//! imported and pulled, bank statements matched, a hold's release proposed.

use crate::config::Config;
use anyhow::Context;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub(super) enum ReconCommand {
    /// Read a provider's statement for one business day (streamed from the
    /// file, any size) and reconcile the day; prints the run as JSON.
    Import {
        /// The provider account, as configured (e.g. alipay, wechat, sandbox).
        #[arg(long)]
        provider: String,
        /// The business day, YYYY-MM-DD, as the provider's statement cuts it.
        #[arg(long)]
        date: String,
        file: PathBuf,
        /// Skip up to this many malformed lines instead of refusing the
        /// statement (each is listed on the run; totals then go unchecked).
        #[arg(long, default_value_t = 0)]
        accept_bad_lines: u32,
        /// A preview: read, match and classify as the run would, write
        /// nothing (no run, ticket, repair or hold); prints the figures
        /// and their difference from the day's last run as JSON.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run a completed run's statement again as a preview under the
    /// matching rules in force, writing nothing; prints the figures and
    /// their difference from the day's last run as JSON.
    Preview { run_id: String },
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
    /// Write a completed run's results — every statement row with its
    /// outcome (MATCHED or its ticket's class), then the records the
    /// statement lacked — to a CSV or Parquet file.
    Export {
        run_id: String,
        #[arg(long, value_enum, default_value = "csv")]
        format: crate::console::run_export::Format,
        /// The file to write (written aside, then moved in place, so a
        /// failed export leaves none).
        #[arg(long)]
        out: PathBuf,
    },
    /// Fetch a day's balance bill (WeChat Pay's fund-flow bill, Alipay's
    /// 账务明细) and settle it against the day's reconciled trade bill;
    /// prints the settlement as JSON.
    Settle {
        #[arg(long)]
        provider: String,
        #[arg(long)]
        date: String,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum ReportCommand {
    /// A business day's report: each provider's close figures (or its
    /// latest run's), fees and net, value at risk, and the open tickets by
    /// age band; printed as CSV, or as a printable HTML page.
    Daily {
        /// The business day, YYYY-MM-DD.
        #[arg(long)]
        date: String,
        /// Print the HTML page instead of the CSV.
        #[arg(long)]
        html: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum BankCommand {
    /// Import a bank statement (ISO 20022 camt.053 XML, SWIFT MT940, BAI2
    /// or CSV) and match
    /// the providers' payouts against it; prints what was stored and
    /// decided as JSON. The same file twice changes nothing.
    Import {
        file: PathBuf,
        /// camt053, mt940, bai2 or csv (default: told by the content; XML
        /// is camt.053, `:20:` fields MT940, `01,` BAI2, anything else CSV).
        #[arg(long)]
        format: Option<String>,
        /// The CSV's columns, `field=Header;…` over the default
        /// date,amount,currency,reference,counterparty,direction.
        #[arg(long)]
        csv_columns: Option<String>,
    },
    /// Match payouts against the bank's credits now; prints what was decided.
    Match,
    /// The cash expected at the bank per day and what arrived, per
    /// provider account and currency, with each provider's learned payout
    /// delay; prints JSON (as `GET /api/v1/bank/expected`).
    Expected {
        /// First day, YYYY-MM-DD (default: a week before today).
        #[arg(long)]
        from: Option<String>,
        /// Last day, YYYY-MM-DD (default: two weeks after today).
        #[arg(long)]
        to: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum DisputeCommand {
    /// The providers' disputes (chargebacks, inquiries), newest opened
    /// first (at most 500), with the money each moved, as JSON.
    List {
        /// Only this provider account's.
        #[arg(long)]
        provider: Option<String>,
        /// Only those in this status: INQUIRY, OPEN, EVIDENCE_SUBMITTED,
        /// WON, LOST or INQUIRY_CLOSED.
        #[arg(long)]
        status: Option<String>,
    },
}

pub(super) async fn dispute(config: &Config, cmd: DisputeCommand) -> anyhow::Result<ExitCode> {
    let DisputeCommand::List { provider, status } = cmd;
    if let Some(s) = status.as_deref()
        && s.parse::<crate::domain::DisputeStatus>().is_err()
    {
        eprintln!(
            "reckon: status {}: expected one of INQUIRY, OPEN, EVIDENCE_SUBMITTED, WON, LOST, INQUIRY_CLOSED",
            crate::domain::quote(s)
        );
        return Ok(ExitCode::FAILURE);
    }
    let engine = crate::startup::engine_of(config).await?;
    let db = &engine.db;
    let rows =
        crate::store::disputes::list(&db.pool, db.kind, provider.as_deref(), status.as_deref())
            .await?;
    let listed: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|l| {
            let mut v = serde_json::to_value(&l.dispute).unwrap_or_default();
            v["withdrawn_minor"] = l.withdrawn_minor.into();
            v["reinstated_minor"] = l.reinstated_minor.into();
            v["fee_minor"] = l.fee_minor.into();
            v
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&listed)?);
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand, Debug)]
pub(super) enum PaymentCommand {
    /// Propose lifting reconciliation's hold on a payment (LOCAL_ONLY,
    /// ONE_TO_MANY): a RELEASE_HOLD fix on the payment's ticket, proposed
    /// as `cli`, which a supervisor approves (or rejects) in the console.
    /// The hold stays until then.
    Release {
        payment_no: String,
        /// Why the hold may go (the proposal's reason).
        #[arg(long)]
        note: String,
        /// What shows it (the proposal's evidence).
        #[arg(long)]
        evidence: Option<String>,
        /// No longer taken: the command line is no console user and names
        /// none. Say who asked in --note.
        #[arg(long, hide = true)]
        actor: Option<String>,
    },
}

pub(super) async fn recon(config: &Config, cmd: ReconCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ReconCommand::Import {
            provider,
            date,
            file,
            accept_bad_lines,
            dry_run,
        } => {
            if !file.is_file() {
                anyhow::bail!("cannot read {}: not a file", file.display());
            }
            let engine = crate::startup::engine_of(config).await?;
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
            if dry_run {
                return report_preview(crate::recon::preview_statement(&engine, imp, None).await);
            }
            report_run(crate::recon::import_statement(&engine, imp).await)
        }
        ReconCommand::Preview { run_id } => {
            let engine = crate::startup::engine_of(config).await?;
            report_preview(crate::recon::preview_run(&engine, &run_id, None).await)
        }
        ReconCommand::Pull { provider, date } => {
            let engine = crate::startup::engine_of(config).await?;
            report_run(crate::recon::pull_statement(&engine, &provider, &date, "cli").await)
        }
        ReconCommand::Resume { run_id } => {
            let engine = crate::startup::engine_of(config).await?;
            report_run(crate::recon::resume_run(&engine, &run_id).await)
        }
        ReconCommand::Export {
            run_id,
            format,
            out,
        } => {
            let engine = crate::startup::engine_of(config).await?;
            export_results(&engine, &run_id, format, &out).await
        }
        ReconCommand::Settle { provider, date } => {
            let engine = crate::startup::engine_of(config).await?;
            match crate::recon::settle_day(&engine, &provider, &date).await {
                Ok(settled) => {
                    println!("{}", serde_json::to_string_pretty(&settled)?);
                    Ok(ExitCode::SUCCESS)
                }
                Err(crate::recon::ReconError::Refused(why)) => {
                    eprintln!("reckon: the balance bill was refused: {why}");
                    Ok(ExitCode::FAILURE)
                }
                Err(crate::recon::ReconError::Invalid(why)) => {
                    eprintln!("reckon: error: {why}");
                    Ok(ExitCode::from(2))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

pub(super) async fn bank(config: &Config, cmd: BankCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BankCommand::Import {
            file,
            format,
            csv_columns,
        } => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let engine = crate::startup::engine_of(config).await?;
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
        BankCommand::Match => {
            let engine = crate::startup::engine_of(config).await?;
            let figures = crate::bank::match_payouts(&engine, engine.now()).await?;
            println!("{}", serde_json::to_string_pretty(&figures)?);
        }
        BankCommand::Expected { from, to } => {
            let engine = crate::startup::engine_of(config).await?;
            match crate::bank::cash::expected_cash(&engine, from.as_deref(), to.as_deref()).await {
                Ok(cash) => println!("{}", serde_json::to_string_pretty(&cash)?),
                Err(crate::bank::BankError::Refused(why)) => {
                    eprintln!("reckon: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn payment(config: &Config, cmd: PaymentCommand) -> anyhow::Result<ExitCode> {
    let PaymentCommand::Release {
        payment_no,
        note,
        evidence,
        actor,
    } = cmd;
    if actor.is_some() {
        eprintln!(
            "reckon: error: --actor is no longer taken: the command line proposes the release as `cli` \
             and a supervisor approves it in the console; say who asked in --note"
        );
        return Ok(ExitCode::from(2));
    }
    let evidence = evidence.unwrap_or_else(|| "none given on the command line".into());
    let engine = crate::startup::engine_of(config).await?;
    match crate::triage::fixes::propose_release_from_host(&engine, &payment_no, &note, &evidence)
        .await
    {
        Ok(r) => {
            if r.reopened {
                println!(
                    "reopened ticket {} (it was closed with {payment_no} still held)",
                    r.ticket
                );
            }
            println!(
                "proposed releasing the hold on {payment_no} ({}): proposal {} on ticket {}; \
                 the hold stays until a supervisor approves it in the console",
                r.hold_reason, r.proposal, r.ticket
            );
        }
        Err(e @ app::error::AppError::Internal { .. }) => return Err(e.into()),
        Err(e) => {
            eprintln!("reckon: error: {e}");
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A run as JSON on standard output; a refused statement is one line on
/// standard error and a failing exit.
fn report_run(
    result: Result<crate::recon::RunRow, crate::recon::ReconError>,
) -> anyhow::Result<ExitCode> {
    if let Ok(run) = &result
        && let Some(note) = &run.note
    {
        eprintln!("reckon: {note}");
    }
    report_preview(result)
}

/// A run's or a preview's answer as JSON, or why not with its exit code.
fn report_preview<T: serde::Serialize>(
    result: Result<T, crate::recon::ReconError>,
) -> anyhow::Result<ExitCode> {
    match result {
        Ok(answer) => {
            println!("{}", serde_json::to_string_pretty(&answer)?);
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

/// `reckon recon export`: the run's results written to `out`; the rows
/// written, on standard error.
async fn export_results(
    engine: &crate::engine::Engine,
    run_id: &str,
    format: crate::console::run_export::Format,
    out: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let run = match crate::recon::results_of(engine, run_id).await {
        Ok(Some(run)) => run,
        Ok(None) => {
            eprintln!("no run {run_id}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut aside = out.as_os_str().to_owned();
    aside.push(".partial");
    let aside = PathBuf::from(aside);
    let file = std::fs::File::create(&aside)
        .with_context(|| format!("cannot write {}", aside.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let mut pieces = crate::console::run_export::stream(engine.clone(), run, format);
    let mut bytes = 0u64;
    while let Some(piece) = pieces.recv().await {
        let written = piece.and_then(|p| {
            bytes += p.len() as u64;
            file.write_all(&p)
        });
        if let Err(e) = written {
            drop(file);
            let _ = std::fs::remove_file(&aside);
            eprintln!("the export stopped: {e}");
            return Ok(ExitCode::FAILURE);
        }
    }
    file.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .with_context(|| format!("cannot write {}", aside.display()))?;
    std::fs::rename(&aside, out).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!("run {run_id}: {bytes} bytes written to {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// `reckon report …`.
pub(super) async fn report(config: &Config, command: ReportCommand) -> anyhow::Result<ExitCode> {
    match command {
        ReportCommand::Daily { date, html } => {
            let engine = crate::startup::engine_of(config).await?;
            match crate::recon::daily_report(&engine, &date).await {
                Ok(r) => {
                    print!("{}", if html { r.html() } else { r.csv() });
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}
