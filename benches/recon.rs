//! Reconciliation at scale: a generated statement of N rows against N
//! local payments on SQLite, with 0.5% of each discrepancy class, read from
//! a file and reconciled by `import_statement`; next to a DuckDB hash join
//! of the same two data sets exported as CSV, timed in the same run, in
//! rounds taken in turn (each run on a fresh copy of the same database):
//! the machines are noisy, so the ratio is reported per round and as the
//! rounds' median. Writes its figures into BENCHMARKS.md.
//!
//! Then the day's edge: a second day of N payments, and the two days
//! reconciled one after the other twice per round — once as two
//! independent days (each day's statement carries all its payments; no
//! cut window: what a run did before it), once with 0.5% of the first
//! day's payments, paid in its last minutes, booked in the second day's
//! statement (the default 30-minute window: in transit, then arrived). Both
//! times and peak RSS are reported, each the median of the rounds.
//!
//!     cargo bench --bench recon                       # 1,000,000 rows, 5 rounds
//!     RECKON_BENCH_ROWS=100000 RECKON_BENCH_ROUNDS=3 cargo bench --bench recon
//!
//! DuckDB comes from PyPI (`pip install duckdb`); without it the comparison
//! is reported as missing.

mod support;

use reckon::config::LogFormat;
use reckon::providers::signing::Secret;
use std::io::Write;
use std::time::Instant;
use support::{config, cpu_secs, median, peak_rss_mib, restore, settle, write_section};

/// The case of row `i`: 0.5% of each class, the rest matched.
fn case(i: usize) -> &'static str {
    match i % 200 {
        0 => "PROVIDER_ONLY",
        1 => "LOCAL_ONLY",
        2 => "AMOUNT_MISMATCH",
        3 => "CURRENCY_MISMATCH",
        4 => "DUPLICATE",
        5 => "STATUS_LAG",
        _ => "MATCHED",
    }
}

/// `RECKON_BENCH_PARSE=FILE`: only read a sandbox statement, as the run's
/// reader does (a 64 KiB buffer, chunks of 4,096 rows), five times; the
/// fastest pass. (Under `valgrind --tool=callgrind` its instruction count
/// compares two builds on a noisy machine.)
fn parse_only(path: &str) {
    use reckon::providers::sandbox::statement::FORMAT;
    use reckon::statement::{Chunk, Pause, read};
    let mut best = f64::MAX;
    let mut rows = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let file = std::fs::File::open(path).unwrap();
        let mut statement = read(
            FORMAT,
            Box::new(std::io::BufReader::with_capacity(1 << 16, file)),
        );
        let mut chunk = Chunk::with_capacity(4096);
        rows = 0;
        loop {
            match statement.read_rows(&mut chunk, 4096).unwrap() {
                Pause::Full => {
                    rows += chunk.len();
                    chunk.clear();
                }
                Pause::Skipped(e) => panic!("{e:?}"),
                Pause::End(_) => break,
            }
        }
        rows += chunk.len();
        best = best.min(started.elapsed().as_secs_f64());
    }
    println!("parsed {rows} rows: {:.1} ms (fastest of 5)", best * 1000.0);
}

