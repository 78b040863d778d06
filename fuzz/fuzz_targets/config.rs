#![no_main]
//! The config parser: a TOML file's text, with an environment made of
//! `KEY=value` lines after a `---` line, read into a `Config` (or refused
//! with a reason, never a panic).

use libfuzzer_sys::fuzz_target;
use reckon::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (toml, env) = text.split_once("\n---\n").unwrap_or((text, ""));
    let env: Vec<(&str, &str)> = env.lines().filter_map(|l| l.split_once('=')).collect();
    let lookup = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
            .filter(|v| !v.is_empty())
    };
    match Config::from_toml(toml, lookup) {
        Ok(config) => {
            let _ = config.sqlite_path();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
