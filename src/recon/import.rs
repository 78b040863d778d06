//! An import's checks, all in one place, made before any run starts: what
//! an import is given, the provider and business day (in the provider's
//! statement zone), the file readable, not reconciled for that day
//! already, and not another provider's bill. The console asks them of an
//! upload before it reads it in the background ([`check_import`]).

use super::read::Input;
use super::run::{ReconError, day_range};
use super::schedule::statement_zone;
use crate::domain::quote;
use crate::engine::Engine;
use crate::statement;
use crate::store::recon_runs::{self, RunRow};

/// A statement to import, and who imports it how.
pub struct Import<'a> {
    pub provider: &'a str,
    /// YYYY-MM-DD, a business day in the provider's statement zone
    /// ([`statement_zone`]).
    pub business_date: &'a str,
    /// upload | import | pull
    pub source: &'a str,
    pub file_name: Option<&'a str>,
    pub input: Input,
    pub started_by: &'a str,
    /// Malformed lines the operator accepts to skip (0: none — one bad
    /// line refuses the statement).
    pub accept_bad_lines: u32,
    /// The new run's id when the caller chose it (the console names the
    /// run it is about to show before the import starts).
    pub run_id: Option<String>,
    /// The input's [`super::StatementHash`] when the caller already has it (the
    /// console hashes an upload as it arrives); otherwise it is computed.
    pub hash: Option<String>,
}

/// The completed run of the same statement file (by hash) for that
/// provider and day, if there is one, saying so in its `note`.
pub(super) async fn earlier_run(
    engine: &Engine,
    provider: &str,
    date: &str,
    hash: &str,
) -> crate::store::Result<Option<RunRow>> {
    let run = recon_runs::completed_of_file(&engine.db.pool, provider, date, hash).await?;
    Ok(run.map(|mut run| {
        run.note = Some(format!(
            "this file (sha256 {hash}) was already reconciled for {provider}'s {date} by run {}: nothing was read again",
            run.run_id
        ));
        run
    }))
}

/// The bytes of a file's start that tell which bill it is.
const HEAD_BYTES: usize = statement::MAX_LINE;

/// Refuses a file that is a bill of another provider than `provider`'s,
/// naming the bill it is and where it belongs — before any run starts,
/// so a wrong file leaves nothing behind. A file no format knows is left
/// for the reading to refuse with its line and reason.
fn refuse_wrong_bill(engine: &Engine, provider: &str, input: &Input) -> Result<(), ReconError> {
    let Some(chosen) = engine
        .providers
        .get(provider)
        .and_then(|p| p.statement_format())
    else {
        return Ok(());
    };
    let Ok(head) = input.head(HEAD_BYTES) else {
        return Ok(());
    };
    let formats = crate::providers::bill_formats();
    let Some((format, kind)) = statement::recognise(&formats, &head) else {
        return Ok(());
    };
    if *format == chosen {
        return Ok(());
    }
    let bill = format.describe(kind);
    let accounts: Vec<&str> = engine
        .providers
        .names()
        .filter(|name| {
            engine
                .providers
                .get(name)
                .and_then(|p| p.statement_format())
                .is_some_and(|f| f == *format)
        })
        .collect();
    let whose = format.whose();
    let article = |noun: &str| match noun.bytes().next().map(|b| b.to_ascii_lowercase()) {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    };
    let chose = match chosen.whose() {
        same if same.eq_ignore_ascii_case(provider) => provider.to_owned(),
        other => format!("{provider} ({other})"),
    };
    Err(ReconError::Refused(if accounts.is_empty() {
        format!(
            "this is {} {bill}; no {whose} account is configured (you chose {chose}): nothing was read",
            article(&bill)
        )
    } else {
        format!(
            "this is {} {bill}; you chose {chose}: upload it for {}; nothing was read",
            article(&bill),
            accounts.join(" or ")
        )
    }))
}

/// What an import's checks found.
pub(super) enum Checked {
    /// A statement to read: its format, and its business day's range in
    /// the provider's statement zone.
    New(statement::Format, (i64, i64)),
    /// The same file, reconciled for that day already: that run.
    Earlier(Box<RunRow>),
}

/// Every check an import makes before a run starts: the provider is
/// configured and reads statements, the business day is a day of the
/// provider's statement zone ([`statement_zone`]), the file can be read,
/// it is not a file already reconciled for that day (by its hash, when
/// known), and it is not another provider's bill ([`refuse_wrong_bill`]).
pub(super) async fn check(engine: &Engine, imp: &Import<'_>) -> Result<Checked, ReconError> {
    let provider = engine.providers.get(imp.provider).cloned().ok_or_else(|| {
        ReconError::Invalid(format!(
            "provider {} is not configured",
            quote(imp.provider)
        ))
    })?;
    let format = provider.statement_format().ok_or_else(|| {
        ReconError::Invalid(format!(
            "provider {} has no statement format Reckon reads",
            quote(imp.provider)
        ))
    })?;
    let range = day_range(imp.business_date, &statement_zone(engine, imp.provider))
        .map_err(ReconError::Invalid)?;
    if let Input::File(path) = &imp.input
        && let Err(e) = std::fs::File::open(path)
    {
        return Err(ReconError::Invalid(format!(
            "cannot read the statement: {e}"
        )));
    }
    // A file known to be reconciled already, or another provider's bill,
    // starts no run.
    if let Some(hash) = &imp.hash
        && let Some(run) = earlier_run(engine, imp.provider, imp.business_date, hash).await?
    {
        return Ok(Checked::Earlier(Box::new(run)));
    }
    refuse_wrong_bill(engine, imp.provider, &imp.input)?;
    Ok(Checked::New(format, range))
}

/// [`import_statement`]'s checks alone, for a caller that starts the import
/// later (the console reads an upload in the background and answers at
/// once): the completed run of the same file for that day, if there is
/// one, else nothing; or why the import would be refused. Nothing is
/// stored.
pub async fn check_import(engine: &Engine, imp: &Import<'_>) -> Result<Option<RunRow>, ReconError> {
    Ok(match check(engine, imp).await? {
        Checked::New(..) => None,
        Checked::Earlier(run) => Some(*run),
    })
}
