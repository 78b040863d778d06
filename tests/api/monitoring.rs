//! The operator's monitoring: `/metrics` reports the database's open
//! alerts, tickets and DEAD callbacks as they stand, and every metric the
//! shipped alerting rules and Grafana dashboard name is one the server
//! exposes (so neither can drift from the code).

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::Backend;
use std::collections::BTreeSet;

/// The value of one sample line, e.g. `reckon_tickets_open{severity="HIGH"}`.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| {
        l.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(|v| v.trim().parse().unwrap())
    })
}

/// Every series name the text exposes, as PromQL would name it.
fn exposed(metrics: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (name, kind) = (words.next().unwrap(), words.next().unwrap());
        match kind {
            "counter" => {
                names.insert(format!("{name}_total"));
            }
            "histogram" => {
                for part in ["bucket", "sum", "count"] {
                    names.insert(format!("{name}_{part}"));
                }
            }
            _ => {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

/// The metric names a PromQL text selects: each word written just before
/// a `{` label matcher (every expression shipped names its job so).
fn selected(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('{') {
        let mut start = i;
        while start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            start -= 1;
        }
        if start < i {
            names.insert(text[start..i].to_owned());
        }
    }
    // Prometheus's own series.
    names.remove("up");
    names
}

fn shipped(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/monitoring")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn metrics_report_open_alerts_tickets_and_dead_callbacks(b: Backend) {
    let app = spawn_engine_app(b).await;
    let before = app.app.get("/metrics").await.text().await.unwrap();
    for series in [
        "reckon_alerts_open{kind=\"conflict\"}",
        "reckon_alerts_open{kind=\"callback_dead\"}",
        "reckon_tickets_open{severity=\"HIGH\"}",
        "reckon_tickets_overdue",
        "reckon_callbacks_dead",
    ] {
        assert_eq!(sample(&before, series), Some(0.0), "{series} in {before}");
    }

    // A callback whose amount is not the payment's: a HIGH ticket and a
    // conflict alert.
    let p = app.payment("ORD-M1", 19900, "CNY").await;
    let lie = app.notice("evt_m_lie", &p, "SUCCEEDED", "198.00", "CNY", "TXN-M1");
    assert_eq!(app.post_signed("evt_m_lie", &lie).await.status(), 200);
    // A payment Reckon does not have: retried until DEAD.
    let orphan = app.notice(
        "evt_m_orphan",
        "PAY-M-ORPHAN",
        "SUCCEEDED",
        "1.00",
        "CNY",
        "TXN-MO",
    );
    assert_eq!(app.post_signed("evt_m_orphan", &orphan).await.status(), 404);
    let engine = app.app_engine();
    for _ in 0..9 {
        app.clock.advance_secs(65 * 60);
        engine.retry_callbacks(engine.now()).await.unwrap();
    }
    // Far past every SLA: the ticket's overdue alert is raised.
    app.clock.advance_secs(30 * 24 * 3600);
    reckon::triage::sla::raise_overdue(&engine, engine.now())
        .await
        .unwrap();

    let after = app.app.get("/metrics").await.text().await.unwrap();
    assert_eq!(
        sample(&after, "reckon_alerts_open{kind=\"conflict\"}"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_alerts_open{kind=\"callback_dead\"}"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_alerts_open{kind=\"sla_overdue\"}"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_alerts_open{kind=\"sink_failing\"}"),
        Some(0.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_tickets_open{severity=\"HIGH\"}"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_tickets_open{severity=\"CRITICAL\"}"),
        Some(0.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_tickets_overdue"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "reckon_callbacks_dead"),
        Some(1.0),
        "{after}"
    );

    // Acknowledged, an alert no longer counts as open.
    sqlx::query(
        "UPDATE alerts SET acknowledged_at = $1, acknowledged_by = 'ops' WHERE kind = 'conflict'",
    )
    .bind(engine.now())
    .execute(app.pool())
    .await
    .unwrap();
    let acked = app.app.get("/metrics").await.text().await.unwrap();
    assert_eq!(
        sample(&acked, "reckon_alerts_open{kind=\"conflict\"}"),
        Some(0.0),
        "{acked}"
    );
}

async fn the_shipped_rules_and_dashboard_name_only_exposed_metrics(b: Backend) {
    let app = spawn_engine_app(b).await;
    let metrics = app.app.get("/metrics").await.text().await.unwrap();
    let exposed = exposed(&metrics);
    let rules = selected(&shipped("reckon.rules.yml"));
    let dashboard: serde_json::Value =
        serde_json::from_str(&shipped("grafana-dashboard.json")).unwrap();
    let exprs: String = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| format!("{}\n", t["expr"].as_str().unwrap()))
        .collect();
    let panels = selected(&exprs);
    assert!(
        rules.len() >= 8 && panels.len() >= 10,
        "{rules:?} {panels:?}"
    );
    for (what, names) in [("rules", &rules), ("dashboard", &panels)] {
        let unknown: Vec<_> = names.difference(&exposed).collect();
        assert!(
            unknown.is_empty(),
            "the {what} name {unknown:?}, not in {exposed:?}"
        );
    }
}

both_databases!(
    metrics_report_open_alerts_tickets_and_dead_callbacks,
    the_shipped_rules_and_dashboard_name_only_exposed_metrics,
);