fn main() {
    if let Ok(path) = std::env::var("RECKON_BENCH_PARSE") {
        return parse_only(&path);
    }
    let n: usize = std::env::var("RECKON_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let on_pg = std::env::var("RECKON_BENCH_PG").is_ok_and(|v| v == "1");
    // The day's edge doubles the setup and runs four days a round: by
    // default only at the size it was measured at, and on SQLite.
    let edge = !on_pg && std::env::var("RECKON_BENCH_EDGE").map_or(n <= 1_000_000, |v| v == "1");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = on_pg.then(|| {
        support::postgres::Postgres::start().expect("PostgreSQL 15 (/usr/lib/postgresql/15/bin)")
    });
    let mut config = config(dir.path(), &Secret::random());
    let backend = if on_pg { "PostgreSQL" } else { "SQLite" };
    let date = "2026-11-30";
    let day_start = jiff::Timestamp::from_second(1_795_996_800).unwrap(); // 2026-11-30T00:00Z
    rt.block_on(async {
        reckon::telemetry::init(LogFormat::Pretty);
        if let Some(pg) = &server {
            config.database_url = pg.create("pristine", None).await.into();
        }
        let engine = reckon::startup::engine_of(&config).await.unwrap();

        // Local payments, and the same facts as two CSV files.
        let started = Instant::now();
        let statement_path = dir.path().join("statement.csv");
        let payments_path = dir.path().join("payments.csv");
        let mut statement = std::io::BufWriter::new(std::fs::File::create(&statement_path).unwrap());
        let mut local = std::io::BufWriter::new(std::fs::File::create(&payments_path).unwrap());
        writeln!(statement, "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at").unwrap();
        writeln!(local, "payment_no,provider_txn_id,amount_minor,currency,status").unwrap();
        let (mut rows, mut total) = (0i64, 0i64);
        // The day's edge: the last matched payments of the day, 0.5% of
        // them, are booked by the provider in the next day's statement
        // (the second day's files; the first day's own is unchanged).
        let crossing = |i: usize| edge && i >= n - n / 194 && case(i) == "MATCHED";
        let cross_path = dir.path().join("statement-cross.csv");
        let mut cross = std::io::BufWriter::new(std::fs::File::create(&cross_path).unwrap());
        writeln!(cross, "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at").unwrap();
        let (mut cross_rows, mut cross_total) = (0i64, 0i64);
        let mut carried: Vec<(String, i64)> = Vec::new();
        for i in 0..n {
            let c = case(i);
            let (no, txn, minor, _) = payment(i, "", day_start, n);
            if c != "PROVIDER_ONLY" {
                let status = if c == "STATUS_LAG" { "PENDING" } else { "SUCCEEDED" };
                writeln!(local, "{no},{txn},{minor},CNY,{status}").unwrap();
            }
            let listed = listed(i, "", day_start, n);
            for _ in 0..listed.copies {
                writeln!(statement, "{}{}", listed.line, listed.at).unwrap();
                rows += 1;
                total += listed.amount;
                if crossing(i) {
                    carried.push((listed.line.clone(), listed.amount));
                } else if edge {
                    writeln!(cross, "{}{}", listed.line, listed.at).unwrap();
                    cross_rows += 1;
                    cross_total += listed.amount;
                }
            }
        }
        writeln!(statement, "#summary,rows={rows},total_minor={total}").unwrap();
        writeln!(cross, "#summary,rows={cross_rows},total_minor={cross_total}").unwrap();
        statement.flush().unwrap();
        local.flush().unwrap();
        cross.flush().unwrap();
        drop((statement, local, cross));
        let written = started.elapsed();
        // The payments by `INSERT … SELECT`, the indexes of `payments`
        // built after (each row put into seven B-trees as it came was most
        // of the setup: 14 s at a million).
        let indexes = drop_indexes(&engine).await;
        seed_day(&engine, n, "", day_start).await;
        let next = if edge {
            Some(next_day(&engine, n, day_start, dir.path(), &carried).await)
        } else {
            None
        };
        create_indexes(&engine, &indexes).await;
        let generated = started.elapsed();
        println!(
            "generated {n} payments and a {rows}-row statement in {generated:.1?} (files {written:.1?}) on {backend}"
        );

        // Every round starts from a copy of the database as it stands
        // (SQLite: the file synced, no log beside it; PostgreSQL: a
        // database made from it as a template), and finds what the first
        // round found — no tickets, holds or rows of an earlier round.
        let db_path = dir.path().join("reckon.db");
        let pristine = dir.path().join("pristine.db");
        if on_pg {
            // As a database that autovacuum has been through.
            sqlx::query("VACUUM (ANALYZE) payments").execute(&engine.db.pool).await.unwrap();
        }
        engine.db.pool.close().await;
        drop(engine);
        if !on_pg {
            settle(&db_path).await;
            std::fs::rename(&db_path, &pristine).unwrap();
        }
        let rounds: usize = std::env::var("RECKON_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5)
            .max(1);
        let script = duck_script(&statement_path, &payments_path);
        let mut done: Vec<Round> = Vec::with_capacity(rounds);
        let mut last = None;
        for round in 1..=rounds {
            let mut config = config.clone();
            match &server {
                Some(pg) => {
                    config.database_url = pg.create("round", Some("pristine")).await.into();
                }
                None => restore(&pristine, &db_path),
            }
            let engine = reckon::startup::engine_of(&config).await.unwrap();
            // What the round before freed, handed back before counting.
            // SAFETY: `mi_collect` takes no pointers and has no
            // preconditions.
            unsafe { libmimalloc_sys::mi_collect(true) };
            // Reconcile, with the peak RSS counted from here.
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            let before = peak_rss_mib();
            let cpu_before = cpu_secs();
            let started = Instant::now();
            let run = reckon::recon::import_statement(
                &engine,
                reckon::recon::Import {
                    provider: "sandbox",
                    business_date: date,
                    source: "import",
                    file_name: Some("statement.csv"),
                    input: reckon::recon::Input::File(statement_path.clone()),
                    started_by: "bench",
                    accept_bad_lines: 0,
                    run_id: None,
                    hash: None,
                },
            )
            .await
            .unwrap();
            let secs = started.elapsed().as_secs_f64();
            let cpu = cpu_secs() - cpu_before;
            let rss = peak_rss_mib();
            assert_eq!(run.status, "COMPLETED");
            let figures: serde_json::Value =
                serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
            if round == rounds {
                let pool = &engine.db.pool;
                let floor_secs = write_floor(pool, on_pg).await;
                // The STATUS_LAG repairs the run queued, as the server's
                // worker would do them (the bench's provider API is not
                // listening: each status query fails fast).
                let started = Instant::now();
                while reckon::workers::run_provider_tasks(&engine, engine.now()).await.unwrap() > 0 {}
                let repair_secs = started.elapsed().as_secs_f64();
                let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies")
                    .fetch_one(pool)
                    .await
                    .unwrap();
                last = Some((floor_secs, repair_secs, tickets));
            }
            engine.db.pool.close().await;
            drop(engine);
            // The same join in DuckDB, same files, same machine, in turn.
            let duck = duckdb(&script);
            if let Some((_, _, classes)) = &duck {
                assert!(
                    same_classes(classes, &figures["classes"]),
                    "DuckDB and Reckon disagree: {classes} against {}",
                    figures["classes"]
                );
            }
            if round == rounds {
                if let Some((_, _, classes)) = &duck {
                    println!("duckdb classes: {classes}");
                }
                println!("reckon classes: {}", figures["classes"]);
            }
            let phase = |name: &str| figures["millis"][name].as_f64().unwrap_or(0.0) / 1000.0;
            let r = Round {
                secs,
                cpu,
                before,
                rss,
                read: phase("read_and_match"),
                classify: phase("classify"),
                write: phase("write"),
                duck: duck.map(|(wall, cpu, _)| (wall, cpu)),
                figures,
            };
            println!(
                "round {round} of {rounds}: {secs:.2} s (read {:.2}, write {:.2}), {rss:.0} MiB; DuckDB {}",
                r.read,
                r.write,
                r.ratio().map_or("-".into(), |x| format!("{:.2} s, {x:.2}×", r.duck.unwrap().0)),
            );
            done.push(r);
        }
        let two = match &next {
            Some(next) => Some(
                two_days(
                    &config,
                    rounds,
                    (&pristine, &db_path),
                    [(date, &statement_path), (NEXT_DATE, &next.own)],
                    [(date, &cross_path), (NEXT_DATE, &next.cross)],
                    carried.len(),
                )
                .await,
            ),
            None => None,
        };
        let (floor_secs, repair_secs, tickets) = last.unwrap();
        let r = done.last().unwrap();
        let Round {
            secs: reckon_secs,
            cpu: reckon_cpu,
            before,
            rss,
            read: matching,
            classify,
            write,
            ..
        } = *r;
        let figures = &r.figures;
        let cpu = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(0);
        let duck_secs = r.duck.map(|(wall, _)| wall);
        let duck_line = match r.duck {
            Some((d, cpu)) => format!(
                "| DuckDB hash join + classification of the same two CSV files (`duckdb` from PyPI) | {d:.2} s ({cpu:.2} CPU-s) |\n\
                 | Reckon / DuckDB | {:.2}× |\n",
                reckon_secs / d
            ),
            None => "| DuckDB | not measured: `pip install duckdb` |\n".to_string(),
        };
        let duck_matching = match duck_secs {
            Some(d) => format!(" ({:.2}× DuckDB)", (matching + classify) / d),
            None => String::new(),
        };
        let at_floor = matching + classify + floor_secs;
        let duck_floor = match duck_secs {
            Some(d) => format!(" ({:.2}× DuckDB)", at_floor / d),
            None => String::new(),
        };
        let command = command(n, rounds, on_pg);
        let report = format!(
            "## Last run: reconciliation on {backend}\n\n\
             Measured {today} on this machine ({cpu} cores), {backend}{fsync}, {rounds} rounds in one run: `{command}`.\n\
             {n} local payments and a {rows}-row statement, 0.5% of each class (PROVIDER_ONLY, LOCAL_ONLY, \
             AMOUNT_MISMATCH, CURRENCY_MISMATCH, DUPLICATE, STATUS_LAG), the rest matching. Each round \
             reconciles the day on a fresh copy of the same database, then DuckDB joins the same two files; \
             the table is the last round.\n\n\
             | what | figure |\n|---|---|\n\
             | reconcile: read and hash the file, match it against the day's payments, write {tickets} tickets and the rows behind them, queue {lag} STATUS_LAG repairs | **{reckon_secs:.2} s** ({reckon_cpu:.2} CPU-s) |\n\
             | of which: reading, hashing and matching the file as it is read (the day's payments loading meanwhile) | {matching:.2} s |\n\
             | of which: classifying the rows that did not plainly match, and the day's payments no row names | {classify:.2} s |\n\
             | (the two above: the work DuckDB's join does{duck_matching}) | {:.2} s |\n\
             | of which: writing the tickets, holds, alerts, the rows behind the tickets, the repair tasks | {write:.2} s |\n\
             | (the database's floor for that write: the same rows put back by one `INSERT … SELECT` per table, a transaction each) | {floor_secs:.2} s |\n\
             | (the run if its write cost no more than that floor{duck_floor}) | {at_floor:.2} s |\n\
             | then the worker: {lag} STATUS_LAG repairs tried (stored callback, else a status query) | {repair_secs:.1} s |\n\
             | rows/s (statement rows + local payments) | {:.0} |\n\
             | peak RSS while reconciling (the bench's process{server_rss}; {before:.0} MiB just before the run) | {rss:.0} MiB ({rss_mb:.0} MB) |\n\
             {duck_line}\
             | (setup, not timed: generating the files, inserting the data, indexing it) | {:.1} s |\n\n\
             {}\n\
             Matched: {matched}.\n",
            matching + classify,
            (rows as f64 + n as f64) / reckon_secs,
            generated.as_secs_f64(),
            rounds_table(&done),
            today = jiff::Timestamp::now().strftime("%Y-%m-%d"),
            lag = figures["classes"]["STATUS_LAG"],
            matched = figures["matched"],
            rss_mb = rss * 1.048_576,
            fsync = if on_pg { " 15 (`benches/support/postgres.rs`: fsync and synchronous_commit on)" } else { "" },
            server_rss = if on_pg { ", not the PostgreSQL server's" } else { "" },
        );
        println!("{report}");
        write_section(&format!("## Last run: reconciliation on {backend}"), &report);
        current_row(backend, n, &done, &command);
        if let Some(two) = two {
            let report = two.report(n, carried.len(), rounds);
            println!("{report}");
            write_section("## Current: the day's edge", &report);
        }
    });
    drop(server);
    // RECKON_BENCH_KEEP=1 keeps the database and the two CSV files, to
    // look at the queries by hand.
    if std::env::var("RECKON_BENCH_KEEP").is_ok() {
        println!("kept {}", dir.keep().display());
    }
}

/// Payment `i` of a day (`day` is "" for the first, "1" for the second):
/// payment_no, transaction id, amount, made at (through the day in order,
/// as a day's payments are; paid two seconds later). What [`seed_day`]
/// inserts, in SQL, for the same `i`.
fn payment(i: usize, day: &str, start: jiff::Timestamp, n: usize) -> (String, String, i64, i64) {
    (
        format!("PAY{day}{i:09}"),
        format!("SBX{day}{i:09}"),
        100 + (i as i64 % 9_900),
        start.as_microsecond() + i as i64 * (86_000_000_000 / n as i64),
    )
}

/// Payment `i` of a day as the provider's statement lists it: its line up
/// to the time, the time, its amount, and how many times it is listed
/// (not at all for a LOCAL_ONLY, twice for a DUPLICATE). Both days' statements
/// are written from it; the rows crossing the cut keep the line and take
/// the next day's time.
struct Listed {
    line: String,
    at: String,
    amount: i64,
    copies: usize,
}

fn listed(i: usize, day: &str, start: jiff::Timestamp, n: usize) -> Listed {
    let c = case(i);
    let (no, txn, minor, created) = payment(i, day, start, n);
    let (amount, currency) = match c {
        "AMOUNT_MISMATCH" => (minor + 1, "CNY"),
        "CURRENCY_MISMATCH" => (minor, "USD"),
        _ => (minor, "CNY"),
    };
    Listed {
        line: format!(
            "payment,{txn},{no},,,SUCCEEDED,{}.{:02},{currency},",
            amount / 100,
            amount % 100
        ),
        at: jiff::Timestamp::from_microsecond(created)
            .unwrap()
            .to_string(),
        amount,
        copies: match c {
            "LOCAL_ONLY" => 0,
            "DUPLICATE" => 2,
            _ => 1,
        },
    }
}

/// The command that reproduces a run.
fn command(n: usize, rounds: usize, on_pg: bool) -> String {
    format!(
        "{}RECKON_BENCH_ROWS={n} RECKON_BENCH_ROUNDS={rounds} cargo bench --bench recon",
        if on_pg { "RECKON_BENCH_PG=1 " } else { "" }
    )
}

/// The day's `n` payments (the classes of [`case`], PROVIDER_ONLY
/// missing), as [`payment`] makes them, by one `INSERT … SELECT` over a
/// generated series: setup, not timed.
async fn seed_day(engine: &reckon::engine::Engine, n: usize, day: &str, start: jiff::Timestamp) {
    let pg = engine.db.kind == reckon::store::DbKind::Postgres;
    let (series, digits) = if pg {
        (
            "generate_series(0, $1 - 1) AS k(i)",
            "lpad(i::text, 9, '0')",
        )
    } else {
        ("k", "substr('000000000' || i, -9)")
    };
    let with = if pg {
        ""
    } else {
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $1) "
    };
    let sql = format!(
        "INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
         currency, status, version, created_by, awaiting_recon, created_at, updated_at, paid_at) \
         {with}SELECT $2 || {digits}, $2 || {digits}, 1, 'sandbox', $3 || {digits}, 100 + i % 9900, 'CNY', \
         CASE WHEN i % 200 = 5 THEN 'PENDING' ELSE 'SUCCEEDED' END, 1, 'bench', 0, $4 + i * $5, $4 + i * $5, \
         CASE WHEN i % 200 = 5 THEN NULL ELSE $4 + i * $5 + 2000000 END \
         FROM {series} WHERE i % 200 <> 0"
    );
    sqlx::query(&sql)
        .bind(n as i64)
        .bind(format!("PAY{day}"))
        .bind(format!("SBX{day}"))
        .bind(start.as_microsecond())
        .bind(86_000_000_000 / n as i64)
        .execute(&engine.db.pool)
        .await
        .unwrap();
}

