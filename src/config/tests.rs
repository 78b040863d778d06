//! The configuration's unit tests: defaults, layering, and refusals that
//! name their key.

use super::*;
use secrecy::ExposeSecret;
use std::collections::HashMap;

#[test]
fn debug_output_masks_every_secret() {
    use crate::providers::alipay::AlipayConfig;
    use crate::providers::standard::StandardConfig;
    use crate::providers::stripe::StripeConfig;
    use crate::providers::wechatpay::WechatPayConfig;
    let providers = vec![
        ProviderConfig::Stripe(StripeConfig {
            name: "stripe".into(),
            secret: "whsec_TOPSECRETvalue1".into(),
            previous_secrets: vec!["whsec_OLDSECRETvalue2".into()],
            api_key: "sk_live_SECRETKEY3".into(),
            ..StripeConfig::default()
        }),
        ProviderConfig::Alipay(AlipayConfig {
            name: "alipay".into(),
            private_key: Some("-----BEGIN PRIVATE KEY-----SECRETPEM4".into()),
            ..AlipayConfig::default()
        }),
        ProviderConfig::WechatPay(WechatPayConfig {
            name: "wechat".into(),
            api_key: "APIV3SECRET7".into(),
            private_key: Some("-----BEGIN PRIVATE KEY-----WXPEM8".into()),
            ..WechatPayConfig::default()
        }),
        ProviderConfig::StandardWebhooks(StandardConfig {
            name: "acme".into(),
            secret: "whsec_STANDARDSECRET9".into(),
            ..StandardConfig::default()
        }),
    ];
    let config = Config {
        providers,
        outbox_secret: Some("whsec_OUTBOXSECRET5".into()),
        database_url: String::from("postgres://u:DBPASSWORD6@h/db").into(),
        ..load(&[]).unwrap()
    };
    let text = format!("{config:?}");
    for secret in [
        "TOPSECRET",
        "OLDSECRET",
        "SECRETKEY",
        "SECRETPEM",
        "OUTBOXSECRET",
        "DBPASSWORD",
        "APIV3SECRET",
        "WXPEM",
        "STANDARDSECRET",
    ] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(text.contains("alipay") && text.contains("***"), "{text}");
    assert!(text.contains("REDACTED"), "{text}");
}

