//! The statement-upload form, read one way for the console's
//! `POST /runs/upload` and the API's `POST /api/v1/recon/runs`: multipart
//! `provider`, `business_date`, `file`, optionally `accept_bad_lines` (0
//! when absent). The file is written to a temporary file as it arrives —
//! memory stays bounded whatever its size — and hashed on the way, as any
//! import hashes a file. Any other field, an `accept_bad_lines` that is
//! not a whole number, or a field other than the file longer than any of
//! its values can be refuses the form; the file's name is kept cut to
//! [`MAX_FILE_NAME`].

use crate::domain::{clip, quote};
use crate::recon::{Input, StatementHash};
use crate::store::recon_runs::MAX_FILE_NAME;
use axum::extract::Multipart;
use std::io::Write;
use std::path::PathBuf;

/// The longest value a field other than the file may have (bytes): far
/// past any provider's name or day, and read no further.
const MAX_FIELD: usize = 1024;

/// A temporary file, removed when dropped.
pub struct TempFile(Option<PathBuf>);

impl TempFile {
    /// The path, no longer removed by this handle (the caller's now).
    pub fn keep(mut self) -> Option<PathBuf> {
        self.0.take()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The uploaded statement, kept in a temporary file.
pub struct KeptFile {
    /// The name the browser or client gave it.
    pub name: Option<String>,
    pub size: usize,
    /// Its [`StatementHash`].
    pub hash: String,
    pub file: TempFile,
}

impl KeptFile {
    /// The file as an import's input (the file stays this handle's).
    pub fn input(&self) -> Input {
        Input::File(self.file.0.clone().unwrap_or_default())
    }
}

/// The form as sent; which fields are required is the caller's to say.
pub struct StatementForm {
    pub provider: Option<String>,
    pub business_date: Option<String>,
    pub file: Option<KeptFile>,
    pub accept_bad_lines: u32,
}

/// Why the form could not be read.
#[derive(Debug)]
pub enum FormError {
    /// Not a multipart form, or a broken one.
    Unreadable(String),
    /// A field this form does not have.
    UnknownField(String),
    /// `accept_bad_lines` is not a whole number.
    BadLineCount,
    /// A field other than the file is longer than [`MAX_FIELD`].
    TooLong(String),
    /// The file broke off (too large, or the connection went).
    FileBroken(String),
    /// The server could not write the file down.
    NotKept(std::io::Error),
}

impl FormError {
    /// In words, for the two refusals both routes give alike.
    pub fn field_message(&self) -> Option<String> {
        match self {
            FormError::UnknownField(name) => Some(format!("unknown field {}", quote(name))),
            FormError::BadLineCount => Some("accept_bad_lines must be a whole number".into()),
            FormError::TooLong(name) => Some(format!(
                "the field {name} is longer than {MAX_FIELD} bytes, longer than any of its values"
            )),
            _ => None,
        }
    }
}

/// Reads the whole form, the file into a temporary file.
pub async fn read(mut form: Multipart) -> Result<StatementForm, FormError> {
    let mut out = StatementForm {
        provider: None,
        business_date: None,
        file: None,
        accept_bad_lines: 0,
    };
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(out),
            Err(e) => return Err(FormError::Unreadable(e.to_string())),
        };
        match field.name().unwrap_or_default() {
            "provider" => out.provider = short_text(field, "provider").await?,
            "business_date" => out.business_date = short_text(field, "business_date").await?,
            "accept_bad_lines" => {
                let text = short_text(field, "accept_bad_lines").await?;
                let n = text.and_then(|t| t.trim().parse().ok());
                out.accept_bad_lines = n.ok_or(FormError::BadLineCount)?;
            }
            "file" => out.file = Some(keep_file(field).await?),
            other => {
                return Err(FormError::UnknownField(clip(other, MAX_FIELD).into_owned()));
            }
        }
    }
}

/// A field other than the file, read up to [`MAX_FIELD`] bytes and
/// refused past them (not read whole first); `None` when it is not text.
async fn short_text(
    mut field: axum::extract::multipart::Field<'_>,
    name: &str,
) -> Result<Option<String>, FormError> {
    let mut bytes = Vec::new();
    loop {
        match field.chunk().await {
            Ok(Some(chunk)) if bytes.len() + chunk.len() > MAX_FIELD => {
                return Err(FormError::TooLong(name.to_owned()));
            }
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => return Ok(String::from_utf8(bytes).ok()),
            Err(e) => return Err(FormError::Unreadable(e.to_string())),
        }
    }
}

/// The file field, written down and hashed as it arrives.
async fn keep_file(mut field: axum::extract::multipart::Field<'_>) -> Result<KeptFile, FormError> {
    let name = field
        .file_name()
        .map(|name| clip(name, MAX_FILE_NAME).into_owned());
    let path = std::env::temp_dir().join(format!("reckon-upload-{}", uuid::Uuid::new_v4()));
    // Whatever happens below, the file goes unless it is handed on.
    let file = TempFile(Some(path.clone()));
    let mut written = std::fs::File::create(&path).map_err(FormError::NotKept)?;
    let (mut size, mut hash) = (0, StatementHash::default());
    loop {
        match field.chunk().await {
            Ok(Some(chunk)) => {
                size += chunk.len();
                hash.update(&chunk);
                written.write_all(&chunk).map_err(FormError::NotKept)?;
            }
            Ok(None) => break,
            Err(e) => return Err(FormError::FileBroken(e.to_string())),
        }
    }
    Ok(KeptFile {
        name,
        size,
        hash: hash.finish(),
        file,
    })
}