/// Drops the indexes of `payments` that no constraint needs; returns their
/// definitions, to build them again once the payments are in.
async fn drop_indexes(engine: &reckon::engine::Engine) -> Vec<String> {
    let pool = &engine.db.pool;
    let sql = if engine.db.kind == reckon::store::DbKind::Postgres {
        "SELECT indexname::text, indexdef FROM pg_indexes WHERE tablename = 'payments' \
         AND indexname NOT IN (SELECT conname FROM pg_constraint)"
    } else {
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'payments' AND sql IS NOT NULL"
    };
    let found: Vec<(String, String)> = sqlx::query_as(sql).fetch_all(pool).await.unwrap();
    for (name, _) in &found {
        sqlx::query(&format!("DROP INDEX {name}"))
            .execute(pool)
            .await
            .unwrap();
    }
    found.into_iter().map(|(_, def)| def).collect()
}

async fn create_indexes(engine: &reckon::engine::Engine, indexes: &[String]) {
    for sql in indexes {
        sqlx::query(sql).execute(&engine.db.pool).await.unwrap();
    }
}

/// The bench's line in "Current: reconciliation": its backend's table, its
/// size's row (added, or put in place of the last run's at that size).
fn current_row(backend: &str, n: usize, done: &[Round], command: &str) {
    let med = |f: &dyn Fn(&Round) -> Option<f64>| {
        let mut v: Vec<f64> = done.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| median(&v))
    };
    let fmt = |x: Option<f64>, unit: &str| x.map_or("-".to_string(), |x| format!("{x:.2}{unit}"));
    let row = format!(
        "| {n} | **{}** | {} | {} | {} | {} MiB | {} | **{}** | {} | {} | `{command}` |",
        fmt(med(&|r| Some(r.secs)), " s"),
        fmt(med(&|r| Some(r.read)), " s"),
        fmt(med(&|r| Some(r.classify)), " s"),
        fmt(med(&|r| Some(r.write)), " s"),
        med(&|r| Some(r.rss)).map_or("-".into(), |x| format!("{x:.0}")),
        fmt(med(&|r| r.duck.map(|d| d.0)), " s"),
        fmt(med(&Round::ratio), "×"),
        done.len(),
        jiff::Timestamp::now().strftime("%Y-%m-%d"),
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let heading = "## Current: reconciliation";
    let (before, section, after) = match old.find(&format!("{heading}\n")) {
        Some(at) => {
            let rest = &old[at + heading.len() + 1..];
            let end = rest
                .find("\n## ")
                .map_or(old.len(), |e| at + heading.len() + 1 + e + 1);
            (&old[..at], &old[at..end], &old[end..])
        }
        None => (old.as_str(), "", ""),
    };
    let mut section: Vec<String> =
        if section.contains("### SQLite") && section.contains("### PostgreSQL") {
            section.lines().map(str::to_owned).collect()
        } else {
            current_skeleton().lines().map(str::to_owned).collect()
        };
    let sub = section
        .iter()
        .position(|l| l == &format!("### {backend}"))
        .expect("the backend's table");
    // The table: its header and rule, then a row per size, by size.
    let head = sub
        + section[sub..]
            .iter()
            .position(|l| l.starts_with("| rows"))
            .expect("a table");
    let mut at = head + 2;
    while at < section.len() && section[at].starts_with("| ") {
        let size: usize = section[at][2..]
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if size == n {
            section.remove(at);
            break;
        }
        if size > n {
            break;
        }
        at += 1;
    }
    section.insert(at, row);
    let mut out = before.to_string();
    if !before.is_empty() && !before.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&section.join("\n"));
    out.push('\n');
    if !after.is_empty() {
        out.push('\n');
        out.push_str(after.trim_start_matches('\n'));
    }
    std::fs::write(&path, out).unwrap();
}