/// Each kind's keys as the book's provider pages show them, from the file; a key
/// another kind takes, an unknown kind, or a bad secret is refused with
/// the key named.
#[test]
fn provider_sections_are_their_kinds_own() {
    let file = r#"
[[providers]]
name = "sandbox"
kind = "sandbox"
base_url = "http://127.0.0.1:4000"
secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
timeout_ms = 400

[[providers]]
name = "stripe-eu"
kind = "stripe"
base_url = "https://api.stripe.com"
secret = "whsec_endpoint"
previous_secrets = ["whsec_old"]
api_key = "sk_live_x"

[[providers]]
name = "acme"
kind = "standard_webhooks"
base_url = ""
secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
[providers.mapping]
amount_format = "major"

[[providers]]
name = "alipay"
kind = "alipay"
app_id = "2021000000000001"
seller_id = "2088000000000001"
public_key = "MIIB"
base_url = "https://openapi.alipay.com/gateway.do"
private_key = "MIIE"
timeout_ms = 10000
query_on_unverified = true

[[providers]]
name = "wechat"
kind = "wechatpay"
api_key = "0123456789abcdef0123456789ABCDEF"
base_url = "https://api.mch.weixin.qq.com"
mch_id = "1900000001"
cert_serial = "3775B6A45ACD588826D15E583A95F5DD"
private_key = "-----BEGIN PRIVATE KEY-----"
[providers.platform_keys]
"5157F09EFDC096DE15EBE81A47057A72" = "-----BEGIN PUBLIC KEY-----"
"#;
    let c = Config::from_toml(file, |_| None).unwrap();
    let kinds: Vec<(&str, &str)> = c.providers.iter().map(|p| (p.name(), p.kind())).collect();
    assert_eq!(
        kinds,
        [
            ("sandbox", "sandbox"),
            ("stripe-eu", "stripe"),
            ("acme", "standard_webhooks"),
            ("alipay", "alipay"),
            ("wechat", "wechatpay")
        ]
    );
    let ProviderConfig::Stripe(stripe) = &c.providers[1] else {
        panic!("{:?}", c.providers[1]);
    };
    assert_eq!(stripe.api_key.expose_secret(), "sk_live_x");
    assert_eq!(stripe.previous_secrets[0].expose_secret(), "whsec_old");
    let ProviderConfig::StandardWebhooks(acme) = &c.providers[2] else {
        panic!("{:?}", c.providers[2]);
    };
    assert_eq!(acme.mapping.amount_format, "major");
    assert_eq!(acme.mapping.payment_no, "/data/payment_no");
    assert!(c.providers[3].query_on_unverified());
    let ProviderConfig::WechatPay(wechat) = &c.providers[4] else {
        panic!("{:?}", c.providers[4]);
    };
    assert_eq!(wechat.platform_keys.len(), 1);
    assert_eq!(wechat.mch_id.as_deref(), Some("1900000001"));

    let refused = |file: &str| Config::from_toml(file, |_| None).unwrap_err().to_string();
    let e =
        refused("[[providers]]\nname = \"a\"\nkind = \"stripe\"\nbase_url = \"\"\nmapping = {}\n");
    assert!(e.contains("mapping"), "{e}");
    let e = refused("[[providers]]\nname = \"a\"\nkind = \"worldpay\"\nbase_url = \"\"\n");
    assert!(e.contains("worldpay") && e.contains("kind"), "{e}");
    let e = refused(
        "[[providers]]\nname = \"a\"\nkind = \"stripe\"\nbase_url = \"\"\nsecret = \"whsec_x\"\n",
    );
    assert!(
        e.starts_with("providers.secret=`a`") && e.contains("api_key"),
        "{e}"
    );
    let e = refused(
        "[[providers]]\nname = \"a\"\nkind = \"sandbox\"\nbase_url = \"\"\nsecret = \"nope\"\n",
    );
    assert!(
        e.starts_with("providers.secret=`a`") && e.contains("whsec_"),
        "{e}"
    );
    let e = refused("[[providers]]\nname = \"A B\"\nkind = \"sandbox\"\nbase_url = \"\"\n");
    assert!(e.starts_with("providers=`A B (sandbox)`"), "{e}");
    let e = refused("[[providers]]\nname = \"a\"\nkind = \"sandbox\"\n");
    assert!(e.contains("base_url"), "{e}");
}

/// The environment's text over the file's numbers and booleans, key by
/// key; the file's own values where the environment says nothing.
#[test]
fn environment_text_overrides_file_values() {
    let file = "refused_keep = 5\ncookie_secure = true\ncalls_per_account = 2\n";
    let c = Config::from_toml(file, |_| None).unwrap();
    assert_eq!(
        (c.refused_keep, c.cookie_secure, c.calls_per_account),
        (5, true, 2)
    );
    let c = Config::from_toml(file, |k| match k {
        "RECKON_COOKIE_SECURE" => Some("no".into()),
        "RECKON_CALLS_PER_ACCOUNT" => Some(" 8 ".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(
        (c.refused_keep, c.cookie_secure, c.calls_per_account),
        (5, false, 8)
    );
    let e = Config::from_toml("refused_keep = 0\n", |_| None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("RECKON_REFUSED_KEEP=`0`"), "{e}");
    let e = Config::from_toml("refused_keep = [1]\n", |_| None)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("config file") && e.contains("refused_keep"),
        "{e}"
    );
}

fn load(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_sources(|k| map.get(k).cloned())
}

#[test]
fn defaults_are_documented_ones() {
    let c = load(&[]).unwrap();
    assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
    assert_eq!(c.database_url.as_str(), "sqlite://data/reckon.db?mode=rwc");
    assert_eq!(c.sqlite_path().unwrap(), PathBuf::from("data/reckon.db"));
    assert_eq!(c.timezone, "UTC");
    assert_eq!(c.log_format, LogFormat::Pretty);
    assert!(!c.cookie_secure);
    assert_eq!(c.calls_per_account, 4);
}

#[test]
fn environment_overrides_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reckon.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:4000\"\ntimezone = \"Asia/Shanghai\"\nlog_format = \"json\"\n",
    )
    .unwrap();
    let c = load(&[
        ("RECKON_CONFIG", file.to_str().unwrap()),
        ("RECKON_LISTEN", "127.0.0.1:5000"),
    ])
    .unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:5000");
    assert_eq!(c.timezone, "Asia/Shanghai");
    assert_eq!(c.log_format, LogFormat::Json);
}

