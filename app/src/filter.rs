//! The lists' filters: structs of optional strings that travel in the
//! address (`?key=value&…`, `after` the keyset cursor). One trait holds
//! what every filter does; [`query_filter!`] writes the per-field part.

use crate::tickets::encode;

pub trait QueryFilter: Default {
    /// The keys, in the order the query string lists them (`after` last).
    const KEYS: &'static [&'static str];
    fn slot(&mut self, key: &str) -> Option<&mut Option<String>>;
    fn get(&self, key: &str) -> Option<&str>;

    /// From query pairs; blank values count as absent, unknown keys are
    /// ignored.
    fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut f = Self::default();
        for (k, v) in pairs {
            let v = v.trim();
            if let Some(slot) = f.slot(k)
                && !v.is_empty()
            {
                *slot = Some(v.to_owned());
            }
        }
        f
    }

    /// The same filter with blank values dropped (and values trimmed).
    fn cleaned(&self) -> Self {
        Self::from_pairs(
            Self::KEYS
                .iter()
                .filter_map(|k| self.get(k).map(|v| (*k, v))),
        )
    }

    /// The filter as a query string (without `?`), `after` replaced.
    fn query_with_after(&self, after: Option<&str>) -> String {
        Self::KEYS
            .iter()
            .filter_map(|key| {
                let value = if *key == "after" {
                    after
                } else {
                    self.get(key)
                };
                value.map(|v| format!("{key}={}", encode(v)))
            })
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// `QueryFilter` for a struct whose listed fields are `Option<String>`,
/// each its own query key.
#[macro_export]
macro_rules! query_filter {
    ($ty:ident { $($field:ident),+ $(,)? }) => {
        impl $crate::filter::QueryFilter for $ty {
            const KEYS: &'static [&'static str] = &[$(stringify!($field)),+];

            fn slot(&mut self, key: &str) -> Option<&mut Option<String>> {
                match key {
                    $(stringify!($field) => Some(&mut self.$field),)+
                    _ => None,
                }
            }

            fn get(&self, key: &str) -> Option<&str> {
                match key {
                    $(stringify!($field) => self.$field.as_deref(),)+
                    _ => None,
                }
            }
        }
    };
}