/// "Current: reconciliation" with its two tables and no rows yet.
fn current_skeleton() -> String {
    let table = "| rows | run | read and match | classify | write | peak RSS | DuckDB | Reckon / DuckDB | rounds | measured | command |\n\
                 |---|---|---|---|---|---|---|---|---|---|---|";
    format!(
        "## Current: reconciliation\n\n\
         N local payments of one day and an N-row statement (0.5% of each class, the rest matching), \
         reconciled by `import_statement` from the file on a fresh copy of the database, then DuckDB's \
         join of the same two CSV files, in turn, in each round. Every figure is the median of the \
         rounds of one run; peak RSS is the bench's process (not PostgreSQL's server). Each run \
         rewrites its row, and its details go to \"Last run\" below.\n\n\
         ### SQLite\n\n{table}\n\n\
         ### PostgreSQL\n\n{table}\n\n\
         Targets: SQLite at 10,000,000 rows ≤ 15 s and ≤ 1 GB peak; PostgreSQL at \
         1,000,000 rows ≤ 1.5× DuckDB.\n"
    )
}

/// The database's own floor for what the run wrote (the bench's database
/// held none of it before): every ticket, hold, alert, statement row and
/// task taken out, then all of it written back by one `INSERT … SELECT`
/// per table, each in a transaction of its own — the same rows into the
/// same B-trees, without the run's statements, bindings and commits.
/// Seconds.
async fn write_floor(pool: &sqlx::AnyPool, on_pg: bool) -> f64 {
    let tables = [
        "discrepancies",
        "payment_holds",
        "alerts",
        "recon_rows",
        "provider_tasks",
    ];
    let (schema, begin, checkpoint) = if on_pg {
        ("public", "BEGIN", "CHECKPOINT")
    } else {
        ("main", "BEGIN IMMEDIATE", "PRAGMA wal_checkpoint(TRUNCATE)")
    };
    let mut conn = pool.acquire().await.unwrap();
    for t in tables {
        run(
            &mut conn,
            format!("CREATE TEMP TABLE floor_{t} AS SELECT * FROM {schema}.{t}"),
        )
        .await;
    }
    run(&mut conn, begin.into()).await;
    for t in tables {
        run(&mut conn, format!("DELETE FROM {schema}.{t}")).await;
    }
    run(&mut conn, "COMMIT".into()).await;
    run(&mut conn, checkpoint.into()).await;
    let started = Instant::now();
    for t in tables {
        run(&mut conn, begin.into()).await;
        run(
            &mut conn,
            format!("INSERT INTO {schema}.{t} SELECT * FROM floor_{t}"),
        )
        .await;
        run(&mut conn, "COMMIT".into()).await;
    }
    let secs = started.elapsed().as_secs_f64();
    for t in tables {
        run(&mut conn, format!("DROP TABLE floor_{t}")).await;
    }
    secs
}

