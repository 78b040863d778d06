//! A run's results as files for finance's tools: CSV (each cell safe to
//! open in a spreadsheet) and Parquet (snappy pages, a row group about
//! every [`ROWS_PER_GROUP`] rows), written as the results stream in — the
//! API, the console and the command line all write them here. Both have
//! the same columns, built once per row by [`cells`].

use super::export::csv_cell;
use crate::recon::{ResultRow, RunRow};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Rows per Parquet row group: what is held before it is written.
pub const ROWS_PER_GROUP: usize = 32_768;

/// The columns, in order; `true` for the whole numbers (INT64 in Parquet).
pub const COLUMNS: &[(&str, bool)] = &[
    ("run_id", false),
    ("provider_account", false),
    ("business_date", false),
    ("line_no", true),
    ("kind", false),
    ("provider_txn_id", false),
    ("payment_no", false),
    ("refund_no", false),
    ("amount", false),
    ("amount_minor", true),
    ("fee", false),
    ("fee_minor", true),
    ("currency", false),
    ("provider_status", false),
    ("reckon_status", false),
    ("outcome", false),
    ("matched_by", false),
    ("ticket_id", false),
    ("ticket_severity", false),
    ("ticket_status", false),
];

/// A cell: text or a whole number, either possibly empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Text(Option<String>),
    Int(Option<i64>),
}

/// A result row's cells, in [`COLUMNS`]' order.
pub fn cells(run: &RunRow, r: &ResultRow) -> Vec<Cell> {
    let t = |s: &Option<String>| Cell::Text(s.clone());
    let s = |s: &str| Cell::Text(Some(s.to_owned()));
    vec![
        s(&run.run_id),
        s(&run.provider),
        s(&run.business_date),
        Cell::Int(r.line_no),
        s(r.kind),
        t(&r.provider_txn_id),
        t(&r.payment_no),
        t(&r.refund_no),
        t(&r.amount),
        Cell::Int(r.amount_minor),
        t(&r.fee),
        Cell::Int(r.fee_minor),
        t(&r.currency),
        t(&r.provider_status),
        t(&r.reckon_status),
        s(&r.outcome),
        Cell::Text(r.matched_by.map(str::to_owned)),
        t(&r.ticket_id),
        t(&r.ticket_severity),
        t(&r.ticket_status),
    ]
}

/// The CSV header line.
pub fn csv_header() -> String {
    COLUMNS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(",")
        + "\n"
}

/// A result row as a CSV line.
pub fn csv_line(run: &RunRow, r: &ResultRow) -> String {
    let mut line = cells(run, r)
        .iter()
        .map(|c| match c {
            Cell::Text(v) => csv_cell(v.as_deref().unwrap_or("")),
            Cell::Int(v) => v.map(|n| n.to_string()).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

/// Writes the CSV of `rows` (the header first) to `out` as lines; stops
/// when `out` is gone.
pub async fn csv(
    run: &RunRow,
    mut rows: mpsc::Receiver<Vec<ResultRow>>,
    out: mpsc::Sender<Result<String, std::io::Error>>,
) {
    if out.send(Ok(csv_header())).await.is_err() {
        return;
    }
    while let Some(chunk) = rows.recv().await {
        let text: String = chunk.iter().map(|r| csv_line(run, r)).collect();
        if out.send(Ok(text)).await.is_err() {
            return;
        }
    }
}

/// The Parquet schema of a run's results: text as optional UTF8 byte
/// arrays, whole numbers (line, minor units) as optional INT64.
fn schema() -> parquet::errors::Result<Arc<Type>> {
    let mut fields = Vec::with_capacity(COLUMNS.len());
    for (name, int) in COLUMNS {
        let field = if *int {
            Type::primitive_type_builder(name, parquet::basic::Type::INT64)
        } else {
            Type::primitive_type_builder(name, parquet::basic::Type::BYTE_ARRAY)
                .with_logical_type(Some(parquet::basic::LogicalType::String))
        };
        fields.push(Arc::new(
            field
                .with_repetition(parquet::basic::Repetition::OPTIONAL)
                .build()?,
        ));
    }
    Ok(Arc::new(
        Type::group_type_builder("run_results")
            .with_fields(fields)
            .build()?,
    ))
}

/// Writes the Parquet file of `rows` to `out`, a row group at a time.
/// Blocking: runs on a thread of its own (`spawn_blocking`).
pub fn parquet_blocking<W: std::io::Write + Send>(
    run: &RunRow,
    mut rows: mpsc::Receiver<Vec<ResultRow>>,
    out: W,
) -> parquet::errors::Result<W> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("reckon {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut writer = SerializedFileWriter::new(out, schema()?, Arc::new(props))?;
    let mut group: Vec<Vec<Cell>> = Vec::with_capacity(ROWS_PER_GROUP);
    loop {
        let chunk = rows.blocking_recv();
        let end = chunk.is_none();
        for r in chunk.iter().flatten() {
            group.push(cells(run, r));
        }
        if group.len() >= ROWS_PER_GROUP || (end && !group.is_empty()) {
            write_group(&mut writer, &group)?;
            group.clear();
        }
        if end {
            return writer.into_inner();
        }
    }
}

/// One row group: each column's values and definition levels (1 present,
/// 0 empty).
fn write_group<W: std::io::Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    group: &[Vec<Cell>],
) -> parquet::errors::Result<()> {
    let mut rg = writer.next_row_group()?;
    let mut at = 0;
    while let Some(mut col) = rg.next_column()? {
        let mut levels = Vec::with_capacity(group.len());
        if COLUMNS[at].1 {
            let mut values = Vec::with_capacity(group.len());
            for row in group {
                match &row[at] {
                    Cell::Int(Some(v)) => {
                        values.push(*v);
                        levels.push(1);
                    }
                    _ => levels.push(0),
                }
            }
            col.typed::<Int64Type>()
                .write_batch(&values, Some(&levels), None)?;
        } else {
            let mut values = Vec::with_capacity(group.len());
            for row in group {
                match &row[at] {
                    Cell::Text(Some(v)) => {
                        values.push(ByteArray::from(v.as_str()));
                        levels.push(1);
                    }
                    _ => levels.push(0),
                }
            }
            col.typed::<ByteArrayType>()
                .write_batch(&values, Some(&levels), None)?;
        }
        col.close()?;
        at += 1;
    }
    rg.close()?;
    Ok(())
}

/// A `Write` that hands what is written on to an async reader in pieces of
/// about 64 KiB (the HTTP body). Used on a blocking thread.
pub struct ChannelWriter {
    pub out: mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
    pub buf: Vec<u8>,
}

impl ChannelWriter {
    pub fn new(out: mpsc::Sender<Result<Vec<u8>, std::io::Error>>) -> ChannelWriter {
        ChannelWriter {
            out,
            buf: Vec::with_capacity(PIECE),
        }
    }
}

const PIECE: usize = 64 * 1024;

impl std::io::Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= PIECE {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.out
            .blocking_send(Ok(piece))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "reader gone"))
    }
}

