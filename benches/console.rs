//! The console's lists at scale: a SQLite database seeded with 1,000,000
//! payments (each with one stored callback), 100,000 discrepancy tickets
//! and 100,000 audit entries; each list asked through the same backend
//! calls the server functions make (server time, no HTTP, no rendering),
//! 25 times each. Writes its figures into BENCHMARKS.md.
//!
//!     cargo bench --bench console
//!     RECKON_BENCH_PAYMENTS=100000 RECKON_BENCH_TICKETS=10000 cargo bench --bench console

mod support;

use app::filter::QueryFilter;
use app::ssr::{Alerts, AuditLog, Callbacks, Overview, Payments, Runs, Tickets};
use app::tickets::{AuditFilter, TicketFilter};
use reckon::config::LogFormat;
use reckon::providers::signing::Secret;
use std::time::{Duration, Instant};
use support::{config, peak_rss_mib, write_section};

/// Thirty days, in microseconds: the seeded history's span.
const MONTH_US: i64 = 30 * 86_400 * 1_000_000;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median and 95th percentile of `runs` calls, milliseconds.
async fn time<F, Fut, T>(runs: usize, mut f: F) -> (f64, f64)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut took: Vec<Duration> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(f().await);
        took.push(t.elapsed());
    }
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(took[runs / 2]),
        ms(took[(runs * 95 / 100).min(runs - 1)]),
    )
}