async fn run(conn: &mut sqlx::AnyConnection, sql: String) {
    sqlx::query(&sql).execute(conn).await.unwrap();
}

/// One round: the run's wall and CPU seconds, the peak RSS it reached
/// (and where it started), its phases, DuckDB's wall and CPU seconds.
struct Round {
    secs: f64,
    cpu: f64,
    before: f64,
    rss: f64,
    read: f64,
    classify: f64,
    write: f64,
    duck: Option<(f64, f64)>,
    figures: serde_json::Value,
}

impl Round {
    fn ratio(&self) -> Option<f64> {
        self.duck.map(|(wall, _)| self.secs / wall)
    }
}

/// Every round's figures, and the median of their ratios.
fn rounds_table(done: &[Round]) -> String {
    let mut out = String::from(
        "| round | run | read and match | write | peak RSS | DuckDB | Reckon / DuckDB |\n|---|---|---|---|---|---|---|\n",
    );
    for (i, r) in done.iter().enumerate() {
        let (duck, ratio) = match (r.duck, r.ratio()) {
            (Some((d, _)), Some(x)) => (format!("{d:.2} s"), format!("{x:.2}×")),
            _ => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "| {} | {:.2} s | {:.2} s | {:.2} s | {:.0} MiB | {duck} | {ratio} |\n",
            i + 1,
            r.secs,
            r.read,
            r.write,
            r.rss
        ));
    }
    let mut ratios: Vec<f64> = done.iter().filter_map(Round::ratio).collect();
    if !ratios.is_empty() {
        ratios.sort_by(f64::total_cmp);
        let median = median(&ratios);
        let under = ratios.iter().filter(|x| **x <= 2.0).count();
        out.push_str(&format!(
            "\nReckon / DuckDB, median of the {} rounds: **{median:.2}×** (at or under 2.00× in {under} of {}; \
             {:.2}–{:.2}×).\n",
            ratios.len(),
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1]
        ));
    }
    out
}

