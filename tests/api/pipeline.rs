//! The write pipeline a reconciliation writes its tickets through: steps
//! run in order on one connection, commits only where asked, and a failed
//! step or a pipeline dropped half-way keeps nothing since the last commit.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use reckon::store::Db;
use reckon::store::pipeline::{Pipeline, op, statement};

/// A test alert: its id, its dedupe key, its message.
const INSERT_ALERT: &str = "INSERT INTO alerts (alert_id, dedupe_key, kind, severity, message, created_at) \
     VALUES ($1, $2, 'test', 'info', $3, 0)";

/// An alert with this id, as one pipeline step.
fn insert_alert(id: &str) -> reckon::store::pipeline::WriteOp {
    let mut args = sqlx::any::AnyArguments::default();
    sqlx::Arguments::add(&mut args, id.to_owned()).unwrap();
    sqlx::Arguments::add(&mut args, format!("key-{id}")).unwrap();
    sqlx::Arguments::add(&mut args, "m").unwrap();
    statement(INSERT_ALERT.to_owned(), args)
}

/// The alert with this id written by a transaction of its own, outside any
/// pipeline (so it waits for a pipeline's open transaction), then kept or
/// rolled back.
async fn insert_alone(db: &Db, id: &str, message: &str, keep: bool) -> sqlx::Result<()> {
    let mut conn = db.pool.acquire().await?;
    let mut tx = db.begin_write_on(&mut conn).await?;
    sqlx::query(INSERT_ALERT)
        .bind(id)
        .bind(format!("key-{id}"))
        .bind(message)
        .execute(&mut *tx)
        .await?;
    if keep {
        tx.commit().await
    } else {
        tx.rollback().await
    }
}

async fn ids(db: &Db) -> Vec<String> {
    sqlx::query_scalar("SELECT alert_id FROM alerts WHERE kind = 'test' ORDER BY alert_id")
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

async fn steps_run_in_order_and_only_what_was_committed_stays(b: Backend) {
    let app = spawn_app(b).await;
    let db = &app.engine.db;

    // Committed twice, finished: all of it, in order (a step reads what
    // the steps before it wrote).
    let pipe = Pipeline::start(db).await.unwrap();
    pipe.send(insert_alert("a1")).await.unwrap();
    pipe.commit().await.unwrap();
    pipe.send(insert_alert("a2")).await.unwrap();
    pipe.send(op(|conn| {
        Box::pin(async move {
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE kind = 'test'")
                .fetch_one(&mut *conn)
                .await?;
            assert_eq!(n, 2, "a step sees the steps before it");
            Ok(())
        })
    }))
    .await
    .unwrap();
    pipe.finish().await.unwrap();
    assert_eq!(ids(db).await, ["a1", "a2"]);

    // A step fails after a commit: finish returns its error, the commit
    // stays, what came after it does not.
    let pipe = Pipeline::start(db).await.unwrap();
    pipe.send(insert_alert("b1")).await.unwrap();
    pipe.commit().await.unwrap();
    pipe.send(insert_alert("b2")).await.unwrap();
    pipe.send(insert_alert("a1")).await.unwrap(); // the same primary key
    // Steps sent after the failure are refused, or dropped unrun.
    let _ = pipe.send(insert_alert("b3")).await;
    let err = pipe.finish().await.unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("unique")
            || err.to_string().to_lowercase().contains("duplicate"),
        "the failed step's own error: {err}"
    );
    assert_eq!(ids(db).await, ["a1", "a2", "b1"]);

    // Dropped without `finish`: what was sent since the last commit is
    // rolled back. Proven by writing the same key afterwards, which waits
    // for the pipeline's transaction to end and succeeds only if it rolled
    // back.
    let pipe = Pipeline::start(db).await.unwrap();
    pipe.send(insert_alert("c1")).await.unwrap();
    pipe.commit().await.unwrap();
    pipe.send(insert_alert("c2")).await.unwrap();
    // Dropped only once c2 is written in the open transaction.
    let (written, wait) = tokio::sync::oneshot::channel::<()>();
    pipe.send(op(move |_| {
        Box::pin(async move {
            let _ = written.send(());
            Ok(())
        })
    }))
    .await
    .unwrap();
    wait.await.unwrap();
    drop(pipe);
    insert_alone(db, "c2", "again", true)
        .await
        .expect("the dropped pipeline's uncommitted row is gone");
    assert_eq!(ids(db).await, ["a1", "a2", "b1", "c1", "c2"]);
    let message: String = sqlx::query_scalar("SELECT message FROM alerts WHERE alert_id = 'c2'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(message, "again");

    // A step that panics: the connection, its transaction open, is closed
    // rather than handed back to the pool — which would keep the write lock
    // (SQLite) or the row's lock (PostgreSQL) for good and block this.
    let pipe = Pipeline::start(db).await.unwrap();
    pipe.send(insert_alert("d1")).await.unwrap();
    pipe.send(op(|_| Box::pin(async { panic!("a step that panics") })))
        .await
        .unwrap();
    assert!(pipe.finish().await.is_err());
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        insert_alone(db, "d1", "m", false),
    )
    .await
    .expect("no connection is left inside the panicked pipeline's transaction")
    .unwrap();
    assert_eq!(ids(db).await, ["a1", "a2", "b1", "c1", "c2"]);

    // SQLite: no connection is back in the pool with the pipeline's
    // settings: its statement journal in memory (`temp_store` 2) or commits
    // that do not wait for the disk (`synchronous` 1); each says the
    // defaults (0, and FULL: 2) again, or was closed.
    if db.kind == reckon::store::DbKind::Sqlite {
        let mut conns = Vec::new();
        for _ in 0..db.pool.size() {
            conns.push(db.pool.acquire().await.unwrap());
        }
        for conn in &mut conns {
            let store: i64 = sqlx::query_scalar("PRAGMA temp_store")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            assert_eq!(store, 0, "temp_store put back");
            let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            assert_eq!(synchronous, 2, "commits wait for the disk again (FULL)");
        }
    }
}

both_databases!(steps_run_in_order_and_only_what_was_committed_stays);
