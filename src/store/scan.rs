//! Long read-only scans of a SQLite database, straight through SQLite's C
//! API on a connection of their own.
//!
//! sqlx hands each SQLite row from its worker thread to the async side and
//! copies every value on the way: a business day's million payments read
//! through the `Any` pool or a typed `SqliteConnection` took dozens of
//! times longer than the same statement stepped here. Everything that
//! writes still goes through sqlx; this module only reads, on its own
//! read-only connection (WAL: it sees the last commit when it starts and
//! never blocks a writer).
//!
//! Hand-written, not `rusqlite` (which links the same `libsqlite3-sys`):
//! through rusqlite the recon bench's day of payments read measurably
//! slower.

use libsqlite3_sys as ffi;
use std::ffi::{CStr, CString};
use std::path::Path;

/// A value bound to a `$n` parameter.
pub enum Bind<'a> {
    Int(i64),
    Text(&'a str),
}

/// The current row of a scan.
pub struct Row {
    stmt: *mut ffi::sqlite3_stmt,
}

impl Row {
    /// Column `i` as text (`None` for NULL). Bytes that are not UTF-8 read
    /// as `None` too: Reckon writes only UTF-8. (ASCII, as identifiers,
    /// currencies and statuses are, is taken by `is_ascii`'s word-at-a-time
    /// check: `from_utf8` on the short values of every row showed in a
    /// day's load, by perf.)
    pub fn text(&self, i: i32) -> Option<&str> {
        // SAFETY: `stmt` is a prepared statement positioned on a row (a
        // `Row` exists only inside `each`, between a step returning
        // SQLITE_ROW and the next step); the pointer and length come from
        // SQLite for that column and stay valid until the next step, which
        // the borrow of `self` outlives. `sqlite3_column_text` gives NULL
        // for NULL (and for no memory), not-NULL for text of any length:
        // no `sqlite3_column_type` first (one call less per value of a
        // day's payments).
        unsafe {
            let p = ffi::sqlite3_column_text(self.stmt, i);
            let n = ffi::sqlite3_column_bytes(self.stmt, i);
            if p.is_null() || n < 0 {
                return None;
            }
            let bytes = std::slice::from_raw_parts(p, n as usize);
            if bytes.is_ascii() {
                // ASCII is UTF-8.
                Some(std::str::from_utf8_unchecked(bytes))
            } else {
                std::str::from_utf8(bytes).ok()
            }
        }
    }

    /// Column `i` as an integer (`None` for NULL).
    pub fn int(&self, i: i32) -> Option<i64> {
        // SAFETY: as in `text`.
        unsafe {
            if ffi::sqlite3_column_type(self.stmt, i) == ffi::SQLITE_NULL {
                None
            } else {
                Some(ffi::sqlite3_column_int64(self.stmt, i))
            }
        }
    }
}

struct Conn(*mut ffi::sqlite3);

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: the handle came from sqlite3_open_v2 and is closed once,
        // after every statement: a `Stmt` lives only inside
        // `ReadOnly::each_row`, which borrows the connection.
        unsafe {
            ffi::sqlite3_close(self.0);
        }
    }
}

struct Stmt(*mut ffi::sqlite3_stmt);

impl Drop for Stmt {
    fn drop(&mut self) {
        // SAFETY: the statement came from sqlite3_prepare_v2 and is
        // finalized once, while its connection is open.
        unsafe {
            ffi::sqlite3_finalize(self.0);
        }
    }
}

fn message(db: *mut ffi::sqlite3) -> String {
    // SAFETY: `db` is an open handle; errmsg returns a NUL-terminated
    // string owned by SQLite, copied at once.
    unsafe {
        CStr::from_ptr(ffi::sqlite3_errmsg(db))
            .to_string_lossy()
            .into_owned()
    }
}

/// A read-only connection of its own to a SQLite database file, with
/// SQLite's default (2 MB) page cache — the pool's connections keep 64 MiB
/// each, which a scan would fill and keep.
pub struct ReadOnly {
    conn: Conn,
}