/// Whether DuckDB's counts per class (Python's `[('CLASS', n), …]`) are
/// Reckon's (`{"CLASS": n, …}`): the two computed the same thing. The
/// join knows no cut: what Reckon holds IN_TRANSIT near the day's end
/// (the next day not reconciled yet) is its LOCAL_ONLY.
fn same_classes(duck: &str, reckon: &serde_json::Value) -> bool {
    let Some(reckon) = reckon.as_object() else {
        return false;
    };
    let mut reckon = reckon.clone();
    if let Some(waiting) = reckon.remove("IN_TRANSIT").and_then(|v| v.as_i64()) {
        let local = reckon
            .get("LOCAL_ONLY")
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        reckon.insert("LOCAL_ONLY".into(), (local + waiting).into());
    }
    let pairs: Vec<(String, i64)> = duck
        .trim_matches(['[', ']'])
        .split("), (")
        .filter_map(|pair| {
            let (class, count) = pair.trim_matches(['(', ')']).split_once(", ")?;
            Some((class.trim_matches('\'').to_owned(), count.parse().ok()?))
        })
        .collect();
    pairs.len() == reckon.len()
        && pairs
            .iter()
            .all(|(class, n)| reckon.get(class).and_then(serde_json::Value::as_i64) == Some(*n))
}

