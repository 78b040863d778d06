//! `reckon audit …`: the audit log's chain verified, its head signed as a
//! checkpoint, and the audit key rotated.

use crate::config::Config;
use crate::startup::open_database;
use crate::store::audit;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub(super) enum AuditCommand {
    /// Walk the keyed hash chain of the audit log; report the first broken
    /// entry.
    Verify {
        /// A checkpoint line printed by `audit checkpoint` (or the file
        /// holding it): also prove that nothing up to it has changed.
        /// Without it, the anchor the server keeps beside the audit key
        /// (`audit.anchor`) is used when there is one.
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

pub(super) async fn audit(config: &Config, cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AuditCommand::Verify { against } => {
            let given = against.as_deref().map(read_checkpoint).transpose();
            // Without a checkpoint given, the anchor the server keeps.
            let anchor_path = crate::audit_anchor::path(&config.data_dir);
            let (checkpoint, from_anchor) = match given {
                Ok(Some(cp)) => (Some(cp), false),
                Ok(None) => match crate::audit_anchor::read(&anchor_path) {
                    Ok(cp) => (cp.clone(), cp.is_some()),
                    Err(why) => {
                        eprintln!("reckon: {why}");
                        return Ok(ExitCode::FAILURE);
                    }
                },
                Err(why) => {
                    eprintln!("reckon: error: {why}");
                    return Ok(ExitCode::from(2));
                }
            };
            let db = open_database(config).await?;
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
                        if from_anchor {
                            line += &format!(" (the anchor {})", anchor_path.display());
                        }
                    }
                    println!("{line}");
                }
                Some((seq, why)) => {
                    eprintln!("reckon: audit log broken at entry {seq}: {why}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        AuditCommand::Checkpoint => {
            let db = open_database(config).await?;
            println!("{}", audit::checkpoint(&db.pool, &db.audit).await?.line());
        }
        AuditCommand::RotateKey => {
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

/// A checkpoint given as its line, or as a file holding it.
fn read_checkpoint(arg: &str) -> Result<audit::Checkpoint, String> {
    let text = if arg.trim_start().starts_with("reckon-audit-checkpoint") {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read checkpoint {arg}: {e}"))?
    };
    audit::Checkpoint::parse(&text)
}
