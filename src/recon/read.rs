//! Reading a statement into a run. A file is hashed, then read on a thread
//! of its own, its rows handed over in chunks and matched as they arrive
//! while the day's payments load; the payments its exceptions name are
//! looked up meanwhile. A pull's pages, staged in `recon_rows` page by
//! page as they come (`super::pull`), are streamed back against the day.

use super::local;
use super::matching::{Early, Matcher};
use super::run::{ReconError, Run};
use crate::engine::Engine;
use crate::statement::{self, Format, Pause, StatementRow};
use crate::store::recon_runs::{self, StagedRow};
use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};

/// Statement rows handed from the reading thread to the matcher at once,
/// and chunks read ahead of the matcher (while the day's payments load).
const ROWS_PER_CHUNK: usize = 4_096;
const CHUNKS_AHEAD: usize = 8;
/// The run's progress (rows read) is written about this often.
const PROGRESS_EVERY: i64 = 64 * ROWS_PER_CHUNK as i64;
/// New exceptions that have their payments looked up while the statement
/// is still read.
const EARLY_LOOKUPS: usize = 2_048;
/// Lines skipped under the tolerance that the run lists with their
/// reasons; the rest are counted (a tolerance may be large, the run's
/// summary stays small).
pub(super) const LISTED_SKIPS: usize = 50;

/// Where a statement comes from.
pub enum Input {
    Bytes(Vec<u8>),
    File(std::path::PathBuf),
    /// Bytes read by two at once (the run's reader and the kept file's
    /// compression), held once.
    Shared(SharedBytes),
}

/// A statement's bytes behind a shared pointer, readable as a slice.
#[derive(Clone)]
pub struct SharedBytes(pub std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl Input {
    /// The same input for two readers: bytes moved behind one shared
    /// pointer (not copied), a file by its path.
    pub fn share(self) -> (Input, Input) {
        match self {
            Input::File(p) => (Input::File(p.clone()), Input::File(p)),
            Input::Bytes(b) => Input::Shared(SharedBytes(std::sync::Arc::new(b))).share(),
            Input::Shared(b) => (Input::Shared(b.clone()), Input::Shared(b)),
        }
    }

    fn into_reader(self) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        Ok(match self {
            Input::Bytes(b) => Box::new(std::io::Cursor::new(b)),
            Input::Shared(b) => Box::new(std::io::Cursor::new(b)),
            Input::File(p) => Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                std::fs::File::open(p)?,
            )),
        })
    }

    /// The input's first `n` bytes (fewer when it is shorter).
    pub fn head(&self, n: usize) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let bytes = |b: &[u8]| b[..b.len().min(n)].to_vec();
        Ok(match self {
            Input::Bytes(b) => bytes(b),
            Input::Shared(b) => bytes(b.as_ref()),
            Input::File(p) => {
                let mut head = Vec::with_capacity(n);
                std::fs::File::open(p)?
                    .take(n as u64)
                    .read_to_end(&mut head)?;
                head
            }
        })
    }

    pub fn hash(&self) -> std::io::Result<String> {
        let mut h = StatementHash::default();
        let mut r: Box<dyn std::io::BufRead + Send + '_> = match self {
            Input::Bytes(b) => Box::new(std::io::Cursor::new(b.as_slice())),
            Input::Shared(b) => Box::new(std::io::Cursor::new(b.as_ref())),
            Input::File(p) => Box::new(std::io::BufReader::with_capacity(
                1 << 20,
                std::fs::File::open(p)?,
            )),
        };
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            h.update(buf);
            let n = buf.len();
            r.consume(n);
        }
        Ok(h.finish())
    }
}

/// What makes a statement file the same file: the SHA-256 of its bytes,
/// in lowercase hex. Fed piece by piece (as an upload arrives, or as a
/// file is read).
#[derive(Default)]
pub struct StatementHash(Sha256);

