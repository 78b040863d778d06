//! The original statement of a run, kept as evidence: the uploaded,
//! imported or downloaded bytes, gzipped, with their SHA-256 (the run's
//! file hash), in the database — so every instance on one PostgreSQL
//! serves it, a backup holds it with the run, and deleting a run deletes
//! it — until the retention pass removes it.

use super::read::{Input, StatementHash};
use super::run::ReconError;
use crate::engine::Engine;
use crate::store;
use crate::store::statement_files::{self, KeptFile};
use std::io::{Read, Write};

/// A day in microseconds.
const DAY_US: i64 = 86_400 * 1_000_000;

/// A file compressed, waiting for its run to prove new.
pub struct Compressing(tokio::task::JoinHandle<std::io::Result<Compressed>>);

pub struct Compressed {
    gzip: Vec<u8>,
    sha256: String,
    size: i64,
}

/// Starts compressing the statement `input` on a thread of its own (a
/// file is read again from its path; shared bytes are not copied).
pub fn compress(input: Input) -> Compressing {
    Compressing(tokio::task::spawn_blocking(move || match input {
        Input::File(p) => gzip(std::fs::File::open(p)?),
        Input::Bytes(b) => gzip(b.as_slice()),
        Input::Shared(b) => gzip(b.as_ref()),
    }))
}

/// Gzips what `r` reads, hashing its bytes as [`StatementHash`] does.
pub fn gzip(mut r: impl Read) -> std::io::Result<Compressed> {
    let mut hash = StatementHash::default();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0i64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        gz.write_all(&buf[..n])?;
        size += n as i64;
    }
    Ok(Compressed {
        gzip: gz.finish()?,
        sha256: hash.finish(),
        size,
    })
}

/// Keeps the compressed file of the run `run_id`. A file that could not
/// be kept is logged and does not stop the run: its rows are read, and
/// the evidence is what is missing.
pub async fn keep(engine: &Engine, run_id: &str, file_name: Option<&str>, file: Compressing) {
    let kept = match file.0.await {
        Ok(Ok(c)) => keep_compressed(engine, run_id, file_name, c).await,
        Ok(Err(e)) => Err(ReconError::Invalid(format!("cannot read it again: {e}"))),
        Err(e) => Err(ReconError::Invalid(format!("compressing it stopped: {e}"))),
    };
    if let Err(e) = kept {
        tracing::error!(run_id, error = %e, "the run's statement file could not be kept");
    }
}

/// Keeps a file a pull downloaded (its bytes as the provider sent them,
/// before any unpacking the format does not need).
pub async fn keep_downloaded(
    engine: &Engine,
    run_id: &str,
    file_name: &str,
    bytes: &[u8],
) -> Result<(), ReconError> {
    let c = gzip(bytes).map_err(|e| ReconError::Invalid(format!("cannot keep the file: {e}")))?;
    keep_compressed(engine, run_id, Some(file_name), c).await
}

async fn keep_compressed(
    engine: &Engine,
    run_id: &str,
    file_name: Option<&str>,
    c: Compressed,
) -> Result<(), ReconError> {
    let kept = KeptFile {
        run_id: run_id.to_owned(),
        file_name: file_name.unwrap_or("statement").to_owned(),
        sha256: c.sha256,
        size_bytes: c.size,
        gzip: c.gzip,
        kept_at: engine.now(),
    };
    statement_files::keep(&engine.db.pool, &kept).await?;
    Ok(())
}

/// A run's kept file: its name, SHA-256 and bytes as they were received.
pub async fn kept_file(
    engine: &Engine,
    run_id: &str,
) -> Result<Option<(String, String, Vec<u8>)>, ReconError> {
    let Some(f) = statement_files::get(&engine.db.pool, run_id).await? else {
        return Ok(None);
    };
    // Unpacked no further than the size it was kept with: a damaged or
    // altered row cannot unpack into more memory than its file had.
    let size = f.size_bytes.max(0) as u64;
    let damaged = |why: String| {
        ReconError::Invalid(format!("the kept file of run {run_id} is damaged: {why}"))
    };
    let mut bytes = Vec::with_capacity(size as usize);
    flate2::read::GzDecoder::new(f.gzip.as_slice())
        .take(size + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| damaged(e.to_string()))?;
    if bytes.len() as u64 != size {
        return Err(damaged(format!(
            "it unpacks to {} bytes, it was kept with {size}",
            if bytes.len() as u64 > size {
                format!("more than {size}")
            } else {
                bytes.len().to_string()
            }
        )));
    }
    Ok(Some((f.file_name, f.sha256, bytes)))
}

/// The retention pass: deletes the files kept longer than the configured
/// days; how many.
pub async fn expire_files(engine: &Engine, now: i64) -> store::Result<u64> {
    let before = now - engine.settings().pulls.keep_files_days * DAY_US;
    let deleted = statement_files::delete_kept_before(&engine.db.pool, before).await?;
    if deleted > 0 {
        tracing::info!(deleted, "statement files past their retention deleted");
    }
    Ok(deleted)
}
