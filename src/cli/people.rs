//! `reckon user …` and `reckon token …`: console users and merchant API
//! tokens, each change audited as the command line.

use crate::accounts::{Accounts, Actor, TokenRequest};
use crate::config::Config;
use crate::context::SystemClock;
use crate::metrics::Metrics;
use crate::startup::open_database;
use anyhow::{Context, bail};
use app::error::AppError;
use app::tokens::Scope;
use app::types::Role;
use clap::Subcommand;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        /// The user signs in through the configured identity provider
        /// (`[oidc]`) as this subject (its `sub` claim): no password is
        /// asked or kept.
        #[arg(long, conflicts_with = "password_file")]
        oidc_subject: Option<String>,
    },
    /// Bind an existing user to a subject (`sub` claim) of the configured
    /// identity provider: their next sign-in through it is theirs.
    Bind {
        #[arg(long)]
        username: String,
        #[arg(long)]
        oidc_subject: String,
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
    /// List a user's live console sessions: when each began and was last
    /// seen, and where from.
    Sessions { username: String },
    /// End every live console session of a user (each is audited as the
    /// command line).
    EndSessions { username: String },
    /// Show whether a user has a second factor, whether their role needs
    /// one, and how many recovery codes they have left.
    Mfa { username: String },
    /// Remove a user's second factor (for one who lost it, or an admin
    /// locked out): every session of theirs ends, and they enrol again at
    /// their next sign-in if their role needs it.
    MfaReset { username: String },
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
        /// What it may do: scopes separated by commas, or `all` for every
        /// scope (payments:read, payments:write, refunds:write,
        /// recon:read, recon:write, statements:download, bank:read,
        /// bank:write, outbox:read, outbox:write, sinks:write,
        /// webhooks:read).
        #[arg(long, value_delimiter = ',', required = true)]
        scope: Vec<String>,
        /// Days until it stops working; without it, it never expires.
        #[arg(long)]
        expires_days: Option<u32>,
        /// The user answerable for it: while they are disabled, it is
        /// refused.
        #[arg(long)]
        owner: Option<String>,
    },
    /// List every token (never the tokens themselves): name, prefix,
    /// owner, scopes, created, expires, last used, revoked.
    List,
    /// Revoke a token by name: its next call is refused.
    Revoke { name: String },
}

fn parse_role(s: &str) -> Result<Role, String> {
    s.parse()
}