/// The file formats a run's results are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Parquet,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }
}

/// Pieces of a file being written, or why it stopped.
pub type Pieces = mpsc::Receiver<Result<Vec<u8>, std::io::Error>>;

/// `run`'s results written as `format`, streamed: read, joined and encoded
/// on tasks of their own while the caller sends the pieces on. An error
/// midway ends the pieces with it (so a download is cut, never complete
/// and wrong).
pub fn stream(engine: crate::engine::Engine, run: RunRow, format: Format) -> Pieces {
    let (rows_tx, rows) = mpsc::channel::<Vec<ResultRow>>(2);
    let (out, pieces) = mpsc::channel(16);
    let failed = out.clone();
    let read_run = run.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::recon::results(&engine, &read_run, rows_tx).await {
            tracing::error!(run_id = read_run.run_id, error = %e, "a run's results stopped midway");
            let _ = failed.send(Err(std::io::Error::other(e.to_string()))).await;
        }
    });
    match format {
        Format::Csv => {
            tokio::spawn(async move {
                let (lines_tx, mut lines) = mpsc::channel(4);
                let encode = csv(&run, rows, lines_tx);
                let send = async {
                    while let Some(line) = lines.recv().await {
                        let piece = line.map(String::into_bytes);
                        if out.send(piece).await.is_err() {
                            return;
                        }
                    }
                };
                tokio::join!(encode, send);
            });
        }
        Format::Parquet => {
            tokio::task::spawn_blocking(move || {
                let written = parquet_blocking(&run, rows, ChannelWriter::new(out.clone()))
                    .and_then(|mut w| Ok(std::io::Write::flush(&mut w)?));
                if let Err(e) = written {
                    let _ = out.blocking_send(Err(std::io::Error::other(e.to_string())));
                }
            });
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunRow {
        RunRow {
            run_id: "RUN1".into(),
            provider: "stripe-eu".into(),
            business_date: "2026-11-30".into(),
            source: "upload".into(),
            file_name: None,
            file_hash: None,
            bill_type: None,
            status: "COMPLETED".into(),
            rows_read: 1,
            summary_json: None,
            figures_json: None,
            error: None,
            started_by: "t".into(),
            started_at: 0,
            finished_at: None,
            config_version: None,
            note: None,
        }
    }

    #[test]
    fn a_csv_line_has_every_column_and_safe_cells() {
        let r = ResultRow {
            line_no: Some(7),
            kind: "payment",
            payment_no: Some("=cmd|' /C calc'!A0".into()),
            amount: Some("-12.50".into()),
            amount_minor: Some(-1250),
            currency: Some("EUR".into()),
            outcome: "AMOUNT_MISMATCH".into(),
            ..ResultRow::default()
        };
        let line = csv_line(&run(), &r);
        assert_eq!(line.matches(',').count(), COLUMNS.len() - 1);
        assert_eq!(
            line,
            "RUN1,stripe-eu,2026-11-30,7,payment,,'=cmd|' /C calc'!A0,,-12.50,-1250,,,EUR,,,AMOUNT_MISMATCH,,,,\n"
        );
    }
}
