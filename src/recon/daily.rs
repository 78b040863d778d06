//! The daily report of a business day, for finance: each provider's
//! figures — the signed close's where the day is closed, else its latest
//! completed run's —, its fees and net per currency, the value of its
//! open tickets (at risk), and the open tickets of all days by class and
//! age band; as CSV (one figure a line, for their tools) and as a
//! printable HTML page.

use super::run::ReconError;
use crate::engine::Engine;
use crate::store::ageing::{self, ClassAges};
use crate::store::{closes, recon_runs, tickets};
use serde_json::Value;

/// One provider's day in the report.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderDay {
    pub provider: String,
    /// CLOSED, REOPENED, or OPEN (never closed).
    pub close_state: String,
    pub close_seq: Option<i64>,
    pub close_hash: Option<String>,
    /// The figures: the close's body's, or the latest completed run's
    /// (None: the day has no completed run).
    pub figures: Option<Value>,
    /// The open tickets of the day, per currency, in minor units.
    pub at_risk: Vec<(String, i64)>,
    pub open_tickets: i64,
}

/// The report of `business_date`.
#[derive(Clone, Debug)]
pub struct DailyReport {
    pub business_date: String,
    pub generated_at: i64,
    pub providers: Vec<ProviderDay>,
    /// Every open ticket, by class and age band, now.
    pub ages: Vec<ClassAges>,
}

/// Builds the report of `date` for every configured provider.
pub async fn daily_report(engine: &Engine, date: &str) -> Result<DailyReport, ReconError> {
    date.parse::<jiff::civil::Date>().map_err(|_| {
        ReconError::Invalid(format!(
            "business date {} is not YYYY-MM-DD",
            crate::domain::quote(date)
        ))
    })?;
    let pool = &engine.db.pool;
    let mut names: Vec<String> = engine.providers.names().map(str::to_owned).collect();
    names.sort();
    let runs = recon_runs::completed_between(pool, date, date).await?;
    let mut providers = Vec::with_capacity(names.len());
    for provider in names {
        let close = closes::latest_of_day(pool, &provider, date).await?;
        let closed_figures = close
            .as_ref()
            .filter(|c| c.state == "CLOSED")
            .and_then(|c| serde_json::from_str::<Value>(&c.body_json).ok())
            .map(|body| body["figures"].clone());
        let run_figures = || {
            runs.iter()
                .rfind(|r| r.provider == provider)
                .and_then(|r| r.figures_json.as_deref())
                .and_then(|f| serde_json::from_str::<Value>(f).ok())
        };
        let figures = closed_figures.or_else(run_figures);
        providers.push(ProviderDay {
            close_state: close
                .as_ref()
                .map_or("OPEN".to_owned(), |c| c.state.clone()),
            close_seq: close.as_ref().map(|c| c.seq),
            close_hash: close.map(|c| c.hash),
            figures,
            at_risk: tickets::open_amounts_of_day(pool, &provider, date).await?,
            open_tickets: tickets::count_open_of_day(pool, &provider, date).await?,
            provider,
        });
    }
    let settings = engine.settings();
    let ages = ageing::open_by_class(&engine.db, None, engine.now(), &settings.sla).await?;
    Ok(DailyReport {
        business_date: date.to_owned(),
        generated_at: engine.now(),
        providers,
        ages,
    })
}

/// A figure of the report: provider (empty for all), currency (empty for
/// none), name, value.
type Figure = (String, String, String, String);

/// Money of `currency` in its decimal form, or its minor units where the
/// currency is not one Reckon knows.
fn decimal(minor: i64, currency: &str) -> String {
    match crate::domain::Currency::parse(currency) {
        Ok(c) => crate::domain::Money::new(minor, c).major_string(),
        Err(_) => minor.to_string(),
    }
}