/// The DuckDB join and classification of the two files, as a Python
/// script printing its wall and CPU seconds, then the counts per class.
fn duck_script(statement: &std::path::Path, payments: &std::path::Path) -> String {
    format!(
        "import duckdb, time\n\
         t, c = time.time(), time.process_time()\n\
         con = duckdb.connect()\n\
         con.execute('SET enable_progress_bar = false')\n\
         r = con.execute(\"\"\"\n\
         WITH s AS (SELECT * FROM read_csv('{s}', comment='#', header=true, all_varchar=true)),\n\
              p AS (SELECT * FROM read_csv('{p}', header=true, all_varchar=true)),\n\
              d AS (SELECT txn_id, count(*) AS copies FROM s GROUP BY txn_id)\n\
         SELECT CASE WHEN p.payment_no IS NULL THEN 'PROVIDER_ONLY' WHEN s.txn_id IS NULL THEN 'LOCAL_ONLY'\n\
                     WHEN d.copies > 1 THEN 'DUPLICATE' WHEN s.currency <> p.currency THEN 'CURRENCY_MISMATCH'\n\
                     WHEN CAST(round(CAST(s.amount AS DECIMAL(18,2)) * 100) AS BIGINT) <> CAST(p.amount_minor AS BIGINT) THEN 'AMOUNT_MISMATCH'\n\
                     WHEN p.status <> 'SUCCEEDED' THEN 'STATUS_LAG' ELSE 'MATCHED' END AS class, count(*)\n\
         FROM s FULL OUTER JOIN p ON s.txn_id = p.provider_txn_id LEFT JOIN d ON d.txn_id = s.txn_id\n\
         GROUP BY 1 ORDER BY 1\"\"\").fetchall()\n\
         print(time.time() - t, time.process_time() - c)\n\
         print(r)\n",
        s = statement.display(),
        p = payments.display()
    )
}

