//! The `statement_files` table: a run's original statement, gzipped, with
//! the SHA-256 of its bytes — the evidence its tickets point at — until
//! the retention pass deletes it.

use sqlx::{Any, Executor};

/// A kept file as written and read back.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct KeptFile {
    pub run_id: String,
    pub file_name: String,
    pub sha256: String,
    pub size_bytes: i64,
    pub gzip: Vec<u8>,
    pub kept_at: i64,
}

/// Keeps a run's file (a run keeps one: a second is ignored).
pub async fn keep<'e>(e: impl Executor<'e, Database = Any>, f: &KeptFile) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO statement_files (run_id, file_name, sha256, size_bytes, gzip, kept_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(&f.run_id)
    .bind(&f.file_name)
    .bind(&f.sha256)
    .bind(f.size_bytes)
    // Borrowed: bound as `&Vec<u8>` it was copied once more, and a
    // statement of ten million rows gzips to over 100 MiB.
    .bind(f.gzip.as_slice())
    .bind(f.kept_at)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<Option<KeptFile>> {
    sqlx::query_as(
        "SELECT run_id, file_name, sha256, size_bytes, gzip, kept_at FROM statement_files WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_optional(e)
    .await
}

/// A kept file's name, hash and size, without its bytes.
pub async fn describe<'e>(
    e: impl Executor<'e, Database = Any>,
    run_id: &str,
) -> sqlx::Result<Option<(String, String, i64)>> {
    sqlx::query_as("SELECT file_name, sha256, size_bytes FROM statement_files WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(e)
        .await
}

/// Deletes the files kept before `before`; how many.
pub async fn delete_kept_before<'e>(
    e: impl Executor<'e, Database = Any>,
    before: i64,
) -> sqlx::Result<u64> {
    Ok(
        sqlx::query("DELETE FROM statement_files WHERE kept_at < $1")
            .bind(before)
            .execute(e)
            .await?
            .rows_affected(),
    )
}
