//! One runner for the jobs that work a long list in the background — bulk
//! ticket work, outbox resend and recover, bulk replay. The runner owns
//! what they share: the set of jobs this process runs (so one is never run
//! twice here), a job on its own task or in the caller's, the chunk loop
//! with its cancel check and short pause between chunks, the progress
//! touched after each chunk, a job failed with its error, and the jobs a
//! stopped process left silent resumed. A kind says only how to do its own
//! steps ([`Kind`]); it knows its tables, the runner knows none.

use crate::store;
use app::error::AppError;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

/// A job left running (or cancelling) this long without a step was cut
/// off: its process stopped. Resumable kinds are resumed after it.
pub const SILENT_US: i64 = 120 * 1_000_000;

/// A kind of job: its own steps. The runner calls them in this order:
/// `load`, then while `running`: `next_chunk`, `work_item` for each of its
/// items, `touch`, the pause; then `finish` — or `fail` on any error.
pub trait Kind: Sized + Send + 'static {
    /// What the steps need (the engine); handed to every step.
    type Ctx: Clone + Send + Sync + 'static;
    type Item: Send;
    /// Its name in logs and in the set of jobs this process runs.
    const NAME: &'static str;
    /// The pause between two chunks, so a long job leaves the writer to
    /// the day's webhooks; zero: none.
    const PAUSE: Duration;

    /// The job as stored, ready to work; an error fails it.
    fn load(ctx: &Self::Ctx, job_id: &str) -> impl Future<Output = Result<Self, AppError>> + Send;

    /// Whether to go on: false once a cancel was asked for.
    fn running(&mut self, ctx: &Self::Ctx) -> impl Future<Output = Result<bool, AppError>> + Send;

    /// The next items to work; none left: the job is done.
    fn next_chunk(
        &mut self,
        ctx: &Self::Ctx,
    ) -> impl Future<Output = Result<Vec<Self::Item>, AppError>> + Send;

    /// One item worked, with its own transaction(s) and audit.
    fn work_item(
        &mut self,
        ctx: &Self::Ctx,
        item: Self::Item,
    ) -> impl Future<Output = Result<(), AppError>> + Send;

    /// After a chunk: its progress written, the job seen alive.
    fn touch(&mut self, ctx: &Self::Ctx) -> impl Future<Output = Result<(), AppError>> + Send;

    /// The job ends: done, or cancelled.
    fn finish(&mut self, ctx: &Self::Ctx) -> impl Future<Output = Result<(), AppError>> + Send;

    /// The job stopped on `error` (its worked items stay worked). Not a
    /// method: a job that did not load fails too.
    fn fail(
        ctx: &Self::Ctx,
        job_id: &str,
        error: &str,
    ) -> impl Future<Output = store::Result<()>> + Send;

    /// Jobs of this kind left unfinished and without a step for
    /// `silent_us`: to resume. None for a kind that cannot be resumed.
    fn silent(
        ctx: &Self::Ctx,
        silent_us: i64,
    ) -> impl Future<Output = store::Result<Vec<String>>> + Send {
        let _ = (ctx, silent_us);
        async { Ok(Vec::new()) }
    }
}

/// The jobs this process runs, by kind and id.
static RUNNING: LazyLock<Mutex<HashSet<(&'static str, String)>>> = LazyLock::new(Default::default);

/// A job's place in [`RUNNING`], given back when its work ends (or its
/// task panics).
struct Claim {
    kind: &'static str,
    job_id: String,
}

impl Claim {
    /// None when this process runs the job already.
    fn take(kind: &'static str, job_id: &str) -> Option<Claim> {
        let fresh = RUNNING
            .lock()
            .map(|mut r| r.insert((kind, job_id.to_owned())))
            .unwrap_or(false);
        fresh.then(|| Claim {
            kind,
            job_id: job_id.to_owned(),
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Ok(mut r) = RUNNING.lock() {
            r.remove(&(self.kind, std::mem::take(&mut self.job_id)));
        }
    }
}

/// Whether this process runs the job now.
pub fn runs_here<K: Kind>(job_id: &str) -> bool {
    RUNNING
        .lock()
        .map(|r| r.contains(&(K::NAME, job_id.to_owned())))
        .unwrap_or(true)
}

/// Works the job on its own task, unless this process runs it already.
pub fn spawn<K: Kind>(ctx: &K::Ctx, job_id: &str) {
    let Some(claim) = Claim::take(K::NAME, job_id) else {
        return;
    };
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let _ = work::<K>(&ctx, &claim.job_id).await;
        drop(claim);
    });
}

/// Works the job to its end in the caller's task (the command line
/// waits); its error, if any, after the job is failed with it.
pub async fn run_here<K: Kind>(ctx: &K::Ctx, job_id: &str) -> Result<(), AppError> {
    let Some(claim) = Claim::take(K::NAME, job_id) else {
        return Err(AppError::Refused {
            detail: format!("{} job {job_id} is running already", K::NAME),
        });
    };
    let done = work::<K>(ctx, job_id).await;
    drop(claim);
    done
}

/// Resumes the jobs of kind `K` a stopped process left silent (none that
/// this process runs); returns how many.
pub async fn resume<K: Kind>(ctx: &K::Ctx) -> store::Result<usize> {
    let mut resumed = 0;
    for id in K::silent(ctx, SILENT_US).await? {
        if !runs_here::<K>(&id) {
            tracing::info!(job = %id, kind = K::NAME, "resuming a job a stopped process left");
            spawn::<K>(ctx, &id);
            resumed += 1;
        }
    }
    Ok(resumed)
}

/// The steps, and the job failed with the error that stopped them.
async fn work<K: Kind>(ctx: &K::Ctx, job_id: &str) -> Result<(), AppError> {
    let done = steps::<K>(ctx, job_id).await;
    if let Err(e) = &done {
        tracing::error!(job = job_id, kind = K::NAME, error = %e, "job failed");
        if let Err(db) = K::fail(ctx, job_id, &e.to_string()).await {
            tracing::error!(job = job_id, kind = K::NAME, error = %db, "job not marked failed");
        }
    }
    done
}

/// Chunk by chunk until none is left or a cancel was asked for.
async fn steps<K: Kind>(ctx: &K::Ctx, job_id: &str) -> Result<(), AppError> {
    let mut job = K::load(ctx, job_id).await?;
    while job.running(ctx).await? {
        let chunk = job.next_chunk(ctx).await?;
        if chunk.is_empty() {
            break;
        }
        for item in chunk {
            job.work_item(ctx, item).await?;
        }
        job.touch(ctx).await?;
        if !K::PAUSE.is_zero() {
            tokio::time::sleep(K::PAUSE).await;
        }
    }
    job.finish(ctx).await
}
