//! A bill as it is downloaded and as it unpacks, written to a temporary
//! file under a limit on its length instead of held in memory: a bill of
//! any size costs a few buffers, and a decompression bomb or an endless
//! download is cut at the limit and refused, not grown into memory.

use crate::domain::quote;
use std::io::{Read, Seek, Write};
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
    /// A file already written (an upload), removed when this is dropped.
    pub fn adopt(path: std::path::PathBuf) -> std::io::Result<Spooled> {
        let len = std::fs::metadata(&path)?.len();
        Ok(Spooled {
            path: tempfile::TempPath::try_from_path(path)?,
            len,
        })
    }

    /// The file, no longer removed when this is dropped (the caller's now).
    pub fn keep(self) -> std::io::Result<std::path::PathBuf> {
        self.path.keep().map_err(|e| e.error)
    }

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

/// The most entries a bill zip may hold: Alipay's holds two (the detail
/// and its 汇总). Counted before the zip's directory is read, so a zip of
/// millions of entries is refused without reading them into memory.
pub const MAX_ENTRIES: u64 = 64;

/// Whether the file starts as a gzip stream does.
pub fn is_gzip(file: &Spooled) -> std::io::Result<bool> {
    Ok(file.head(2)? == [0x1f, 0x8b])
}

/// Whether the file starts as a zip's first entry does.
pub fn is_zip(file: &Spooled) -> std::io::Result<bool> {
    Ok(file.head(4)? == [0x50, 0x4b, 0x03, 0x04])
}

/// A gzip file (every member of it) unpacked to a file of its own, each
/// piece shown to `seen`; refused past `limit` bytes unpacked.
pub fn gunzip(packed: &Spooled, limit: u64, seen: impl FnMut(&[u8])) -> Result<Spooled, String> {
    let file = packed.open().map_err(|e| format!("cannot be read: {e}"))?;
    write(flate2::read::MultiGzDecoder::new(file), limit, seen).map_err(|e| match e {
        SpoolError::TooLong => format!(
            "gunzips to more than {limit} bytes, the most a bill may be (max_bill_bytes): \
             refused as a decompression bomb"
        ),
        SpoolError::Read(e) => format!("does not gunzip: {e}"),
        SpoolError::Write(e) => format!("could not be written down: {e}"),
    })
}

/// Every CSV entry of a zip, each unzipped to a file of its own,
/// checked against the size it declares, and all of them together against
/// `limit`.
pub fn csv_entries(zip: &Spooled, limit: u64) -> Result<Vec<(String, Spooled)>, String> {
    let refused = |why: String| why;
    let mut file = zip
        .open()
        .map_err(|e| refused(format!("cannot be read: {e}")))?;
    let declared = entries_declared(&mut file).map_err(|e| refused(format!("not a zip ({e})")))?;
    if declared > MAX_ENTRIES {
        return Err(refused(format!(
            "it declares {declared} entries, more than the {MAX_ENTRIES} a bill zip may hold; nothing was read"
        )));
    }
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| refused(format!("not a zip ({e})")))?;
    if archive.len() as u64 > MAX_ENTRIES {
        return Err(refused(format!(
            "it holds {} entries, more than the {MAX_ENTRIES} a bill zip may hold; nothing was read",
            archive.len()
        )));
    }
    let mut out = Vec::new();
    let mut left = limit;
    for i in 0..archive.len() {
        let entry = archive
            .by_index(i)
            .map_err(|e| refused(format!("entry {i}: {e}")))?;
        let name = entry_name(entry.name_raw());
        if !name.ends_with(".csv") {
            continue;
        }
        let size = entry.size();
        if size > left {
            return Err(refused(format!(
                "{} declares {size} bytes, past the {limit} bytes its entries may unpack to \
                 together (max_bill_bytes): refused as a decompression bomb",
                quote(&name)
            )));
        }
        // Limited to what it declares: an entry that unpacks to more is
        // refused as soon as it does.
        let written = write(entry, size, |_| {}).map_err(|e| match e {
            SpoolError::TooLong => refused(format!(
                "{} unpacks to more than the {size} bytes it declares: \
                 refused as a decompression bomb",
                quote(&name)
            )),
            SpoolError::Read(e) => refused(format!("{} does not unzip: {e}", quote(&name))),
            SpoolError::Write(e) => {
                refused(format!("{} could not be written down: {e}", quote(&name)))
            }
        })?;
        if written.len() != size {
            return Err(refused(format!(
                "{} unpacks to {} bytes, it declares {size}; nothing was read",
                quote(&name),
                written.len()
            )));
        }
        left -= size;
        out.push((name, written));
    }
    Ok(out)
}

/// How many entries a zip's end of central directory declares (its
/// ZIP64 record's count when it has one), read from the file's tail.
fn entries_declared(file: &mut (impl Read + Seek)) -> std::io::Result<u64> {
    use std::io::{Error, SeekFrom};
    let len = file.seek(SeekFrom::End(0))?;
    // The record is 22 bytes and a comment of up to 65,535.
    let tail_len = len.min(22 + 65_535);
    file.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact(&mut tail)?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or_else(|| Error::other("no end of central directory"))?;
    let u16_at = |i: usize| u16::from_le_bytes([tail[i], tail[i + 1]]) as u64;
    let total = u16_at(at + 10);
    if total != 0xFFFF {
        file.rewind()?;
        return Ok(total);
    }
    // ZIP64: the locator just before the record names where the ZIP64
    // end of central directory is; its count is at offset 32.
    let locator = (len - tail_len + at as u64)
        .checked_sub(20)
        .ok_or_else(|| Error::other("a ZIP64 count without its locator"))?;
    let mut buf = [0u8; 20];
    file.seek(SeekFrom::Start(locator))?;
    file.read_exact(&mut buf)?;
    if buf[..4] != [0x50, 0x4b, 0x06, 0x07] {
        return Err(Error::other("a ZIP64 count without its locator"));
    }
    let record = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
    let mut rec = [0u8; 40];
    file.seek(SeekFrom::Start(record))?;
    file.read_exact(&mut rec)?;
    if rec[..4] != [0x50, 0x4b, 0x06, 0x06] {
        return Err(Error::other("no ZIP64 end of central directory"));
    }
    file.rewind()?;
    Ok(u64::from_le_bytes(rec[32..40].try_into().expect("8 bytes")))
}

/// An entry's name: UTF-8 when it is (the zip's UTF-8 flag), else GBK as
/// Alipay writes it.
pub fn entry_name(raw: &[u8]) -> String {
    match std::str::from_utf8(raw) {
        Ok(name) => name.to_owned(),
        Err(_) => encoding_rs::GBK.decode(raw).0.into_owned(),
    }
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
