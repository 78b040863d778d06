//! The matching rules' cost and the dry run's: a generated day of N local
//! payments and an N-row statement on SQLite (0.5% each of PROVIDER_ONLY,
//! LOCAL_ONLY, AMOUNT_MISMATCH — one fen off — and STATUS_LAG, the rest
//! matching), reconciled three ways in each round, in turn, each on a
//! fresh copy of the same database and from the same file: by the rules'
//! defaults (the matcher as it was), with rules on (a one-fen tolerance
//! for every account in CNY, a 24-hour payment_no window), and as a
//! dry run with the rules on (nothing written). The medians of the rounds
//! go into BENCHMARKS.md.
//!
//!     cargo bench --bench rules                       # 1,000,000 rows, 3 rounds
//!     RECKON_BENCH_ROWS=100000 RECKON_BENCH_ROUNDS=3 cargo bench --bench rules

mod support;

use reckon::config::{LogFormat, MatchRules};
use reckon::providers::signing::Secret;
use std::io::Write;
use std::time::Instant;
use support::{config, median, restore, settle, write_section};

fn case(i: usize) -> &'static str {
    match i % 200 {
        0 => "PROVIDER_ONLY",
        1 => "LOCAL_ONLY",
        2 => "AMOUNT_MISMATCH",
        5 => "STATUS_LAG",
        _ => "MATCHED",
    }
}

/// The rules on: a one-fen tolerance for every account in CNY, a
/// 24-hour window for a match by payment_no.
fn rules_on() -> MatchRules {
    let mut r = MatchRules::default();
    r.tolerances.insert(("*".into(), "CNY".into()), 1);
    r.window_us = 24 * 3_600_000_000;
    r
}

fn main() {
    let n: usize = std::env::var("RECKON_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = std::env::var("RECKON_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &Secret::random());
    let date = "2026-11-30";
    let start = 1_795_996_800_000_000i64; // 2026-11-30T00:00Z
    let step = 86_000_000_000 / n as i64;
    rt.block_on(async {
        reckon::telemetry::init(LogFormat::Pretty);
        let engine = reckon::startup::engine_of(&config).await.unwrap();
        let path = dir.path().join("statement.csv");
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(file, "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at").unwrap();
        let (mut rows, mut total) = (0i64, 0i64);
        for i in 0..n {
            let c = case(i);
            if c == "LOCAL_ONLY" {
                continue;
            }
            let minor = 100 + (i as i64 % 9_900) + i64::from(c == "AMOUNT_MISMATCH");
            let at = jiff::Timestamp::from_microsecond(start + i as i64 * step).unwrap();
            writeln!(
                file,
                "payment,SBX{i:09},PAY{i:09},,,SUCCEEDED,{}.{:02},CNY,{at}",
                minor / 100,
                minor % 100
            )
            .unwrap();
            rows += 1;
            total += minor;
        }
        writeln!(file, "#summary,rows={rows},total_minor={total}").unwrap();
        file.flush().unwrap();
        drop(file);
        let sql = "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $1) \
             INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
             currency, status, version, created_by, awaiting_recon, created_at, updated_at, paid_at) \
             SELECT 'PAY' || substr('000000000' || i, -9), 'PAY' || substr('000000000' || i, -9), 1, 'sandbox', \
             'SBX' || substr('000000000' || i, -9), 100 + i % 9900, 'CNY', \
             CASE WHEN i % 200 = 5 THEN 'PENDING' ELSE 'SUCCEEDED' END, 1, 'bench', 0, $2 + i * $3, $2 + i * $3, \
             CASE WHEN i % 200 = 5 THEN NULL ELSE $2 + i * $3 + 2000000 END \
             FROM k WHERE i % 200 <> 0";
        sqlx::query(sql)
            .bind(n as i64)
            .bind(start)
            .bind(step)
            .execute(&engine.db.pool)
            .await
            .unwrap();
        engine.db.pool.close().await;
        drop(engine);
        let db_path = dir.path().join("reckon.db");
        let pristine = dir.path().join("pristine.db");
        settle(&db_path).await;
        std::fs::rename(&db_path, &pristine).unwrap();

        let import = || reckon::recon::Import {
            provider: "sandbox",
            business_date: date,
            source: "import",
            file_name: Some("statement.csv"),
            input: reckon::recon::Input::File(path.clone()),
            started_by: "bench",
            accept_bad_lines: 0,
            run_id: None,
            hash: None,
        };
        let (mut plain, mut ruled, mut dry) = (Vec::new(), Vec::new(), Vec::new());
        let mut shown = Vec::new();
        for round in 1..=rounds {
            for way in 0..3 {
                restore(&pristine, &db_path);
                let engine = reckon::startup::engine_of(&config).await.unwrap();
                let ctx = engine.context();
                if way > 0 {
                    // The rules put in force as an approved version would.
                    let mut s = (*ctx.settings()).clone();
                    s.matching = rules_on();
                    ctx.live.adopt(s, ctx.config_version().unwrap_or(1));
                }
                let started = Instant::now();
                let figures = if way < 2 {
                    let run = reckon::recon::import_statement(&engine, import()).await.unwrap();
                    assert_eq!(run.status, "COMPLETED");
                    run.figures_json.unwrap_or_default()
                } else {
                    let p = reckon::recon::preview_statement(&engine, import(), None).await.unwrap();
                    serde_json::to_string(&p.tickets).unwrap()
                };
                let secs = started.elapsed().as_secs_f64();
                [&mut plain, &mut ruled, &mut dry][way].push(secs);
                if round == rounds {
                    shown.push(figures);
                }
                engine.db.pool.close().await;
                drop(engine);
            }
            println!(
                "round {round} of {rounds}: current {:.2} s, rules on {:.2} s, dry run {:.2} s",
                plain[round - 1],
                ruled[round - 1],
                dry[round - 1]
            );
        }
        for v in [&mut plain, &mut ruled, &mut dry] {
            v.sort_by(f64::total_cmp);
        }
        let (p, r, d) = (median(&plain), median(&ruled), median(&dry));
        let dry_tickets = shown.pop().unwrap_or_default();
        let report = format!(
            "## Current: matching rules and the dry run\n\n\
             Measured {today} on this machine, SQLite, {rounds} rounds in one run, the three in turn in each \
             round, each on a fresh copy of the same database, from the same {rows}-row statement against {n} \
             payments (0.5% each of PROVIDER_ONLY, LOCAL_ONLY, AMOUNT_MISMATCH one fen off, STATUS_LAG): \
             `RECKON_BENCH_ROWS={n} RECKON_BENCH_ROUNDS={rounds} cargo bench --bench rules`. Medians of the rounds.\n\n\
             | what | median |\n|---|---|\n\
             | the run under the default rules (the matcher as it was) | {p:.2} s |\n\
             | the run with rules on (`*:CNY=1` tolerance, 24-hour payment_no window) | {r:.2} s ({:+.1}%) |\n\
             | a dry run with the rules on: read, match, classify, nothing written | {d:.2} s ({:.0}% of the run) |\n\n\
             The dry run's tickets by class and severity: `{dry_tickets}`.\n",
            (r / p - 1.0) * 100.0,
            d / r * 100.0,
            today = jiff::Timestamp::now().strftime("%Y-%m-%d"),
        );
        println!("{report}");
        write_section("## Current: matching rules and the dry run", &report);
    });
}
