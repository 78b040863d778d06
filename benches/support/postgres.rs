//! A throwaway PostgreSQL 15 for a bench: its own cluster on a free port,
//! `fsync` and `synchronous_commit` on (the durability Reckon promises), the
//! settings the book's "Running on PostgreSQL" asks for; stopped and removed
//! when dropped. `initdb` and `postgres` refuse root, so as root they run
//! as the `postgres` user on a directory it owns.
#![allow(dead_code)] // not every bench measures PostgreSQL

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct Postgres {
    dir: PathBuf,
    pub port: u16,
}

fn as_postgres(program: &str) -> Command {
    let path = format!("{BIN}/{program}");
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", &path]);
        c
    } else {
        Command::new(path)
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Postgres {
    /// Starts a cluster; `None` when PostgreSQL 15 is not installed (the
    /// bench then says "not measured").
    pub fn start() -> Option<Postgres> {
        if !Path::new(BIN).join("initdb").exists() {
            return None;
        }
        let dir = std::env::temp_dir().join(format!("reckon-bench-pg.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if unsafe { libc::geteuid() } == 0 {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres:postgres").arg(&dir);
                    c
                },
                "chown",
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let data = dir.join("data");
        let mut init = as_postgres("initdb");
        init.arg("-D")
            .arg(&data)
            .args(["-U", "reckon", "--auth=trust", "-E", "UTF8"]);
        run(init, "initdb");
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300 \
             -c shared_buffers=1GB -c fsync=on -c synchronous_commit=on -c max_wal_size=8GB \
             -c checkpoint_timeout=30min",
            dir.display()
        );
        let mut start = as_postgres("pg_ctl");
        start
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("server.log"))
            .args(["-w", "-t", "60", "-o", &opts, "start"]);
        run(start, "pg_ctl start");
        Some(Postgres { dir, port })
    }

    /// The URL of database `name` (not created: see [`Postgres::create`]).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://reckon@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name`, a copy of `template` when given (a seeded
    /// database copied for each round, as SQLite's file is).
    pub async fn create(&self, name: &str, template: Option<&str>) -> String {
        use sqlx::{Connection, Executor};
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres"))
            .await
            .unwrap();
        conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
            .await
            .unwrap();
        let sql = match template {
            Some(t) => format!("CREATE DATABASE {name} TEMPLATE {t}"),
            None => format!("CREATE DATABASE {name}"),
        };
        conn.execute(sql.as_str()).await.unwrap();
        conn.close().await.unwrap();
        self.url(name)
    }

    /// CPU seconds the cluster's processes have used (user + system): the
    /// postmaster and its children now running (a backend that ended is
    /// not counted, so read it around work whose connections stay open).
    pub fn cpu_secs(&self) -> f64 {
        let pid_file = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).unwrap();
        let postmaster: u32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        let mut total = super::cpu_secs_of(postmaster).unwrap_or(0.0);
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if super::parent_of(pid) == Some(postmaster) {
                total += super::cpu_secs_of(pid).unwrap_or(0.0);
            }
        }
        total
    }

    /// The cluster's directory (its `server.log` is there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut stop = as_postgres("pg_ctl");
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"]);
        let _ = stop.output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