fn main() {
    let payments = env_usize("RECKON_BENCH_PAYMENTS", 1_000_000);
    let tickets = env_usize("RECKON_BENCH_TICKETS", 100_000);
    let audits = tickets;
    let runs = 25;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &Secret::random());
    let start_us: i64 = 1_793_404_800_000_000; // 2026-10-31T00:00Z
    rt.block_on(async {
        reckon::telemetry::init(LogFormat::Pretty);
        let engine = reckon::startup::engine_of(&config).await.unwrap();
        let pool = engine.db.pool.clone();
        let seeded = Instant::now();
        // One recursive CTE per table: the seed is not what is measured.
        let statuses = "CASE i % 10 WHEN 0 THEN 'PENDING' WHEN 1 THEN 'FAILED' WHEN 2 THEN 'CLOSED' ELSE 'SUCCEEDED' END";
        sqlx::query(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {last}) \
             INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, currency, \
               status, version, created_by, awaiting_recon, created_at, updated_at, paid_at) \
             SELECT printf('PAY%09d', i), printf('ORD%09d', i), 1, 'sandbox', printf('SBX%09d', i), 100 + i % 99900, 'CNY', \
               {statuses}, 1, 'bench', 0, {start_us} + i * {pay_step}, {start_us} + i * {pay_step} + 1000000, {start_us} + i * {pay_step} + 1000000 FROM n",
            last = payments - 1,
            pay_step = MONTH_US / payments as i64,
        ))
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {last}) \
             INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
               headers_json, payload, payload_hash, verify_result, processing_status, outcome, retry_count, trace_id, \
               received_at, processed_at) \
             SELECT printf('CB%09d', i), printf('evt_%09d', i), 'sandbox', printf('PAY%09d', i), printf('SBX%09d', i), \
               'SUCCEEDED', '{{}}', CAST('{{\"id\":1}}' AS BLOB), 'h', 'VERIFIED', \
               CASE WHEN i % 500 = 0 THEN 'DEAD' ELSE 'SUCCESS' END, 'applied', 0, printf('trace%09d', i), \
               {start_us} + i * {pay_step} + 900000, {start_us} + i * {pay_step} + 1000000 FROM n",
            last = payments - 1,
            pay_step = MONTH_US / payments as i64,
        ))
        .execute(&pool)
        .await
        .unwrap();
        let classes = app::tickets::CLASSES;
        let class_case = classes
            .iter()
            .enumerate()
            .map(|(k, c)| format!("WHEN {k} THEN '{c}'"))
            .collect::<Vec<_>>()
            .join(" ");
        sqlx::query(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {last}) \
             INSERT INTO discrepancies (discrepancy_id, dedupe_key, class, severity, severity_rank, status, provider, \
               payment_no, provider_txn_id, local_amount_minor, local_currency, local_status, provider_amount_minor, \
               provider_currency, provider_status, source, details, found_at, run_id, business_date, order_no, owner) \
             SELECT printf('T%09d', i), printf('bench:%09d', i), CASE i % {nclasses} {class_case} END, \
               CASE i % 4 WHEN 0 THEN 'CRITICAL' WHEN 1 THEN 'HIGH' WHEN 2 THEN 'MEDIUM' ELSE 'LOW' END, 4 - i % 4, \
               CASE i % 5 WHEN 0 THEN 'OPEN' WHEN 1 THEN 'IN_PROGRESS' WHEN 2 THEN 'AWAITING_APPROVAL' ELSE 'CLOSED' END, \
               'sandbox', printf('PAY%09d', i * {stride}), printf('SBX%09d', i * {stride}), 1000, 'CNY', 'SUCCEEDED', \
               1001, 'CNY', 'SUCCEEDED', 'recon', '{{\"reason\":\"bench\"}}', {start_us} + i * {tick_step}, \
               printf('RUN%03d', i / 1000), date(({start_us} + i * {tick_step}) / 1000000, 'unixepoch'), printf('ORD%09d', i * {stride}), \
               CASE i % 7 WHEN 0 THEN NULL ELSE printf('op%d', i % 7) END FROM n",
            last = tickets - 1,
            nclasses = classes.len(),
            stride = (payments / tickets).max(1),
            tick_step = MONTH_US / tickets as i64,
        ))
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {audits}) \
             INSERT INTO audit_log (seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash) \
             SELECT i, {start_us} + i * {tick_step}, printf('op%d', i % 7), \
               CASE i % 3 WHEN 0 THEN 'fix.propose' WHEN 1 THEN 'ticket.comment' ELSE 'user.login' END, \
               'ticket', printf('T%09d', i), NULL, '{{}}', 'p', 'h' FROM n",
            tick_step = MONTH_US / audits as i64,
        ))
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query("ANALYZE").execute(&pool).await.unwrap();
        let seed_secs = seeded.elapsed().as_secs_f64();

        let desk = reckon::console::Desk::new(engine.clone());
        let filter = |pairs: &[(&str, &str)]| TicketFilter::from_pairs(pairs.iter().copied());
        // A cursor half-way down the queue, as page 1,000 would have.
        let mid: (i64, i64, String) = sqlx::query_as(&format!(
            "SELECT severity_rank, found_at, discrepancy_id FROM discrepancies \
             ORDER BY severity_rank DESC, found_at, discrepancy_id LIMIT 1 OFFSET {}",
            tickets / 2
        ))
        .fetch_one(&pool)
        .await
        .unwrap();
        let deep = format!("{}.{}.{}", mid.0, mid.1, mid.2);
        let day = "2026-11-15";
        let cases: Vec<(&str, TicketFilter)> = vec![
            ("tickets, first page, no filter", filter(&[])),
            ("tickets, page half-way down (keyset cursor)", filter(&[("after", &deep)])),
            ("tickets, class + status", filter(&[("class", "AMOUNT_MISMATCH"), ("status", "AWAITING_APPROVAL")])),
            ("tickets, one business day", filter(&[("day", day)])),
            ("tickets, owner", filter(&[("owner", "op3")])),
            ("tickets, owner + status", filter(&[("owner", "op3"), ("status", "OPEN")])),
            ("tickets, unassigned", filter(&[("owner", "-")])),
            ("tickets, unassigned + status", filter(&[("owner", "-"), ("status", "OPEN")])),
            ("tickets, free text (the start of a payment_no)", filter(&[("q", "PAY0001234")])),
        ];
        let mut lines = Vec::new();
        for (name, f) in &cases {
            let page = desk.tickets(f).await.unwrap();
            assert!(!page.items.is_empty(), "{name}");
            let (p50, p95) = time(runs, || desk.tickets(f)).await;
            lines.push(format!("| {name} | {} | {p50:.1} | {p95:.1} |", page.total));
        }
        let some_ticket = format!("T{:09}", tickets / 3);
        let (p50, p95) = time(runs, || desk.ticket(&some_ticket)).await;
        lines.push(format!("| one ticket with its payment's timeline | 1 | {p50:.1} | {p95:.1} |"));
        for (name, f) in [
            ("audit, first page", AuditFilter::default()),
            (
                "audit, one actor",
                AuditFilter {
                    actor: Some("op3".into()),
                    ..Default::default()
                },
            ),
            (
                "audit, action family + page half-way down",
                AuditFilter {
                    action: Some("fix".into()),
                    before: Some(audits as i64 / 2),
                    ..Default::default()
                },
            ),
        ] {
            let n = desk.audit(&f).await.unwrap().items.len();
            let (p50, p95) = time(runs, || desk.audit(&f)).await;
            lines.push(format!("| {name} | {n} (page) | {p50:.1} | {p95:.1} |"));
        }
        // The console's lists over the million payments and callbacks.
        let pfilter = |pairs: &[(&str, &str)]| app::console::PaymentFilter::from_pairs(pairs.iter().copied());
        let cfilter = |pairs: &[(&str, &str)]| app::console::CallbackFilter::from_pairs(pairs.iter().copied());
        let mid_payment: (i64, String) = sqlx::query_as(&format!(
            "SELECT created_at, payment_no FROM payments ORDER BY created_at DESC, payment_no DESC LIMIT 1 OFFSET {}",
            payments / 2
        ))
        .fetch_one(&pool)
        .await
        .unwrap();
        let deep_payment = format!("{}.{}", mid_payment.0, mid_payment.1);
        let one = format!("PAY{:09}", payments / 3);
        for (name, f) in [
            ("payments, first page", pfilter(&[])),
            ("payments, page half-way down (keyset cursor)", pfilter(&[("after", &deep_payment)])),
            ("payments, status PENDING", pfilter(&[("status", "PENDING")])),
            ("payments, one day", pfilter(&[("day", day)])),
            ("payments, by payment_no", pfilter(&[("q", &one)])),
            ("payments, by amount", pfilter(&[("amount", "12.34")])),
        ] {
            let n = desk.payments(&f).await.unwrap().items.len();
            let (p50, p95) = time(runs, || desk.payments(&f)).await;
            lines.push(format!("| {name} | {n} (page) | {p50:.1} | {p95:.1} |"));
        }
        let (p50, p95) = time(runs, || desk.payment(&one)).await;
        lines.push(format!("| one payment with its whole record | 1 | {p50:.1} | {p95:.1} |"));
        let mid_cb: (i64, String) = sqlx::query_as(&format!(
            "SELECT received_at, id FROM payment_callbacks ORDER BY received_at DESC, id DESC LIMIT 1 OFFSET {}",
            payments / 2
        ))
        .fetch_one(&pool)
        .await
        .unwrap();
        let deep_cb = format!("{}.{}", mid_cb.0, mid_cb.1);
        for (name, f) in [
            ("callbacks, first page", cfilter(&[])),
            ("callbacks, page half-way down (keyset cursor)", cfilter(&[("after", &deep_cb)])),
            ("callbacks, DEAD", cfilter(&[("status", "DEAD")])),
            ("callbacks, one day", cfilter(&[("day", day)])),
            ("callbacks, by payment_no", cfilter(&[("q", &one)])),
        ] {
            let n = desk.callbacks(&f).await.unwrap().items.len();
            let (p50, p95) = time(runs, || desk.callbacks(&f)).await;
            lines.push(format!("| {name} | {n} (page) | {p50:.1} | {p95:.1} |"));
        }
        let (p50, p95) = time(runs, || desk.callback("CB000000123")).await;
        lines.push(format!("| one callback, masked | 1 | {p50:.1} | {p95:.1} |"));
        let (p50, p95) = time(runs, || desk.dashboard(Some(day), None)).await;
        lines.push(format!(
            "| dashboard of a day (figures, 30-day trend, callback figures over the day's {} callbacks, alerts) | 1 | {p50:.1} | {p95:.1} |",
            payments / 30
        ));
        let (p50, p95) = time(runs, || desk.runs(None)).await;
        lines.push(format!("| runs, first page | — | {p50:.1} | {p95:.1} |"));
        let open = app::console::AlertFilter {
            state: Some("open".into()),
            ..Default::default()
        };
        let (p50, p95) = time(runs, || desk.alerts(&open)).await;
        lines.push(format!("| open alerts, first page | — | {p50:.1} | {p95:.1} |"));
        let text = format!(
            "## Current: console lists\n\n\
             Measured {} on this machine (2 cores), SQLite, one run: `cargo bench --bench console`.\n\
             Seeded {payments} payments (each with a stored callback), {tickets} tickets, {audits} audit entries \
             in {seed_secs:.1} s; each list asked {runs} times through the backend the server functions call \
             (server time: SQL and shaping, no HTTP, no rendering). Page size 50.\n\n\
             | list | matching | p50 ms | p95 ms |\n|---|---|---|---|\n{}\n\n\
             Counts per status and per class come with every ticket page (three more grouped queries, included above). \
             Peak RSS of the run: {:.0} MiB.\n",
            jiff::Timestamp::now().strftime("%Y-%m-%d"),
            lines.join("\n"),
            peak_rss_mib()
        );
        println!("{text}");
        write_section("## Current: console lists", &text);
    });
}
