//! A bill as it is downloaded and as it unpacks, written to a temporary
//! file under a limit on its length instead of held in memory: a bill of
//! any size costs a few buffers, and a decompression bomb or an endless
//! download is cut at the limit and refused, not grown into memory.

use std::io::{Read, Write};
use std::path::Path;

/// The largest bill an account takes unless its `max_bill_bytes` says
/// otherwise: downloaded, or unpacked (a zip's entries together).
pub const MAX_BILL_BYTES: u64 = 1 << 30;

/// The write buffer between a reader and the file.
const BUFFER: usize = 1 << 16;

/// An account's limit: its `max_bill_bytes`, else [`MAX_BILL_BYTES`].
pub fn limit(configured: Option<u64>) -> u64 {
    configured.unwrap_or(MAX_BILL_BYTES).max(1)
}

/// Bytes written down to a temporary file, removed when this is dropped.
#[derive(Debug)]
pub struct Spooled {
    path: tempfile::TempPath,
    len: u64,
}

impl Spooled {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file to read from its start.
    pub fn open(&self) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        Ok(std::io::BufReader::with_capacity(
            BUFFER,
            std::fs::File::open(&self.path)?,
        ))
    }

    /// The first `n` bytes (all of a small file: a refusal's body).
    pub fn head(&self, n: u64) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open()?.take(n).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// Why bytes could not be written down.
#[derive(Debug)]
pub enum SpoolError {
    /// More than the limit came: the rest was not read.
    TooLong,
    /// The source could not be read (a damaged gzip, a broken entry).
    Read(std::io::Error),
    /// The temporary file could not be written.
    Write(std::io::Error),
}

/// A new temporary file for a bill.
fn create() -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix("reckon-bill-").tempfile()
}

/// Writes what `from` reads to a temporary file, each piece also shown to
/// `seen` (a digest); refused once more than `limit` bytes come.
pub fn write(
    mut from: impl Read,
    limit: u64,
    mut seen: impl FnMut(&[u8]),
) -> Result<Spooled, SpoolError> {
    let file = create().map_err(SpoolError::Write)?;
    let mut out = std::io::BufWriter::with_capacity(BUFFER, file);
    let mut buf = vec![0u8; BUFFER];
    let mut len = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SpoolError::Read(e)),
        };
        len += n as u64;
        if len > limit {
            return Err(SpoolError::TooLong);
        }
        seen(&buf[..n]);
        out.write_all(&buf[..n]).map_err(SpoolError::Write)?;
    }
    let file = out
        .into_inner()
        .map_err(|e| SpoolError::Write(e.into_error()))?;
    Ok(Spooled {
        path: file.into_temp_path(),
        len,
    })
}

/// Writes a response's body to a temporary file as it arrives; refused
/// once more than `limit` bytes come (the rest is not read).
pub(crate) async fn body(mut res: reqwest::Response, limit: u64) -> Result<Spooled, BodyError> {
    use tokio::io::AsyncWriteExt;
    let file = create().map_err(BodyError::Write)?;
    let writer = tokio::fs::File::from_std(file.reopen().map_err(BodyError::Write)?);
    let mut out = tokio::io::BufWriter::with_capacity(BUFFER, writer);
    let mut len = 0u64;
    while let Some(chunk) = res.chunk().await.map_err(BodyError::Read)? {
        len += chunk.len() as u64;
        if len > limit {
            return Err(BodyError::TooLong);
        }
        out.write_all(&chunk).await.map_err(BodyError::Write)?;
    }
    out.flush().await.map_err(BodyError::Write)?;
    Ok(Spooled {
        path: file.into_temp_path(),
        len,
    })
}

/// Why a response's body could not be written down.
#[derive(Debug)]
pub(crate) enum BodyError {
    TooLong,
    Read(reqwest::Error),
    Write(std::io::Error),
}

/// Bytes already in memory, written down (a test's bill, a sandbox's).
pub fn of_bytes(bytes: &[u8]) -> std::io::Result<Spooled> {
    write(bytes, u64::MAX, |_| {}).map_err(|e| match e {
        SpoolError::Read(e) | SpoolError::Write(e) => e,
        SpoolError::TooLong => unreachable!("no limit"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_past_the_limit_are_refused_and_leave_no_file() {
        let mut seen = 0;
        let ok = write(&[7u8; 100][..], 100, |b| seen += b.len()).unwrap();
        assert_eq!((ok.len(), seen), (100, 100));
        assert_eq!(std::fs::read(ok.path()).unwrap(), vec![7u8; 100]);
        let path = ok.path().to_owned();
        drop(ok);
        assert!(!path.exists(), "removed when dropped");
        let endless = std::io::repeat(0);
        assert!(matches!(
            write(endless, 1 << 20, |_| {}),
            Err(SpoolError::TooLong)
        ));
    }
}