impl DailyReport {
    /// Every figure, in the order the CSV and the page list them.
    pub fn figures(&self) -> Vec<Figure> {
        let mut out: Vec<Figure> = Vec::new();
        let mut push = |p: &str, c: &str, name: &str, value: String| {
            out.push((p.to_owned(), c.to_owned(), name.to_owned(), value));
        };
        for p in &self.providers {
            let name = p.provider.as_str();
            push(name, "", "close_state", p.close_state.clone());
            if let Some(seq) = p.close_seq {
                push(name, "", "close_seq", seq.to_string());
            }
            if let Some(hash) = &p.close_hash {
                push(name, "", "close_hash", hash.clone());
            }
            let Some(f) = &p.figures else {
                push(name, "", "runs", "0".into());
                continue;
            };
            for key in [
                "statement_rows",
                "matched",
                "pending",
                "unknown",
                "in_transit",
            ] {
                if let Some(n) = f[key].as_i64() {
                    push(name, "", key, n.to_string());
                }
            }
            if let Some(classes) = f["classes"].as_object() {
                for (class, n) in classes {
                    push(name, "", &format!("rows_{class}"), n.to_string());
                }
            }
            if let Some(currencies) = f["fees_and_net"]["currencies"].as_object() {
                for (cur, s) in currencies {
                    for key in ["gross_minor", "refunds_minor", "fees_minor", "net_minor"] {
                        if let Some(minor) = s[key].as_i64() {
                            push(
                                name,
                                cur,
                                key.trim_end_matches("_minor"),
                                decimal(minor, cur),
                            );
                        }
                    }
                }
            }
            push(name, "", "open_tickets", p.open_tickets.to_string());
            for (cur, minor) in &p.at_risk {
                push(name, cur, "value_at_risk", decimal(*minor, cur));
            }
        }
        let bands = [
            "up_to_1_day",
            "up_to_7_days",
            "up_to_30_days",
            "over_30_days",
        ];
        for a in &self.ages {
            let counts = [a.up_to_1, a.up_to_7, a.up_to_30, a.over_30];
            for (band, n) in bands.iter().zip(counts) {
                push("", "", &format!("open_{}_{band}", a.class), n.to_string());
            }
            push(
                "",
                "",
                &format!("open_{}_overdue", a.class),
                a.overdue.to_string(),
            );
        }
        out
    }

    /// The CSV: one figure a line.
    pub fn csv(&self) -> String {
        let cell = crate::console::csv_cell;
        let mut text = String::from("business_date,provider_account,currency,figure,value\n");
        for (p, c, name, value) in self.figures() {
            text.push_str(&format!(
                "{},{},{},{},{}\n",
                cell(&self.business_date),
                cell(&p),
                cell(&c),
                cell(&name),
                cell(&value)
            ));
        }
        text
    }

    /// A printable page: the same figures, a table per provider.
    pub fn html(&self) -> String {
        let esc = |t: &str| {
            t.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let title = format!("Reckon daily report {}", esc(&self.business_date));
        let mut page = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
             <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1.5em}}\
             td,th{{border:1px solid #999;padding:.25em .6em;text-align:left}}td.n{{text-align:right}}\
             @media print{{h2{{page-break-before:auto}}}}</style></head><body>\n<h1>{title}</h1>\n<p>Generated {}</p>\n",
            esc(&app::format::utc_minutes(self.generated_at))
        );
        let figures = self.figures();
        let mut current: Option<String> = None;
        for (p, c, name, value) in &figures {
            if current.as_deref() != Some(p.as_str()) {
                if current.is_some() {
                    page.push_str("</table>\n");
                }
                let heading = if p.is_empty() {
                    "Open tickets by age".to_owned()
                } else {
                    esc(p)
                };
                page.push_str(&format!(
                    "<h2>{heading}</h2>\n<table><tr><th>Figure</th><th>Currency</th><th>Value</th></tr>\n"
                ));
                current = Some(p.clone());
            }
            page.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>\n",
                esc(name),
                esc(c),
                esc(value)
            ));
        }
        if current.is_some() {
            page.push_str("</table>\n");
        }
        page.push_str("</body></html>\n");
        page
    }
}