impl StatementHash {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// A statement read through: its hash, rows, own figures and the lines
/// skipped under the accepted tolerance.
pub(super) struct Read {
    pub hash: String,
    pub rows: i64,
    pub checks: Vec<statement::Check>,
    pub skipped: Vec<statement::ParseError>,
    /// Lines skipped past the [`LISTED_SKIPS`] listed.
    pub skipped_more: u64,
}

/// How a file is to be read: its format, the malformed lines accepted,
/// and its hash when the caller has it.
pub(super) struct Reading {
    pub format: Format,
    pub input: Input,
    pub tolerance: u32,
    pub known_hash: Option<String>,
    /// Which bill the file was, once the reader knows (see
    /// [`statement::Format::bill_type`]): set at its end, or when it is
    /// refused part-way by a format that had told its layout.
    pub told: std::sync::Arc<std::sync::OnceLock<String>>,
}

/// Hashes a statement (unless its hash is known), then reads it on the
/// calling thread, handing its rows to `rows` in chunks. Blocking: runs in
/// `spawn_blocking`. (Hashing first, in a pass of its own, overlaps it with
/// the loading of the day's payments, during which the rows could only
/// wait.)
fn read_statement(
    how: Reading,
    rows: tokio::sync::mpsc::Sender<statement::Chunk>,
    spare: std::sync::mpsc::Receiver<statement::Chunk>,
) -> Result<Read, ReconError> {
    let unreadable =
        |e: std::io::Error| ReconError::Invalid(format!("cannot read the statement: {e}"));
    let hash = match how.known_hash {
        Some(hash) => hash,
        None => how.input.hash().map_err(unreadable)?,
    };
    let mut read = Read {
        hash,
        rows: 0,
        checks: Vec::new(),
        skipped: Vec::new(),
        skipped_more: 0,
    };
    let reader = how.input.into_reader().map_err(unreadable)?;
    let format = how.format.clone();
    let mut statement = statement::read_with(how.format, reader, how.tolerance);
    let mut chunk = statement::Chunk::with_capacity(ROWS_PER_CHUNK);
    let stopped = || ReconError::Invalid("the run stopped reading".into());
    loop {
        let before = chunk.len();
        let pause = statement
            .read_rows(&mut chunk, ROWS_PER_CHUNK)
            .map_err(|e| {
                if let Some(kind) = statement.kind() {
                    let _ = how.told.set(format.bill_type(Some(kind)));
                }
                ReconError::Refused(e.to_string())
            })?;
        read.rows += (chunk.len() - before) as i64;
        match pause {
            Pause::Full => {
                // The matched chunks come back empty to be filled again
                // (a fresh one each time cost page faults).
                let next = spare
                    .try_recv()
                    .unwrap_or_else(|_| statement::Chunk::with_capacity(ROWS_PER_CHUNK));
                let full = std::mem::replace(&mut chunk, next);
                if rows.blocking_send(full).is_err() {
                    return Err(stopped());
                }
            }
            Pause::Skipped(e) if read.skipped.len() < LISTED_SKIPS => read.skipped.push(e),
            Pause::Skipped(_) => read.skipped_more += 1,
            Pause::End(checks) => {
                read.checks = checks;
                let _ = how.told.set(format.bill_type(statement.kind()));
                break;
            }
        }
    }
    if !chunk.is_empty() && rows.blocking_send(chunk).is_err() {
        return Err(stopped());
    }
    Ok(read)
}

/// Reads a file into the run `run_id`: hashed and read on a thread of its
/// own, its rows matched as they arrive against the day's payments, read
/// meanwhile. Every error leaves the run for the caller to fail.
pub(super) async fn read_and_match(
    engine: &Engine,
    run_id: &str,
    provider: &str,
    range: (i64, i64),
    how: Reading,
) -> Result<(Read, Matcher), ReconError> {
    read_and_match_as(engine, run_id, provider, range, how, true).await
}

/// [`read_and_match`]; a preview (`record` false) writes no progress.
pub(super) async fn read_and_match_as(
    engine: &Engine,
    run_id: &str,
    provider: &str,
    range: (i64, i64),
    how: Reading,
    record: bool,
) -> Result<(Read, Matcher), ReconError> {
    let started = std::time::Instant::now();
    let (sender, mut chunks) = tokio::sync::mpsc::channel::<statement::Chunk>(CHUNKS_AHEAD);
    let (spare, spares) = std::sync::mpsc::channel();
    let reading = tokio::task::spawn_blocking(move || read_statement(how, sender, spares));
    let day = match local::day_payments(engine, provider, range).await {
        Ok(day) => day,
        Err(e) => {
            drop(chunks);
            let _ = reading.await;
            return Err(e);
        }
    };
    tracing::debug!(
        run_id,
        payments = day.len(),
        millis = started.elapsed().as_millis() as u64,
        "the day's payments read"
    );
    let mut matcher = Matcher::new(day);
    matcher.fees = super::fees::DayFees::new(engine.settings().closing.fees.get(provider));
    matcher.started = Some(started);
    let mut received = 0i64;
    // While the reader sets the pace, the payments the exceptions name
    // are asked for on a core of their own (SQLite), a batch at a time,
    // in order, all on one connection (not one opened per batch, each
    // reading the schema and filling a page cache of its own).
    let mut asked = 0;
    let (ask, asks) = std::sync::mpsc::channel::<(Vec<String>, Vec<String>)>();
    let early = engine.db.sqlite_path.clone().map(|path| {
        let provider = provider.to_owned();
        tokio::task::spawn_blocking(move || local::early_lookups(&path, &provider, asks))
    });
    while let Some(mut chunk) = chunks.recv().await {
        received += chunk.len() as i64;
        matcher.feed_chunk(&mut chunk);
        // Back to the reader, empty (it may have stopped: no matter).
        let _ = spare.send(chunk);
        if early.is_some() && matcher.exceptions.len() - asked >= EARLY_LOOKUPS {
            let (txns, nos) = super::classify::exception_keys(&matcher.exceptions[asked..]);
            let owned =
                |keys: Vec<&str>| -> Vec<String> { keys.into_iter().map(str::to_owned).collect() };
            // (A lookup that stopped asks for nothing more: its
            // answers will not count.)
            let _ = ask.send((owned(txns), owned(nos)));
            asked = matcher.exceptions.len();
        }
        // Progress for whoever watches the run (the reader, not this
        // loop, sets the pace: the write costs the run nothing).
        // Best effort: a progress figure that could not be written
        // stops nothing.
        if record && received % PROGRESS_EVERY == 0 {
            let _ = recon_runs::progress(&engine.db.pool, run_id, received, engine.now()).await;
        }
        if let Err(e) = matcher.within_bounds() {
            drop(chunks);
            let _ = reading.await;
            return Err(e);
        }
    }
    // What was asked early counts only if every batch was answered
    // (else it is all asked again).
    drop(ask);
    if let Some(Ok(Ok((by_txn, by_no)))) = match early {
        Some(lookups) => Some(lookups.await),
        None => None,
    } {
        matcher.early = Early {
            looked_up: asked,
            by_txn,
            by_no,
        };
    }
    let read = match reading.await {
        Ok(read) => read,
        Err(e) => Err(ReconError::Refused(format!(
            "reading the statement stopped: {e}"
        ))),
    };
    tracing::debug!(
        run_id,
        millis = started.elapsed().as_millis() as u64,
        "statement read and matched"
    );
    // What the read freed (rows dropped on another thread than the one
    // that made them, the lookups' scratch) given back before
    // classifying, where the peak is.
    crate::release_freed_memory();
    Ok((read?, matcher))
}

/// A statement row as `recon_rows` keeps it.
pub(super) fn staged(r: &StatementRow) -> StagedRow<'_> {
    StagedRow {
        line_no: r.line_no,
        kind: r.kind.as_str(),
        provider_txn_id: r.provider_txn_id.as_deref(),
        payment_no: r.payment_no.as_deref(),
        refund_no: r.refund_no.as_deref(),
        provider_refund_id: r.provider_refund_id.as_deref(),
        amount_minor: r.money.minor,
        currency: r.money.currency.code(),
        status: &r.status,
        occurred_at: r.occurred_at,
        fee_minor: r.fee.map(|fee| fee.minor()),
    }
}

