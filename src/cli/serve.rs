//! `reckon serve` and `reckon sandbox`: the server, and the sandbox
//! provider's own server.

use crate::config::Config;
use crate::startup::{Application, shutdown_signal};
use anyhow::Context;
use app::types::Role;

pub(super) async fn sandbox(
    listen: std::net::SocketAddr,
    notify: &str,
    secret: Option<String>,
    chaos: Option<String>,
) -> anyhow::Result<()> {
    use crate::providers::signing::Secret;
    use crate::sandbox_server::{Chaos, SandboxServer};
    let secret = match secret {
        Some(s) => Secret::parse(&s).map_err(|e| anyhow::anyhow!("--secret: {e}"))?,
        None => Secret::random(),
    };
    let chaos: Chaos = match chaos {
        Some(json) => serde_json::from_str(&json).context("--chaos is not valid chaos JSON")?,
        None => Chaos::default(),
    };
    let server = SandboxServer::new(notify, secret.clone(), chaos);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    println!("sandbox listening on http://{}", listener.local_addr()?);
    println!("webhook secret: {}", secret.to_whsec());
    axum::serve(listener, server.router())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

pub(super) async fn serve(config: &Config, demo: bool) -> anyhow::Result<()> {
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
