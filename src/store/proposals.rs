//! The `fix_proposals` table: fixes proposed under the two-person rule.

/// A ticket that closes takes its waiting proposals with it: none can be
/// approved afterwards.
pub async fn supersede_pending(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    why: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE fix_proposals SET status = 'SUPERSEDED', result = $1 WHERE discrepancy_id = $2 AND status = 'PENDING'",
    )
    .bind(why)
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