#[test]
fn bad_values_name_the_key() {
    let e = load(&[("RECKON_LISTEN", "nowhere")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("RECKON_LISTEN=`nowhere`"), "{e}");
    let e = load(&[("RECKON_TIMEZONE", "Mars/Olympus")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("IANA"), "{e}");
    let e = load(&[("DATABASE_URL", "mysql://u:secret@h/db")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mysql://u:***@h/db") && !e.contains("secret"),
        "{e}"
    );
    let e = load(&[("RECKON_LOG_FORMAT", "xml")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("json or pretty"), "{e}");
    for bad in ["0", "65", "four"] {
        let e = load(&[("RECKON_CALLS_PER_ACCOUNT", bad)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("RECKON_CALLS_PER_ACCOUNT"), "{e}");
    }
    let c = load(&[("RECKON_CALLS_PER_ACCOUNT", "8")]).unwrap();
    assert_eq!(c.calls_per_account, 8);
}

#[test]
fn malformed_file_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "listen = \n[oops").unwrap();
    let e = load(&[("RECKON_CONFIG", file.to_str().unwrap())])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("config file") && !e.contains('\n'), "{e}");
    std::fs::write(&file, "colour = \"blue\"\n").unwrap();
    let e = load(&[("RECKON_CONFIG", file.to_str().unwrap())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("colour"), "{e}");
}

/// fuzz/corpus/config/crash-b541b308…: a schedule ending in a
/// multi-byte character panicked; it (and one too long for i64
/// microseconds) is now refused with the key named.
#[test]
fn schedules_ending_in_any_character_or_too_long_are_refused() {
    assert_eq!(parse_schedule("30s,\u{2d7}"), None);
    assert_eq!(parse_schedule("1\u{20ac}"), None);
    assert_eq!(parse_schedule("\u{20ac}"), None);
    assert_eq!(parse_schedule("2562047789h"), None);
    assert_eq!(parse_schedule("9223372036854775807s"), None);
    assert_eq!(
        parse_schedule("2562047788h"),
        Some(vec![9_223_372_036_800_000_000])
    );
    let e = Config::from_toml("", |k| {
        (k == "RECKON_QUERY_SCHEDULE").then(|| "30s,\u{2d7}".to_owned())
    })
    .unwrap_err();
    assert!(e.to_string().contains("RECKON_QUERY_SCHEDULE"), "{e}");
}

#[test]
fn engine_settings_parse() {
    let c = load(&[]).unwrap();
    assert_eq!(c.query_schedule.len(), 5);
    assert_eq!(c.query_schedule[0], 60_000_000);
    assert_eq!(
        parse_schedule("30s, 2h"),
        Some(vec![30_000_000, 7_200_000_000])
    );
    assert_eq!(parse_schedule("5x"), None);
    let c = load(&[
        ("RECKON_SANDBOX_URL", "http://127.0.0.1:4000"),
        (
            "RECKON_SANDBOX_SECRET",
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        ),
        (
            "RECKON_OUTBOX_SINKS",
            "fulfilment=http://127.0.0.1:9000/a, accounting=http://127.0.0.1:9001/b",
        ),
    ])
    .unwrap();
    assert_eq!(c.providers[0].name(), "sandbox");
    assert_eq!(c.outbox_sinks.len(), 2);
    let e = load(&[("RECKON_SANDBOX_URL", "http://x")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("RECKON_SANDBOX_SECRET"), "{e}");
    let e = load(&[("RECKON_OUTBOX_SINKS", "nonsense")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("RECKON_OUTBOX_SINKS"), "{e}");
}

#[test]
fn passwords_never_appear_in_redacted_urls() {
    assert_eq!(
        redact_url("postgres://reckon:hunter2@db:5432/reckon"),
        "postgres://reckon:***@db:5432/reckon"
    );
    assert_eq!(redact_url("postgres://db/reckon"), "postgres://db/reckon");
}

#[test]
fn statement_pull_settings_default_and_name_their_key() {
    let c = load(&[]).unwrap();
    assert_eq!(
        (
            c.pull_catch_up_days,
            c.statement_missing_hours,
            c.statement_keep_days
        ),
        (7, 6, 400)
    );
    assert!(c.pull_times.is_empty());
    let sandbox = [
        ("RECKON_SANDBOX_URL", "http://127.0.0.1:4000"),
        (
            "RECKON_SANDBOX_SECRET",
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        ),
    ];
    let with = |extra: (&'static str, &'static str)| {
        let mut vars = sandbox.to_vec();
        vars.push(extra);
        load(&vars)
    };
    let c = with(("RECKON_PULL_TIMES", "sandbox=Asia/Shanghai@9")).unwrap();
    assert_eq!(
        c.pull_times,
        vec![super::PullTime {
            provider: "sandbox".into(),
            zone: "Asia/Shanghai".into(),
            ready_hour: 9
        }]
    );
    for (bad, named) in [
        ("sandbox=Asia/Shanghai", "NAME=ZONE@HOUR"),
        ("sandbox=Asia/Shanghai@24", "NAME=ZONE@HOUR"),
        ("stripe=UTC@3", "not a configured provider"),
        ("sandbox=Mars/Olympus@3", "IANA"),
    ] {
        let e = with(("RECKON_PULL_TIMES", bad)).unwrap_err().to_string();
        assert!(e.contains("RECKON_PULL_TIMES") && e.contains(named), "{e}");
    }
    for key in [
        "RECKON_PULL_CATCH_UP_DAYS",
        "RECKON_STATEMENT_MISSING_HOURS",
        "RECKON_STATEMENT_KEEP_DAYS",
    ] {
        let e = load(&[(key, "0")]).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
    let c = load(&[("RECKON_STATEMENT_KEEP_DAYS", "30")]).unwrap();
    assert_eq!(c.statement_keep_days, 30);
}

/// WeChat Pay and Alipay bills are cut in China time whatever the business
/// zone; the others in the business zone; an account's own setting wins.
#[test]
fn each_kind_has_its_statement_day() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reckon.toml");
    std::fs::write(
        &file,
        "timezone = \"Europe/Berlin\"\n\
         [[providers]]\nname = \"wx\"\nkind = \"wechatpay\"\nbase_url = \"http://127.0.0.1:9\"\n\
         [[providers]]\nname = \"sbx\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\n\
         secret = \"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD\"\n\
         [[providers]]\nname = \"late\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\n\
         secret = \"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD\"\n",
    )
    .unwrap();
    let c = load(&[
        ("RECKON_CONFIG", file.to_str().unwrap()),
        ("RECKON_PULL_TIMES", "late=UTC@5"),
    ])
    .unwrap();
    let s = crate::startup::settings_of(&c).unwrap();
    let day = |name: &str| {
        let d = &s.pulls.days[name];
        (d.zone.iana_name().unwrap().to_owned(), d.ready_hour)
    };
    assert_eq!(day("wx"), ("Asia/Shanghai".into(), 10));
    assert_eq!(day("sbx"), ("Europe/Berlin".into(), 2));
    assert_eq!(day("late"), ("UTC".into(), 5));
}

/// Ticket ageing and SLA: hours per class over the
/// defaults, a typo refused with the variable named.
#[test]
fn sla_hours_are_read_per_class() {
    let c = load(&[("RECKON_SLA_HOURS", "LOCAL_ONLY=8,*=96")]).unwrap();
    assert_eq!(c.sla.hours("LOCAL_ONLY"), 8);
    assert_eq!(c.sla.hours("STATUS_LAG"), 96);
    assert_eq!(load(&[]).unwrap().sla, crate::domain::Sla::default());
    let e = load(&[("RECKON_SLA_HOURS", "LOCAL_ONLYY=8")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("RECKON_SLA_HOURS") && e.contains("LOCAL_ONLYY"),
        "{e}"
    );
}

/// The cut window — 30 minutes unless set, one figure for every account
/// with per-account overrides, in the engine's settings in microseconds; a
/// bad value or an unknown account names the key.
#[test]
fn the_cut_window_defaults_and_is_set_per_account() {
    let c = load(&[]).unwrap();
    assert_eq!(c.cut_window, super::CutWindow::default());
    assert_eq!(c.cut_window.minutes, 30);
    let sandbox = [
        ("RECKON_SANDBOX_URL", "http://127.0.0.1:4000"),
        (
            "RECKON_SANDBOX_SECRET",
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        ),
    ];
    let with = |given: &'static str| {
        let mut vars = sandbox.to_vec();
        vars.push(("RECKON_CUT_WINDOW_MINUTES", given));
        load(&vars)
    };
    let c = with("10, sandbox=45").unwrap();
    assert_eq!(c.cut_window.minutes, 10);
    assert_eq!(c.cut_window.per_provider, [("sandbox".to_owned(), 45)]);
    let s = crate::startup::settings_of(&c).unwrap();
    assert_eq!(s.pulls.cut_window_us, 600_000_000);
    assert_eq!(s.pulls.cut_windows["sandbox"], 2_700_000_000);
    assert_eq!(with("0").unwrap().cut_window.minutes, 0);
    for (bad, named) in [
        ("-1", "from 0 to 360"),
        ("361", "from 0 to 360"),
        ("half an hour", "from 0 to 360"),
        ("stripe=10", "not a configured provider"),
    ] {
        let e = with(bad).unwrap_err().to_string();
        assert!(
            e.contains("RECKON_CUT_WINDOW_MINUTES") && e.contains(named),
            "{e}"
        );
    }
}

// ---- Sinks as endpoints ---------------------------------------------

const SINK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

fn sinks_file(extra: &str) -> String {
    format!(
        r#"
[[sinks]]
name = "fulfilment"
url = "https://shop.example/hooks/reckon"
event_types = ["payment.succeeded", "refund.*"]
secret = "{SINK_SECRET}"
previous_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
timeout = "5s"
schedule = ["10s", "1m", "1h"]
{extra}
"#
    )
}

#[test]
fn named_sinks_are_read_with_their_defaults() {
    let c = Config::from_toml(
        &format!(
            "{}\n[[sinks]]\nname = \"ledger\"\nurl = \"http://127.0.0.1:9000/in\"\n",
            sinks_file("")
        ),
        |_| None,
    )
    .unwrap();
    let [f, l] = &c.sinks.named[..] else {
        panic!("two sinks: {:?}", c.sinks.named)
    };
    assert_eq!(f.name, "fulfilment");
    assert_eq!(f.event_types, ["payment.succeeded", "refund.*"]);
    assert_eq!(f.secret.as_ref().unwrap().expose_secret(), SINK_SECRET);
    assert!(f.previous_secret.is_some());
    assert_eq!(f.timeout, std::time::Duration::from_secs(5));
    assert_eq!(f.schedule, [10_000_000, 60_000_000, 3_600_000_000]);
    // The defaults: every event, the outbox secret, 10 s, Svix-like schedule.
    assert!(l.event_types.is_empty() && l.secret.is_none());
    assert_eq!(l.timeout, DEFAULT_SINK_TIMEOUT);
    assert_eq!(l.schedule.len(), 7);
    assert_eq!(l.schedule.iter().sum::<i64>() / 3_600_000_000, 27);
    assert!(!format!("{c:?}").contains("C2FVsBQ"), "secrets never print");
    assert_eq!((c.sinks.failing_attempts, c.sinks.failing_minutes), (5, 30));
    assert_eq!(c.sinks.max_attempts, None);
}

#[test]
fn bad_sink_config_is_refused_naming_the_sink_and_key() {
    let refused = |extra: &str, replace: (&str, &str)| {
        let text = sinks_file(extra).replace(replace.0, replace.1);
        Config::from_toml(&text, |_| None).unwrap_err().to_string()
    };
    let e = refused("colour = \"blue\"", ("", ""));
    assert!(e.contains("unknown field") && e.contains("colour"), "{e}");
    let e = refused(
        "",
        ("https://shop.example/hooks/reckon", "shop.example/hooks"),
    );
    assert!(e.contains("fulfilment.url") && e.contains("http"), "{e}");
    let e = refused(
        "",
        ("https://shop.example/hooks/reckon", "ftp://shop.example/x"),
    );
    assert!(e.contains("fulfilment.url"), "{e}");
    let e = refused("", ("timeout = \"5s\"", "timeout = \"5 seconds\""));
    assert!(e.contains("fulfilment.timeout") && e.contains("10s"), "{e}");
    let e = refused("", ("timeout = \"5s\"", "timeout = \"5m\""));
    assert!(e.contains("fulfilment.timeout"), "too long: {e}");
    let e = refused("", ("\"1m\", \"1h\"", "\"1m\", \"1fortnight\""));
    assert!(
        e.contains("fulfilment.schedule") && e.contains("1fortnight"),
        "{e}"
    );
    let e = refused("", (SINK_SECRET, "C2FVsBQIhrscChlQIMV+b5sSYspob7oD"));
    assert!(
        e.contains("fulfilment.secret") && e.contains("whsec_"),
        "{e}"
    );
    assert!(!e.contains("C2FVsBQ"), "the secret is not echoed: {e}");
    let e = refused(
        "",
        ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not*base64"),
    );
    assert!(e.contains("fulfilment.previous_secret"), "{e}");
    let e = refused("", ("\"refund.*\"", "\"refund.*.x y\""));
    assert!(e.contains("fulfilment.event_types"), "{e}");
    let e = refused("", ("name = \"fulfilment\"", "name = \"a/b\""));
    assert!(e.contains("name"), "{e}");
    // The same name twice, in the file or beside RECKON_OUTBOX_SINKS.
    let twice = format!("{}{}", sinks_file(""), sinks_file(""));
    let e = Config::from_toml(&twice, |_| None).unwrap_err().to_string();
    assert!(e.contains("two sinks"), "{e}");
    let e = Config::from_toml(&sinks_file(""), |k| {
        (k == "RECKON_OUTBOX_SINKS").then(|| "fulfilment=http://127.0.0.1:9/x".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("two sinks"), "{e}");
}

#[test]
fn env_sinks_keep_working_with_the_old_attempts_when_asked() {
    let c = load(&[
        ("RECKON_OUTBOX_SINKS", "fulfilment=http://127.0.0.1:9000/a"),
        ("RECKON_OUTBOX_MAX_ATTEMPTS", "4"),
        ("RECKON_SINK_FAILING_ATTEMPTS", "8"),
        ("RECKON_SINK_FAILING_MINUTES", "60"),
    ])
    .unwrap();
    assert_eq!(c.outbox_sinks.len(), 1);
    assert_eq!(c.sinks.max_attempts, Some(4));
    assert_eq!((c.sinks.failing_attempts, c.sinks.failing_minutes), (8, 60));
    // 4 attempts: 3 delays of the old doubling backoff.
    assert_eq!(legacy_schedule(4), [20_000_000, 40_000_000, 80_000_000]);
    assert_eq!(legacy_schedule(12).last(), Some(&3_600_000_000));
    let e = load(&[("RECKON_OUTBOX_MAX_ATTEMPTS", "0")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("RECKON_OUTBOX_MAX_ATTEMPTS"), "{e}");
}

/// Alert channels from the file, checked; a channel named like an
/// outbox sink or another channel is refused with the name.
#[test]
fn alert_channels_are_checked_and_their_names_unique_among_sinks() {
    let channel = |name: &str| {
        format!(
            "[[alert_channels]]\nname = \"{name}\"\nkind = \"slack\"\nurl = \"https://hooks.example/T/B/x\"\n"
        )
    };
    let env =
        |k: &str| (k == "RECKON_OUTBOX_SINKS").then(|| "fulfilment=http://127.0.0.1:9/e".into());
    let ok = Config::from_toml(&(channel("ops") + &channel("finance")), env).unwrap();
    let names: Vec<&str> = ok.alert_channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ops", "finance"]);
    for file in [channel("fulfilment"), channel("ops") + &channel("ops")] {
        let refused = Config::from_toml(&file, env).unwrap_err().to_string();
        assert!(
            refused.contains("alert_channels") && refused.contains("must differ"),
            "{refused}"
        );
    }
    let unknown = Config::from_toml(&(channel("ops") + "colour = \"red\"\n"), env).unwrap_err();
    assert!(unknown.to_string().contains("colour"), "{unknown}");
}

/// The spike threshold as N/M minutes; a bad one named.
#[test]
fn the_refused_spike_threshold_reads_n_per_m_minutes() {
    let c = Config::from_toml("", |_| None).unwrap();
    assert_eq!(c.refused_spike, crate::config::RefusedSpike::default());
    let c = Config::from_toml("refused_spike = \"50/10\"\n", |_| None).unwrap();
    assert_eq!(
        (c.refused_spike.failures, c.refused_spike.window_us),
        (50, 600_000_000)
    );
    for bad in ["50", "0/5", "20/0", "x/5"] {
        let e = Config::from_toml(&format!("refused_spike = \"{bad}\"\n"), |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("RECKON_REFUSED_SPIKE"), "{bad}: {e}");
    }
}

/// Sessions and the sign-in lock-out: the defaults, a file's and the
/// environment's values, and a lock-out under 30 minutes refused.
#[test]
fn session_timeouts_and_the_lock_out_read_with_a_floor_of_thirty_minutes() {
    const MIN: i64 = 60_000_000;
    let c = Config::from_toml("", |_| None).unwrap();
    assert_eq!(
        (
            c.sign_in.idle_us,
            c.sign_in.lifetime_us,
            c.sign_in.max_failures,
            c.sign_in.lock_out_us
        ),
        (15 * MIN, 12 * 60 * MIN, 5, 30 * MIN)
    );
    let file = "session_idle_minutes = 5\nsession_lifetime_hours = 8\nlogin_max_failures = 3\nlockout_minutes = 60\n";
    let c = Config::from_toml(file, |_| None).unwrap();
    assert_eq!(
        (
            c.sign_in.idle_us,
            c.sign_in.lifetime_us,
            c.sign_in.max_failures,
            c.sign_in.lock_out_us
        ),
        (5 * MIN, 8 * 60 * MIN, 3, 60 * MIN)
    );
    let env = |k: &str| (k == "RECKON_SESSION_IDLE_MINUTES").then(|| "30".to_owned());
    assert_eq!(
        Config::from_toml(file, env).unwrap().sign_in.idle_us,
        30 * MIN
    );

    for bad in ["29", "0", "-30", "half an hour"] {
        let e = Config::from_toml(&format!("lockout_minutes = \"{bad}\"\n"), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("RECKON_LOCKOUT_MINUTES") && e.contains("at least 30 minutes"),
            "{bad}: {e}"
        );
    }
    for (key, variable) in [
        ("session_idle_minutes", "RECKON_SESSION_IDLE_MINUTES"),
        ("session_lifetime_hours", "RECKON_SESSION_LIFETIME_HOURS"),
        ("login_max_failures", "RECKON_LOGIN_MAX_FAILURES"),
    ] {
        let e = Config::from_toml(&format!("{key} = 0\n"), |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(variable), "{key}: {e}");
    }
}

#[test]
fn the_roles_that_need_a_second_factor_are_supervisors_and_admins_unless_set() {
    let c = Config::from_toml("", |_| None).unwrap();
    let m = c.sign_in.mfa;
    assert!(!m.operator && m.supervisor && m.admin && !m.given);
    let c = Config::from_toml("mfa_roles = \"operator, Admin\"\n", |_| None).unwrap();
    let m = c.sign_in.mfa;
    assert!(m.operator && !m.supervisor && m.admin && m.given);
    let env = |k: &str| (k == "RECKON_MFA_ROLES").then(|| "none".to_owned());
    let m = Config::from_toml("mfa_roles = \"admin\"\n", env)
        .unwrap()
        .sign_in
        .mfa;
    assert!(!m.any() && m.given);
    let e = Config::from_toml("mfa_roles = \"admin,boss\"\n", |_| None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("RECKON_MFA_ROLES"), "{e}");
}

/// The `[oidc]` section: defaults filled in, `openid` always asked for,
/// the claim's values per role, passwords turned off by `off`, the
/// secret from the environment over the file's and never printed; a
/// section mapping no value, or a bad URL, refused by its key.
#[test]
fn the_oidc_section_is_read_and_checked() {
    let section = |extra: &str| {
        format!(
            "[oidc]\nissuer = \"https://idp.example/realms/finance\"\nclient_id = \"reckon\"\n\
             client_secret = \"from-the-file\"\npublic_url = \"https://reckon.example/\"\n{extra}"
        )
    };
    let c = Config::from_toml(&section("admin = [\"fin-admins\"]\n"), |_| None).unwrap();
    let o = c.oidc.as_ref().unwrap();
    assert_eq!(o.redirect_url, "https://reckon.example/auth/oidc/callback");
    assert_eq!(o.scopes, ["openid", "profile", "email"]);
    assert_eq!((o.role_claim.as_str(), o.local_passwords), ("groups", true));
    assert_eq!(
        o.role_for(&["x".into(), "fin-admins".into()]),
        Some(app::types::Role::Admin)
    );
    assert_eq!(o.role_for(&["x".into()]), None);
    assert!(
        !format!("{c:?}").contains("from-the-file"),
        "the secret never prints"
    );

    let c = Config::from_toml(
        &section(
            "scopes = [\"groups\"]\nrole_claim = \"roles\"\noperator = [\"ops\"]\nsupervisor = [\"sup\", \"ops\"]\nlocal_passwords = \"off\"\n",
        ),
        |k| (k == "RECKON_OIDC_CLIENT_SECRET").then(|| "from-env".into()),
    )
    .unwrap();
    let o = c.oidc.unwrap();
    assert_eq!(o.scopes, ["openid", "groups"]);
    assert_eq!(
        o.role_for(&["ops".into()]),
        Some(app::types::Role::Supervisor)
    );
    assert!(!o.local_passwords);
    use secrecy::ExposeSecret;
    assert_eq!(o.client_secret.unwrap().expose_secret(), "from-env");

    assert!(Config::from_toml("", |_| None).unwrap().oidc.is_none());
    for (extra, key) in [
        ("", "oidc.role_claim"),
        (
            "admin = [\"a\"]\nlocal_passwords = \"maybe\"\n",
            "oidc.local_passwords",
        ),
    ] {
        let e = Config::from_toml(&section(extra), |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{e}");
    }
    let e = Config::from_toml(
        &section("admin = [\"a\"]\n").replace("https://idp.example", "idp.example"),
        |_| None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("oidc.issuer"), "{e}");
}