/// Runs the script: DuckDB's wall and CPU seconds and its counts per
/// class, or `None` (said why) without Python or DuckDB.
fn duckdb(script: &str) -> Option<(f64, f64, String)> {
    let out = match std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
    {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            eprintln!("duckdb: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        Err(e) => {
            eprintln!("python3: {e}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let mut t = lines
        .next()?
        .split_whitespace()
        .map(|v| v.parse::<f64>().ok());
    let (wall, cpu) = (t.next()??, t.next()??);
    Some((wall, cpu, lines.next().unwrap_or("").to_owned()))
}

/// The second business day.
const NEXT_DATE: &str = "2026-12-01";

/// The second day's statements: its own rows only, and the same with the
/// first day's crossing rows booked first.
struct NextDay {
    own: std::path::PathBuf,
    cross: std::path::PathBuf,
}

/// The second day: `n` payments of its own (the same classes), inserted,
/// and its two statements written, row by row. Its payments are made
/// through the day as the first day's are.
async fn next_day(
    engine: &reckon::engine::Engine,
    n: usize,
    day_start: jiff::Timestamp,
    dir: &std::path::Path,
    carried: &[(String, i64)],
) -> NextDay {
    let start =
        jiff::Timestamp::from_microsecond(day_start.as_microsecond() + 86_400_000_000).unwrap();
    let own = dir.join("statement-next.csv");
    let cross = dir.join("statement-next-cross.csv");
    seed_day(engine, n, "1", start).await;
    // Booked in the first seconds of the second day.
    let booked = jiff::Timestamp::from_microsecond(start.as_microsecond() + 3_000_000)
        .unwrap()
        .to_string();
    let write = |path: &std::path::Path, first: &[(String, i64)]| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        writeln!(
            f,
            "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at"
        )
        .unwrap();
        let (mut rows, mut total) = (0i64, 0i64);
        for (line, amount) in first {
            writeln!(f, "{line}{booked}").unwrap();
            rows += 1;
            total += amount;
        }
        for i in 0..n {
            let listed = listed(i, "1", start, n);
            for _ in 0..listed.copies {
                writeln!(f, "{}{}", listed.line, listed.at).unwrap();
                rows += 1;
                total += listed.amount;
            }
        }
        writeln!(f, "#summary,rows={rows},total_minor={total}").unwrap();
        f.flush().unwrap();
    };
    write(&own, &[]);
    write(&cross, carried);
    NextDay { own, cross }
}

/// One way of reconciling the two days, per round: both runs' wall and
/// CPU seconds, the peak RSS over both, the second run's figures.
#[derive(Default)]
struct TwoDays {
    secs: Vec<f64>,
    cpu: Vec<f64>,
    rss: Vec<f64>,
    tickets: i64,
    /// Records still in transit after both runs (waiting on a day neither
    /// run reconciled: the one before the first, the one after the second).
    in_transit: i64,
    figures: Vec<serde_json::Value>,
}

/// The two days reconciled `rounds` times each way, in turn: as two
/// independent days (no cut window), and with the crossing rows in the
/// second day's statement (the default window). Each run on a fresh copy
/// of the database.
async fn two_days(
    config: &reckon::config::Config,
    rounds: usize,
    (pristine, db_path): (&std::path::Path, &std::path::Path),
    independent: [(&str, &std::path::Path); 2],
    crossing: [(&str, &std::path::Path); 2],
    crossed: usize,
) -> [TwoDays; 2] {
    let mut apart = config.clone();
    apart.cut_window.minutes = 0;
    let mut out: [TwoDays; 2] = Default::default();
    for round in 1..=rounds {
        for (way, (cfg, days)) in [(&apart, independent), (config, crossing)]
            .into_iter()
            .enumerate()
        {
            restore(pristine, db_path);
            let engine = reckon::startup::engine_of(cfg).await.unwrap();
            // SAFETY: `mi_collect` takes no pointers and has no
            // preconditions.
            unsafe { libmimalloc_sys::mi_collect(true) };
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            let cpu_before = cpu_secs();
            let started = Instant::now();
            let mut figures = Vec::new();
            for (date, path) in days {
                let run = reckon::recon::import_statement(
                    &engine,
                    reckon::recon::Import {
                        provider: "sandbox",
                        business_date: date,
                        source: "import",
                        file_name: Some("statement.csv"),
                        input: reckon::recon::Input::File(path.to_path_buf()),
                        started_by: "bench",
                        accept_bad_lines: 0,
                        run_id: None,
                        hash: None,
                    },
                )
                .await
                .unwrap();
                assert_eq!(run.status, "COMPLETED");
                figures.push(
                    serde_json::from_str::<serde_json::Value>(run.figures_json.as_deref().unwrap())
                        .unwrap(),
                );
            }
            let secs = started.elapsed().as_secs_f64();
            let cpu = cpu_secs() - cpu_before;
            let rss = peak_rss_mib();
            let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies")
                .fetch_one(&engine.db.pool)
                .await
                .unwrap();
            let in_transit: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM recon_edges WHERE state = 'IN_TRANSIT'")
                    .fetch_one(&engine.db.pool)
                    .await
                    .unwrap();
            if way == 1 {
                // Every crossing payment arrived in the second statement.
                assert_eq!(figures[1]["edge_arrived"], crossed as i64, "{}", figures[1]);
            }
            engine.db.pool.close().await;
            drop(engine);
            let t = &mut out[way];
            t.secs.push(secs);
            t.cpu.push(cpu);
            t.rss.push(rss);
            t.tickets = tickets;
            t.in_transit = in_transit;
            t.figures = figures;
            println!(
                "two days, round {round} of {rounds}, {}: {secs:.2} s, {rss:.0} MiB, {tickets} tickets",
                ["independent", "crossing the cut"][way]
            );
        }
    }
    // The same findings either way: the crossing payments match, the
    // first day's LOCAL_ONLY near its end wait for the second statement
    // and are LOCAL_ONLY after it; the second day's near its end wait for
    // a third, and the first day's near its start for the day before it.
    assert_eq!(
        out[0].tickets,
        out[1].tickets + out[1].in_transit,
        "the same tickets either way"
    );
    out
}

trait Report {
    fn report(&self, n: usize, crossed: usize, rounds: usize) -> String;
}

impl Report for [TwoDays; 2] {
    fn report(&self, n: usize, crossed: usize, rounds: usize) -> String {
        let med = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            median(&v)
        };
        let [apart, cross] = self;
        let (a, c) = (med(&apart.secs), med(&cross.secs));
        let (ra, rc) = (med(&apart.rss), med(&cross.rss));
        let first = &cross.figures[0];
        let mut rows = String::new();
        for i in 0..apart.secs.len() {
            rows.push_str(&format!(
                "| {} | {:.2} s | {:.0} MiB | {:.2} s | {:.0} MiB |\n",
                i + 1,
                apart.secs[i],
                apart.rss[i],
                cross.secs[i],
                cross.rss[i]
            ));
        }
        format!(
            "## Current: the day's edge\n\n\
             Measured {today}, SQLite, {rounds} rounds in one run: `RECKON_BENCH_ROWS={n} cargo bench --bench recon`. \
             Two business days of {n} payments each (the classes as above), reconciled one after the other on a \
             fresh copy of the database: as two independent days (each statement carries all its day's payments, \
             no cut window), and with {crossed} of the first day's payments (0.5%, paid in its last minutes) booked \
             in the second day's statement (30-minute window: {in_transit} in transit after the first run — with the \
             first day's LOCAL_ONLY inside the window — {arrived} arrived in the second).\n\n\
             | what | independent days | crossing the cut |\n|---|---|---|\n\
             | both days reconciled (median wall) | **{a:.2} s** | **{c:.2} s** ({pct:+.1}%) |\n\
             | CPU seconds (median) | {ca:.2} | {cc:.2} |\n\
             | peak RSS over both runs (median) | {ra:.0} MiB | {rc:.0} MiB |\n\
             | tickets after both days | {ta} | {tc} (and {waiting} LOCAL_ONLY still in transit: the second day's to a third, the first day's to the day before it) |\n\n\
             | round | independent | peak RSS | crossing | peak RSS |\n|---|---|---|---|---|\n{rows}\n\
             Target: crossing within 10% of two independent days, the same peak RSS.\n",
            today = jiff::Timestamp::now().strftime("%Y-%m-%d"),
            in_transit = first["in_transit"],
            arrived = cross.figures[1]["edge_arrived"],
            pct = (c / a - 1.0) * 100.0,
            ca = med(&apart.cpu),
            cc = med(&cross.cpu),
            ta = apart.tickets,
            tc = cross.tickets,
            waiting = cross.in_transit,
        )
    }
}