pub(super) async fn user(config: &Config, cmd: UserCommand) -> anyhow::Result<()> {
    match cmd {
        UserCommand::Add {
            username,
            role,
            oidc_subject: Some(subject),
            ..
        } => {
            let issuer = oidc_issuer(config)?;
            let accounts = accounts(config).await?;
            let user = accounts
                .create_sso_user(&Actor::cli(), &username, role, issuer, &subject)
                .await?;
            println!(
                "created user {} ({}), signing in through {issuer} as {subject}",
                user.username, user.role
            );
        }
        UserCommand::Bind {
            username,
            oidc_subject,
        } => {
            let issuer = oidc_issuer(config)?;
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            accounts
                .bind_identity(&Actor::cli(), &user.id, issuer, &oidc_subject)
                .await?;
            println!(
                "{} signs in through {issuer} as {oidc_subject}",
                user.username
            );
        }
        UserCommand::Add {
            username,
            role,
            password_file,
            oidc_subject: None,
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
        UserCommand::Mfa { username } => {
            let accounts = accounts(config).await?;
            let (user, status) = accounts.mfa_of(&username).await?;
            println!(
                "{}: second factor {}; {} by role {}; {} recovery codes left",
                user.username,
                if status.enrolled {
                    "set up"
                } else {
                    "not set up"
                },
                if status.required {
                    "required"
                } else {
                    "not required"
                },
                user.role,
                status.recovery_left
            );
        }
        UserCommand::MfaReset { username } => {
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            accounts.mfa_reset(&Actor::cli(), &user.id).await?;
            println!(
                "second factor of {} removed; their sessions ended",
                user.username
            );
        }
        UserCommand::Sessions { username } => {
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            let (user, sessions) = accounts.sessions_of(&user.id).await?;
            if sessions.is_empty() {
                println!("{} has no live sessions", user.username);
            }
            for s in sessions {
                println!(
                    "{}  started {}  last seen {}  from {}  {}",
                    s.id,
                    utc(s.created_at),
                    utc(s.last_seen_at),
                    s.address,
                    s.user_agent
                );
            }
        }
        UserCommand::EndSessions { username } => {
            let accounts = accounts(config).await?;
            let user = accounts.by_username(&username).await?;
            let ended = accounts.end_sessions(&Actor::cli(), &user.id).await?;
            println!("ended {ended} sessions of {}", user.username);
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

/// A time as UTC, to the second.
fn utc(micros: i64) -> String {
    jiff::Timestamp::from_microsecond(micros)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| micros.to_string())
}
pub(super) async fn token(config: &Config, cmd: TokenCommand) -> anyhow::Result<()> {
    let accounts = accounts(config).await?;
    match cmd {
        TokenCommand::Create {
            name,
            scope,
            expires_days,
            owner,
        } => {
            let scopes = Scope::parse_list(scope.iter().map(String::as_str))
                .map_err(|e| anyhow::anyhow!("--scope: {e}"))?;
            let owner_id = match owner {
                Some(username) => match accounts.by_username(&username).await {
                    Ok(user) => Some(user.id),
                    Err(AppError::NotFound | AppError::InvalidUsername) => {
                        bail!("--owner: no user named `{username}`; nothing was created")
                    }
                    Err(e) => return Err(e.into()),
                },
                None => None,
            };
            let req = TokenRequest {
                name,
                scopes,
                expires_days,
                owner_id,
            };
            let made = accounts.create_token(&Actor::cli(), &req).await?;
            println!("{}", made.token);
        }
        TokenCommand::List => {
            let tokens = accounts.list_tokens().await?;
            println!("NAME\tPREFIX\tOWNER\tSCOPES\tCREATED\tEXPIRES\tLAST USED\tREVOKED");
            for t in tokens {
                let scopes = match &t.scopes {
                    Some(s) => s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","),
                    None => "(every scope: made before scopes)".to_owned(),
                };
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    t.name,
                    t.prefix,
                    t.owner.as_deref().unwrap_or("-"),
                    scopes,
                    when(Some(t.created_at), "-"),
                    when(t.expires_at, "never"),
                    when(t.last_used_at, "never"),
                    when(t.revoked_at, "-"),
                );
            }
        }
        TokenCommand::Revoke { name } => {
            let token = match accounts.token_by_name(&name).await {
                Ok(token) => token,
                Err(AppError::NotFound) => bail!("no token named `{name}`"),
                Err(e) => return Err(e.into()),
            };
            accounts.revoke_token(&Actor::cli(), &token.id).await?;
            println!("revoked token {}", token.name);
        }
    }
    Ok(())
}

/// A time in the list: RFC 3339 in UTC, or `none` when there is none.
fn when(micros: Option<i64>, none: &str) -> String {
    micros
        .and_then(|m| jiff::Timestamp::from_microsecond(m).ok())
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| none.to_owned())
}

/// The configured identity provider's issuer, which a subject belongs to.
fn oidc_issuer(config: &Config) -> anyhow::Result<&str> {
    match &config.oidc {
        Some(oidc) => Ok(&oidc.issuer),
        None => bail!(
            "no identity provider is configured: add an [oidc] section to the config file first"
        ),
    }
}

async fn accounts(config: &Config) -> anyhow::Result<Accounts> {
    Ok(Accounts::new(open_database(config).await?, Metrics::new())
        .with_sign_in(config.sign_in, Arc::new(SystemClock)))
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
