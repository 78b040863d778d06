//! Bad input at start: one clear line on stderr, a non-zero exit, nothing
//! half-created.

use std::process::{Command, Output};

fn reckon(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reckon"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn help_explains_every_command() {
    let out = reckon(&["--help"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["serve", "migrate", "user", "token", "audit"] {
        assert!(text.contains(cmd), "{cmd} missing from --help");
    }
    let out = reckon(&["user", "--help"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["add", "passwd", "disable"] {
        assert!(text.contains(cmd), "{cmd} missing from user --help");
    }
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = reckon(&["serve", "--colour"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let first = stderr(&out).lines().next().unwrap_or_default().to_owned();
    assert!(first.contains("unexpected argument '--colour'"), "{first}");
}

#[test]
fn a_malformed_config_file_is_one_line_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reckon.toml");
    std::fs::write(&file, "listen = [unclosed\n").unwrap();
    let data = dir.path().join("data");
    let out = reckon(
        &["migrate"],
        &[
            ("RECKON_CONFIG", file.to_str().unwrap()),
            ("RECKON_DATA_DIR", data.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("reckon.toml") && err.contains("not valid"),
        "{err}"
    );
    assert!(!data.exists());

    let out = reckon(
        &["migrate"],
        &[("RECKON_CONFIG", "/nonexistent/reckon.toml")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read config file /nonexistent/reckon.toml"));
}

#[test]
fn an_unreachable_database_is_one_line_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = reckon(
        &["migrate"],
        &[
            (
                "DATABASE_URL",
                "postgres://reckon:s3cret@127.0.0.1:1/reckon",
            ),
            ("RECKON_DATA_DIR", data.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot open the database at postgres://reckon:***@127.0.0.1:1/reckon"),
        "{err}"
    );
    assert!(err.contains("DATABASE_URL"), "{err}");
    assert!(!err.contains("s3cret"));
    assert!(!data.exists());
}

#[test]
fn an_unwritable_data_directory_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let data = blocker.join("data");
    let out = reckon(&["migrate"], &[("RECKON_DATA_DIR", data.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot create data directory") && err.contains("RECKON_DATA_DIR"),
        "{err}"
    );
}

#[test]
fn a_bad_environment_value_names_the_variable() {
    let out = reckon(&["migrate"], &[("RECKON_TIMEZONE", "Mars/Olympus")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("RECKON_TIMEZONE=`Mars/Olympus`"));
    let out = reckon(&["serve"], &[("RECKON_LISTEN", "everywhere")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("RECKON_LISTEN"));
}
