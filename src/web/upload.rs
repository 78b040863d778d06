//! The statement-upload form, read one way for the console's
//! `POST /runs/upload` and the API's `POST /api/v1/recon/runs`: multipart
//! `provider`, `business_date`, `file`, optionally `accept_bad_lines` (0
//! when absent). The file is written to a temporary file as it arrives —
//! memory stays bounded whatever its size — and hashed on the way, as any
//! import hashes a file. Any other field, an `accept_bad_lines` that is
//! not a whole number, or a field other than the file longer than any of
//! its values can be refuses the form; the file's name is kept cut to
//! [`MAX_FILE_NAME`]. A gzip or a zip (as providers' portals give their
//! bills) is unpacked under the bill limit, as a pulled bill is, and the
//! statement inside is what the run reads and hashes.

use crate::domain::{clip, quote};
use crate::providers::spool::{self, Spooled};
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
    /// A gzip or zip that does not unpack to one statement, in words.
    Unpack(String),
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
            FormError::Unpack(why) => Some(why.clone()),
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
            Ok(None) => break,
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
    if let Some(file) = out.file.take() {
        let provider = out.provider.clone().unwrap_or_default();
        let limit = spool::MAX_BILL_BYTES;
        let unpacked = tokio::task::spawn_blocking(move || unpack(file, provider.trim(), limit))
            .await
            .map_err(|e| FormError::NotKept(std::io::Error::other(e)))??;
        out.file = Some(unpacked);
    }
    Ok(out)
}

/// The statement a compressed upload holds: a gzip gunzipped; of a zip,
/// Alipay's 业务明细 once its 汇总 agrees (an Alipay bill as downloaded),
/// else its one CSV, all unpacked under `limit` bytes. Anything else is
/// the statement itself.
fn unpack(kept: KeptFile, provider: &str, limit: u64) -> Result<KeptFile, FormError> {
    let Some(path) = kept.file.0.clone() else {
        return Ok(kept);
    };
    let packed = Spooled::adopt(path).map_err(FormError::NotKept)?;
    // The packed file is `packed`'s to remove from here on.
    let _ = kept.file.keep();
    let shown = kept.name.clone().unwrap_or_else(|| "the file".into());
    let named = |why: String| FormError::Unpack(format!("{}: {why}", quote(&shown)));
    let (name, statement) = if spool::is_gzip(&packed).map_err(FormError::NotKept)? {
        let inner = kept
            .name
            .as_deref()
            .map(|n| n.strip_suffix(".gz").unwrap_or(n).to_owned());
        (inner, spool::gunzip(&packed, limit, |_| {}).map_err(named)?)
    } else if spool::is_zip(&packed).map_err(FormError::NotKept)? {
        let entries = spool::csv_entries(&packed, limit).map_err(named)?;
        let alipay_bill = entries.iter().any(|(n, _)| n.ends_with("业务明细.csv"));
        let (name, entry) = if provider == "alipay" && alipay_bill {
            drop(entries);
            crate::providers::alipay::trade_detail_of(&packed, limit).map_err(|e| match e {
                crate::providers::CallError::Refused(why) => named(why),
                other => named(other.to_string()),
            })?
        } else {
            only_csv(entries).map_err(named)?
        };
        (Some(name), entry)
    } else {
        let path = packed.keep().map_err(FormError::NotKept)?;
        return Ok(KeptFile {
            file: TempFile(Some(path)),
            ..kept
        });
    };
    let (size, hash) = hash_of(&statement).map_err(FormError::NotKept)?;
    let path = statement.keep().map_err(FormError::NotKept)?;
    Ok(KeptFile {
        name: name.map(|n| clip(&n, MAX_FILE_NAME).into_owned()),
        size,
        hash,
        file: TempFile(Some(path)),
    })
}

/// A zip's one CSV entry; more or none is refused, named.
fn only_csv(mut entries: Vec<(String, Spooled)>) -> Result<(String, Spooled), String> {
    match entries.len() {
        1 => Ok(entries.remove(0)),
        0 => Err("the zip holds no .csv file".into()),
        n => Err(format!(
            "the zip holds {n} .csv files ({}): upload the statement itself",
            entries
                .iter()
                .map(|(name, _)| quote(name).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A file's length and [`StatementHash`], read through once.
fn hash_of(file: &Spooled) -> std::io::Result<(usize, String)> {
    use std::io::Read;
    let mut reader = file.open()?;
    let (mut size, mut hash) = (0, StatementHash::default());
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok((size, hash.finish()));
        }
        size += n;
        hash.update(&buf[..n]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn kept(name: &str, bytes: &[u8]) -> KeptFile {
        let path = std::env::temp_dir().join(format!("reckon-upload-{}", uuid::Uuid::new_v4()));
        std::fs::write(&path, bytes).unwrap();
        KeptFile {
            name: Some(name.into()),
            size: bytes.len(),
            hash: String::new(),
            file: TempFile(Some(path)),
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_gzip_past_the_limit_is_refused_as_a_bomb_and_leaves_no_file() {
        let bomb = gzip(&vec![0u8; 1 << 20]);
        let upload = kept("bill.csv.gz", &bomb);
        let path = upload.file.0.clone().unwrap();
        let Err(FormError::Unpack(why)) = unpack(upload, "sandbox", 1000) else {
            panic!("a bomb was unpacked");
        };
        assert!(why.contains("decompression bomb"), "{why}");
        assert!(why.starts_with("\"bill.csv.gz\""), "{why}");
        assert!(!path.exists(), "the upload is removed");
        // Under the limit it is the statement, hashed as itself.
        let text = b"a,b\n1,2\n";
        let plain = unpack(kept("plain.csv", text), "sandbox", 1000).unwrap();
        let unzipped = unpack(kept("bill.csv.gz", &gzip(text)), "sandbox", 1000).unwrap();
        assert_eq!(unzipped.name.as_deref(), Some("bill.csv"));
        assert_eq!(unzipped.size, text.len());
        let mut h = StatementHash::default();
        h.update(text);
        assert_eq!(unzipped.hash, h.finish());
        assert_eq!(plain.name.as_deref(), Some("plain.csv"));
    }
}
