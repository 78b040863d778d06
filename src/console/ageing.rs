//! The dashboard's ageing section: the open tickets per class by age and
//! past their SLA now, and the chosen day's new, persisting and resolved
//! tickets beside the day before's.

use super::Desk;
use crate::store;
use crate::store::ageing;
use app::ageing::{Ageing, ClassAges, DayChange};

impl Desk {
    /// Ageing for `day` (its range in the business zone) and `provider`.
    pub(super) async fn ageing_of(
        &self,
        day: &str,
        provider: Option<&str>,
        range: (i64, i64),
    ) -> store::Result<Ageing> {
        let db = &self.engine.db;
        let settings = self.engine.settings();
        let sla = &settings.sla;
        let classes = ageing::open_by_class(db, provider, self.now(), sla)
            .await?
            .into_iter()
            .map(|c| ClassAges {
                sla_hours: sla.hours(&c.class),
                buckets: [c.up_to_1, c.up_to_7, c.up_to_30, c.over_30],
                overdue: c.overdue,
                class: c.class,
            })
            .collect();
        let mut today = ageing::day_change(db, provider, range).await?;
        today.day = day.to_owned();
        // The day before, in the business zone (a day is not always 24 h).
        let before_day = day
            .parse::<jiff::civil::Date>()
            .ok()
            .and_then(|d| d.yesterday().ok())
            .map(|d| d.to_string())
            .unwrap_or_default();
        let mut before = match crate::recon::day_range(&before_day, self.tz()) {
            Ok(r) => ageing::day_change(db, provider, r).await?,
            Err(_) => DayChange::default(),
        };
        before.day = before_day;
        Ok(Ageing {
            classes,
            day: today,
            before,
        })
    }
}
