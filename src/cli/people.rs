//! `reckon user …` and `reckon token …`: console users and merchant API
//! tokens, each change audited as the command line.

use crate::accounts::{Accounts, Actor};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::startup::open_database;
use anyhow::{Context, bail};
use app::types::Role;
use clap::Subcommand;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub(super) enum UserCommand {
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
    /// Set a user's role. A supervisor or admin role given here counts as
    /// confirmed (whoever runs this holds the database already); given
    /// again, it confirms a console grant waiting for a second admin.
    Role {
        #[arg(long)]
        username: String,
        /// operator, supervisor or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum TokenCommand {
    /// Create a merchant API token. The token is printed once, alone on
    /// standard output; only its hash is stored.
    Create {
        #[arg(long)]
        name: String,
    },
}

fn parse_role(s: &str) -> Result<Role, String> {
    s.parse()
}

pub(super) async fn user(config: &Config, cmd: UserCommand) -> anyhow::Result<()> {
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
        UserCommand::Role { username, role } => {
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            accounts.set_role(&Actor::cli(), &user.id, role).await?;
            let confirmed = if role.decides() {
                ", confirmed from the command line"
            } else {
                ""
            };
            println!("{} is {role}{confirmed}", user.username);
        }
    }
    Ok(())
}
pub(super) async fn token(config: &Config, cmd: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::Create { name } = cmd;
    let accounts = accounts(config).await?;
    let token = accounts.create_token(&Actor::cli(), &name).await?;
    println!("{token}");
    Ok(())
}

async fn accounts(config: &Config) -> anyhow::Result<Accounts> {
    Ok(Accounts::new(open_database(config).await?, Metrics::new()))
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
