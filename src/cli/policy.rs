//! `reckon policy show`: the approval policy in force (its version, digest
//! and rules) and the change waiting for approval, if any. Changes are made
//! in the console, where another admin approves them.

use crate::config::Config;
use crate::policy::changes;
use crate::startup::open_database;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub(super) enum PolicyCommand {
    /// Print the policy in force and the change waiting, if any.
    Show {
        /// As JSON, for a program.
        #[arg(long)]
        json: bool,
    },
}

pub(super) async fn policy(config: &Config, cmd: PolicyCommand) -> anyhow::Result<()> {
    let PolicyCommand::Show { json } = cmd;
    let db = open_database(config).await?;
    let page = changes::page(&db).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(());
    }
    let a = &page.active;
    println!(
        "approval policy version {} (digest {})",
        a.version, a.digest
    );
    if a.version == 0 {
        println!("built in: one approver besides the proposer for every action");
    } else {
        println!(
            "proposed by {}, approved by {}: {}",
            a.proposer,
            a.approved_by.join(", "),
            a.reason
        );
    }
    print!("{}", a.text);
    if let Some(p) = &page.pending {
        println!(
            "\nwaiting for approval ({} of {} approvals), proposed by {}: {}",
            p.approved_by.len(),
            p.required,
            p.proposer,
            p.reason
        );
        print!("{}", p.text);
    }
    Ok(())
}