impl ReadOnly {
    pub fn open(path: &Path) -> Result<ReadOnly, String> {
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("database path {} contains NUL", path.display()))?;
        let mut db = std::ptr::null_mut();
        // SAFETY: a valid NUL-terminated path; SQLite writes the handle
        // (also on failure, when it must still be closed: `Conn` does).
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                c_path.as_ptr(),
                &mut db,
                ffi::SQLITE_OPEN_READONLY | ffi::SQLITE_OPEN_NOMUTEX,
                std::ptr::null(),
            )
        };
        let conn = Conn(db);
        if rc != ffi::SQLITE_OK {
            return Err(format!(
                "cannot open {}: {}",
                path.display(),
                message(conn.0)
            ));
        }
        // SAFETY: an open handle.
        unsafe {
            ffi::sqlite3_busy_timeout(conn.0, 5000);
        }
        Ok(ReadOnly { conn })
    }

    /// Runs `sql` (parameters written `$1`, `$2`, …, as for sqlx) and calls
    /// `each` for every row; returns how many there were. Blocking.
    pub fn each_row(
        &self,
        sql: &str,
        binds: &[Bind<'_>],
        mut each: impl FnMut(&Row),
    ) -> Result<u64, String> {
        let db = self.conn.0;
        let c_sql = CString::new(sql).map_err(|_| "query contains NUL".to_string())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: an open handle and a NUL-terminated query; -1 reads to NUL.
        unsafe {
            if ffi::sqlite3_prepare_v2(db, c_sql.as_ptr(), -1, &mut raw, std::ptr::null_mut())
                != ffi::SQLITE_OK
            {
                return Err(message(db));
            }
        }
        // Finalized when this function returns, before the connection can
        // be closed (it is borrowed meanwhile).
        let stmt = Stmt(raw);
        // Each `$n` of the query, by its place among the parameters.
        // (Asking SQLite for each name's place compares it with every
        // name before it: quadratic in a list's keys, the largest item of
        // the lookups' thread in `perf`.)
        let mut places = vec![0; binds.len()];
        // SAFETY: a prepared statement; a parameter's name is a
        // NUL-terminated string owned by SQLite (NULL for `?`), read at once.
        unsafe {
            for place in 1..=ffi::sqlite3_bind_parameter_count(stmt.0) {
                let name = ffi::sqlite3_bind_parameter_name(stmt.0, place);
                if name.is_null() {
                    continue;
                }
                let name = CStr::from_ptr(name).to_bytes();
                if let Some(n) = name
                    .strip_prefix(b"$")
                    .and_then(|n| std::str::from_utf8(n).ok())
                    .and_then(|n| n.parse::<usize>().ok())
                    && let Some(at) = n.checked_sub(1).and_then(|k| places.get_mut(k))
                {
                    *at = place;
                }
            }
        }
        for (k, (bind, &index)) in binds.iter().zip(&places).enumerate() {
            if index == 0 {
                return Err(format!("the query has no parameter ${}", k + 1));
            }
            // SAFETY: a prepared statement and one of its parameters; text
            // is copied by SQLite (SQLITE_TRANSIENT) before bind returns.
            let rc = unsafe {
                match bind {
                    Bind::Int(v) => ffi::sqlite3_bind_int64(stmt.0, index, *v),
                    Bind::Text(s) => ffi::sqlite3_bind_text(
                        stmt.0,
                        index,
                        s.as_ptr().cast(),
                        s.len() as i32,
                        ffi::SQLITE_TRANSIENT(),
                    ),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(message(db));
            }
        }
        let row = Row { stmt: stmt.0 };
        let mut rows = 0;
        loop {
            // SAFETY: a prepared, bound statement on an open connection.
            match unsafe { ffi::sqlite3_step(stmt.0) } {
                ffi::SQLITE_ROW => {
                    rows += 1;
                    each(&row);
                }
                ffi::SQLITE_DONE => break,
                _ => return Err(message(db)),
            }
        }
        Ok(rows)
    }
}

/// [`ReadOnly::each_row`] on a connection opened for it.
pub fn each_row(
    path: &Path,
    sql: &str,
    binds: &[Bind<'_>],
    each: impl FnMut(&Row),
) -> Result<u64, String> {
    ReadOnly::open(path)?.each_row(sql, binds, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_rows_with_parameters_nulls_and_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let url = format!("sqlite://{}?mode=rwc", path.display());
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        sqlx::query("CREATE TABLE t (a TEXT, b BIGINT)")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES ('x', 1), (NULL, 2), ('商户', NULL), ('y', 4)")
            .execute(&pool)
            .await
            .unwrap();
        let mut seen = Vec::new();
        let n = each_row(
            &path,
            "SELECT a, b FROM t WHERE b IS NULL OR (b >= $1 AND (a IS NULL OR a <> $2)) ORDER BY rowid",
            &[Bind::Int(2), Bind::Text("y")],
            |r| seen.push((r.text(0).map(str::to_owned), r.int(1))),
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(seen, vec![(None, Some(2)), (Some("商户".to_owned()), None)]);
        // Empty text is text, NULL is none, a number reads as its text.
        let mut texts = Vec::new();
        each_row(&path, "SELECT '', NULL, 'z', 42", &[], |r| {
            texts = (0..4).map(|i| r.text(i).map(str::to_owned)).collect()
        })
        .unwrap();
        assert_eq!(
            texts,
            [
                Some(String::new()),
                None,
                Some("z".into()),
                Some("42".into())
            ]
        );
        // Text that is not UTF-8 reads as none, ASCII or not around it.
        let mut odd = Vec::new();
        each_row(
            &path,
            "SELECT CAST(x'41ff42' AS TEXT), CAST(x'e59586' AS TEXT), CAST(x'7e7f' AS TEXT)",
            &[],
            |r| odd = (0..3).map(|i| r.text(i).map(str::to_owned)).collect(),
        )
        .unwrap();
        assert_eq!(odd, [None, Some("商".into()), Some("~\u{7f}".into())]);
        // Parameters out of order, repeated, and past $9: each binds its
        // own value ($12 is not $1 with a 2 after it).
        let values: Vec<i64> = (1..=12).map(|k| k * 100).collect();
        let binds: Vec<Bind> = values.iter().map(|v| Bind::Int(*v)).collect();
        let mut got = Vec::new();
        each_row(
            &path,
            "SELECT $12, $1, $10, $2, $12, $3, $4, $5, $6, $7, $8, $9, $11",
            &binds,
            |r| got = (0..13).map(|i| r.int(i).unwrap()).collect(),
        )
        .unwrap();
        assert_eq!(
            got,
            [
                1200, 100, 1000, 200, 1200, 300, 400, 500, 600, 700, 800, 900, 1100
            ]
        );
        let err = each_row(&path, "SELECT $1, $3", &binds[..3], |_| {}).unwrap_err();
        assert!(err.contains("$2"), "{err}");
        let err = each_row(&path, "SELECT nope FROM t", &[], |_| {}).unwrap_err();
        assert!(err.contains("nope"), "{err}");
        let err = each_row(&path, "SELECT a FROM t", &[Bind::Int(1)], |_| {}).unwrap_err();
        assert!(err.contains("$1"), "{err}");
    }
}
