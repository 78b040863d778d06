//! The settings in force, swapped whole when another version of the
//! money-deciding settings is adopted: a reader takes the settings at the
//! start of its work (`Context::settings`) and keeps that copy to its end.
//! The host's own settings stay beside them, as the base each version's
//! console-editable values are laid over.

use crate::config::Settings;
use std::sync::{Arc, RwLock};

pub struct Live {
    host: Arc<Settings>,
    current: RwLock<(Arc<Settings>, Option<i64>)>,
}

impl Live {
    pub fn new(host: Settings) -> Live {
        let host = Arc::new(host);
        Live {
            current: RwLock::new((host.clone(), None)),
            host,
        }
    }

    /// The settings in force and the version they are (None: no version
    /// recorded yet, as in a process that never met its database).
    pub fn get(&self) -> (Arc<Settings>, Option<i64>) {
        let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
        (guard.0.clone(), guard.1)
    }

    /// The host's own settings, before any version's values.
    pub fn host(&self) -> &Arc<Settings> {
        &self.host
    }

    /// Puts `settings`, version `version`, in force.
    pub fn adopt(&self, settings: Settings, version: i64) {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        *guard = (Arc::new(settings), Some(version));
    }
}