/// A pull's staged rows streamed against the day's payments.
pub(super) async fn match_staged(engine: &Engine, run: &Run<'_>) -> Result<Matcher, ReconError> {
    let mut matcher = Matcher::new(local::day_payments(engine, run.provider, run.range).await?);
    matcher.fees = super::fees::DayFees::new(engine.settings().closing.fees.get(run.provider));
    let mut rows = recon_runs::staged_rows(&engine.db.pool, run.run_id);
    while let Some(r) = rows.try_next().await? {
        let currency = crate::domain::Currency::parse(&r.currency)
            .map_err(|e| ReconError::Invalid(e.to_string()))?;
        let row = StatementRow {
            reference: None,
            line_no: r.line_no,
            kind: if r.kind == "refund" {
                statement::RowKind::Refund
            } else {
                statement::RowKind::Payment
            },
            provider_txn_id: r.provider_txn_id,
            payment_no: r.payment_no,
            refund_no: r.refund_no,
            provider_refund_id: r.provider_refund_id,
            money: crate::domain::Money::new(r.amount_minor, currency),
            status: r.status,
            occurred_at: r.occurred_at,
            // Staged rows are pages' (Stripe's): fees in whole minor units.
            fee: r.fee_minor.map(|minor| {
                crate::domain::Fee::of_money(crate::domain::Money::new(minor, currency))
            }),
        };
        matcher.feed(row.borrowed());
        matcher.within_bounds()?;
    }
    Ok(matcher)
}
