//! How Reckon takes memory: one allocator (mimalloc) for Rust and for
//! SQLite, small pages, and memory freed in bulk handed back on purpose.

use libmimalloc_sys as mi;
use libsqlite3_sys as sqlite;
use std::ffi::{c_int, c_void};

/// mimalloc instead of glibc's malloc for every binary built on Reckon (the
/// server, the tests, the benchmarks): under many connections glibc's
/// allocator showed in the HTTP threads' profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands memory freed in bulk back to the system now. mimalloc returns
/// memory freed by a thread other than the one that allocated it only when
/// the allocating thread next allocates: a reconciliation's statement rows
/// are made by the reader's thread and dropped by the matcher's, and the
/// reader's thread may sit idle once the file is read. (The day's payments
/// are deliberately not handed back: the run's write reuses their memory.)
pub(crate) fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers and has no preconditions; it
    // may be called from any thread at any time.
    unsafe { mi::mi_collect(true) };
}

/// Once per process, before SQLite's first connection (called by
/// [`crate::store::Db::connect`]).
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        small_pages();
        sqlite_on_mimalloc();
    });
}

/// No transparent huge pages for this process (unless
/// `MIMALLOC_ALLOW_THP=1` asks for them). On these machines (virtual, their
/// free memory handed back to the host) a fresh huge page costs several
/// times more to touch first than the small pages it replaces, and
/// rounding to 2 MiB raises the peak RSS.
fn small_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only a
    // flag of this process; a kernel that does not know it returns EINVAL,
    // which leaves things as they were.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// SQLite's memory from mimalloc, not glibc's malloc, and without its
/// memory statistics (a global mutex taken on every allocation). With two
/// allocators, memory the matcher let go of could not serve the write's
/// page cache: the write grew glibc's heaps (`mprotect`, page faults)
/// instead.
fn sqlite_on_mimalloc() {
    unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
        // SAFETY: any size is valid for `mi_malloc`.
        unsafe { mi::mi_malloc(n.max(0) as usize) }
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        // SAFETY: SQLite frees only what `malloc`/`realloc` gave it.
        unsafe { mi::mi_free(p) }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        // SAFETY: as in `free`; SQLite never passes a negative size.
        unsafe { mi::mi_realloc(p, n.max(0) as usize) }
    }
    unsafe extern "C" fn size(p: *mut c_void) -> c_int {
        // SAFETY: as in `free` (SQLite asks only about live blocks).
        let n = unsafe { mi::mi_usable_size(p) };
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }
    unsafe extern "C" fn roundup(n: c_int) -> c_int {
        // SAFETY: a pure function of its argument.
        let n = unsafe { mi::mi_good_size(n.max(0) as usize) };
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }
    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        sqlite::SQLITE_OK
    }
    unsafe extern "C" fn shutdown(_: *mut c_void) {}
    let methods = sqlite::sqlite3_mem_methods {
        xMalloc: Some(malloc),
        xFree: Some(free),
        xRealloc: Some(realloc),
        xSize: Some(size),
        xRoundup: Some(roundup),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: called once, before any connection (`init`'s `Once`, from
    // `Db::connect`): SQLite copies the methods before returning. Had a
    // connection been opened already, SQLite refuses (SQLITE_MISUSE) and
    // keeps its own allocator, which is correct, only slower.
    let refused = unsafe {
        sqlite::sqlite3_config(sqlite::SQLITE_CONFIG_MALLOC, &methods as *const _)
            | sqlite::sqlite3_config(sqlite::SQLITE_CONFIG_MEMSTATUS, 0 as c_int)
    };
    if refused != sqlite::SQLITE_OK {
        tracing::warn!(
            code = refused,
            "SQLite was in use already: it keeps its own allocator"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_allocates_through_mimalloc_and_the_process_uses_small_pages() {
        init();
        // SAFETY: plain allocations freed by their own allocator; prctl
        // reads a flag.
        unsafe {
            let from_sqlite = sqlite::sqlite3_malloc(100);
            assert!(!from_sqlite.is_null());
            assert!(
                mi::mi_is_in_heap_region(from_sqlite),
                "SQLite's memory comes from mimalloc"
            );
            sqlite::sqlite3_free(from_sqlite);
            // (What the check tells apart: glibc's malloc is not mimalloc's.)
            let from_libc = libc::malloc(100);
            assert!(!mi::mi_is_in_heap_region(from_libc));
            libc::free(from_libc);
            assert_eq!(libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0), 1);
        }
    }
}
