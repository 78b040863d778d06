//! The audit log's tail, cut off by someone who can write the database
//! (the newest entries deleted and `audit_head` rewound so the chain still
//! verifies), is caught by the anchor the server keeps outside it: the
//! watch raises a CRITICAL alert and `reckon audit verify` fails — on
//! SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use app::types::Role;
use reckon::audit_anchor::{self, Watch};
use reckon::store::audit;

const PW: &str = "correct horse battery";

async fn a_deleted_tail_with_the_head_rewound_is_caught_by_the_anchor(b: Backend) {
    let app = spawn_app(b).await;
    let db = &app.accounts.db;
    let path = audit_anchor::path(&app.config.data_dir);
    for name in ["ann", "bob", "cat"] {
        app.add_user(name, Role::Operator, PW).await;
    }
    let (head, _) = audit::head(&db.pool).await.unwrap();
    assert!(head >= 3);
    // The watch anchors the head (the server's own loop may have been first).
    assert!(matches!(
        audit_anchor::watch(db, &path).await.unwrap(),
        Watch::Anchored(_) | Watch::Unchanged
    ));
    assert_eq!(audit_anchor::read(&path).unwrap().unwrap().seq, head);
    assert_eq!(
        audit_anchor::watch(db, &path).await.unwrap(),
        Watch::Unchanged
    );

    // The last two entries go, and the head is rewound to the one before.
    let keep = head - 2;
    let kept_hash = audit::hash_of(&db.pool, keep).await.unwrap().unwrap();
    sqlx::query("DELETE FROM audit_log WHERE seq > $1")
        .bind(keep)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(keep)
        .bind(&kept_hash)
        .execute(&db.pool)
        .await
        .unwrap();
    // The chain alone cannot tell: this is the hole the anchor closes.
    let alone = audit::verify(&db.pool, &db.audit, None).await.unwrap();
    assert_eq!(alone.first_broken, None);

    let out = app.cli(&["audit", "verify"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("ends at entry {keep}"))
            && err.contains(&format!("saw entry {head}")),
        "{err}"
    );

    let Watch::Tampered(why) = audit_anchor::watch(db, &path).await.unwrap() else {
        panic!("the watch missed the deleted tail");
    };
    assert!(why.contains("entries were deleted"), "{why}");
    let alerts: Vec<(String, String)> =
        sqlx::query_as("SELECT severity, message FROM alerts WHERE kind = 'audit_tampered'")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].0, "critical");
    // The anchor keeps what it saw: the evidence stays.
    assert_eq!(audit_anchor::read(&path).unwrap().unwrap().seq, head);
    // Writing new entries over the hole does not hide it.
    app.add_user("dan", Role::Operator, PW).await;
    app.add_user("eve", Role::Operator, PW).await;
    assert!(matches!(
        audit_anchor::watch(db, &path).await.unwrap(),
        Watch::Tampered(_)
    ));
}

async fn a_forged_anchor_is_refused(b: Backend) {
    let app = spawn_app(b).await;
    let db = &app.accounts.db;
    let path = audit_anchor::path(&app.config.data_dir);
    app.add_user("ann", Role::Operator, PW).await;
    let _ = audit_anchor::watch(db, &path).await.unwrap();
    let line = std::fs::read_to_string(&path).unwrap();
    // An anchor moved back by hand, to hide a deletion: its signature fails.
    let forged = line.replacen("seq=1 ", "seq=0 ", 1);
    assert_ne!(forged, line);
    std::fs::write(&path, forged).unwrap();
    let Watch::Tampered(why) = audit_anchor::watch(db, &path).await.unwrap() else {
        panic!("a forged anchor was taken");
    };
    assert!(why.contains("not genuine"), "{why}");
}

both_databases!(
    a_deleted_tail_with_the_head_rewound_is_caught_by_the_anchor,
    a_forged_anchor_is_refused,
);
