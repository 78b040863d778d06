//! Personal data recognised by its value, wherever it stands in a text:
//! card numbers (13–19 digits with a card network's prefix that pass the
//! Luhn check), e-mail addresses, phone numbers (international `+…`, or a
//! mainland China mobile number) and IP addresses (v4 and v6).

use std::net::Ipv6Addr;

/// The text with every piece of personal data in it masked; `None` when
/// there was none.
pub fn mask(text: &str) -> Option<String> {
    let mut spans = Vec::new();
    cards(text, &mut spans);
    phones(text, &mut spans);
    emails(text, &mut spans);
    ipv4s(text, &mut spans);
    ipv6s(text, &mut spans);
    if spans.is_empty() {
        return None;
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.start < at {
            continue; // inside one already masked
        }
        out.push_str(&text[at..span.start]);
        out.push_str(&span.shown);
        at = span.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

struct Span {
    start: usize,
    end: usize,
    shown: String,
}

/// Whether a run of digits (nothing else) is a card number.
pub fn is_card_number(digits: &str) -> bool {
    let len = digits.len();
    (13..=19).contains(&len)
        && digits.bytes().all(|b| b.is_ascii_digit())
        && has_card_prefix(digits)
        && luhn(digits)
}

/// A card number as PCI DSS allows it shown: its last four digits.
pub fn mask_card(digits: &str) -> String {
    let last4: String = digits
        .chars()
        .filter(char::is_ascii_digit)
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("****{last4}")
}

/// The prefixes the card networks issue from: Visa, Mastercard, American
/// Express, Discover, UnionPay, JCB, Diners Club, Maestro. Keeps an order
/// number that happens to pass the Luhn check readable.
fn has_card_prefix(d: &str) -> bool {
    let n = |k: usize| d[..k].parse::<u32>().unwrap_or(0);
    d.starts_with('4')
        || (51..=55).contains(&n(2))
        || (2221..=2720).contains(&n(4))
        || matches!(n(2), 34 | 37 | 36 | 38 | 39 | 62 | 65)
        || d.starts_with("6011")
        || (644..=649).contains(&n(3))
        || (300..=305).contains(&n(3))
        || (3528..=3589).contains(&n(4))
        || matches!(
            n(4),
            5018 | 5020 | 5038 | 5893 | 6304 | 6759 | 6761 | 6762 | 6763
        )
}

fn luhn(digits: &str) -> bool {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn before_ok(b: &[u8], start: usize) -> bool {
    start == 0 || !is_word(b[start - 1])
}

fn after_ok(b: &[u8], end: usize) -> bool {
    end >= b.len() || !is_word(b[end])
}

/// Digits with single spaces or dashes between groups, from `start`:
/// where the last digit ends, and the digits.
fn digit_run(b: &[u8], start: usize) -> (usize, String) {
    let mut digits = String::new();
    let mut i = start;
    let mut end = start;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            digits.push(b[i] as char);
            i += 1;
            end = i;
        } else if matches!(b[i], b' ' | b'-') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            i += 1;
        } else {
            break;
        }
    }
    (end, digits)
}

fn cards(text: &str, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && before_ok(b, i) && (i == 0 || b[i - 1] != b'.') {
            let (end, digits) = digit_run(b, i);
            if after_ok(b, end) && is_card_number(&digits) {
                out.push(Span {
                    start: i,
                    end,
                    shown: mask_card(&digits),
                });
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
}

fn phones(text: &str, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'+' && i + 1 < b.len() && b[i + 1].is_ascii_digit() && before_ok(b, i) {
            let (end, digits) = digit_run(b, i + 1);
            if (8..=15).contains(&digits.len()) && after_ok(b, end) {
                out.push(Span {
                    start: i,
                    end,
                    shown: super::mask_value(&text[i..end]),
                });
            }
            i = end.max(i + 1);
        } else if b[i] == b'1' && before_ok(b, i) {
            // A mainland mobile number: 11 digits, 1 then 3–9, standing alone.
            let end = i + 11;
            if end <= b.len()
                && b[i..end].iter().all(u8::is_ascii_digit)
                && (b'3'..=b'9').contains(&b[i + 1])
                && after_ok(b, end)
            {
                out.push(Span {
                    start: i,
                    end,
                    shown: super::mask_value(&text[i..end]),
                });
                i = end;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}

fn emails(text: &str, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let local = |c: u8| c.is_ascii_alphanumeric() || b"._%+-".contains(&c);
    let domain = |c: u8| c.is_ascii_alphanumeric() || b".-".contains(&c);
    for (at, _) in text.match_indices('@') {
        let mut start = at;
        while start > 0 && local(b[start - 1]) {
            start -= 1;
        }
        let mut end = at + 1;
        while end < b.len() && domain(b[end]) {
            end += 1;
        }
        // A sentence's full stop is not part of the domain.
        while end > at + 1 && b[end - 1] == b'.' {
            end -= 1;
        }
        let host = &text[at + 1..end];
        let tld_ok = host.rsplit_once('.').is_some_and(|(name, tld)| {
            !name.is_empty() && tld.len() >= 2 && tld.bytes().all(|c| c.is_ascii_alphabetic())
        });
        if start < at && tld_ok {
            out.push(Span {
                start,
                end,
                shown: super::mask_value(&text[start..end]),
            });
        }
    }
}

fn ipv4s(text: &str, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_digit() && before_ok(b, i) && (i == 0 || b[i - 1] != b'.')) {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut parts = 0;
        let ok = loop {
            let s = j;
            while j < b.len() && b[j].is_ascii_digit() && j - s < 4 {
                j += 1;
            }
            let part = &text[s..j];
            if part.is_empty() || part.len() > 3 || part.parse::<u16>().map_or(true, |n| n > 255) {
                break false;
            }
            parts += 1;
            if parts == 4 {
                break true;
            }
            if j < b.len() && b[j] == b'.' {
                j += 1;
            } else {
                break false;
            }
        };
        let followed_ok = j >= b.len()
            || !(is_word(b[j]) || (b[j] == b'.' && j + 1 < b.len() && b[j + 1].is_ascii_digit()));
        if ok && followed_ok {
            out.push(Span {
                start: i,
                end: j,
                shown: super::mask_value(&text[i..j]),
            });
            i = j;
        } else {
            // Skip the rest of this number.
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
        }
    }
}

fn ipv6s(text: &str, out: &mut Vec<Span>) {
    let b = text.as_bytes();
    let candidate = |c: u8| c.is_ascii_hexdigit() || c == b':' || c == b'.';
    let mut i = 0;
    while i < b.len() {
        if !candidate(b[i]) || !before_ok(b, i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && candidate(b[j]) {
            j += 1;
        }
        let mut end = j;
        while end > i && b[end - 1] == b'.' {
            end -= 1;
        }
        let token = &text[i..end];
        if after_ok(b, j)
            && token.matches(':').count() >= 2
            && token.bytes().any(|c| c.is_ascii_hexdigit())
            && token.parse::<Ipv6Addr>().is_ok()
        {
            out.push(Span {
                start: i,
                end,
                shown: super::mask_value(token),
            });
        }
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_numbers_need_a_network_prefix_and_the_luhn_check() {
        assert!(is_card_number("4111111111111111"));
        assert!(is_card_number("5555555555554444"));
        assert!(is_card_number("378282246310005"));
        assert!(is_card_number("6212345678901232"));
        assert!(!is_card_number("4111111111111112"), "Luhn fails");
        assert!(!is_card_number("9111111111111119"), "no network issues 9");
        assert!(!is_card_number("411111111111"), "too short");
        assert_eq!(
            mask("paid by 4111 1111 1111 1111, thanks").as_deref(),
            Some("paid by ****1111, thanks")
        );
        assert_eq!(
            mask("card=4111-1111-1111-1111").as_deref(),
            Some("card=****1111")
        );
    }

    #[test]
    fn identifiers_and_amounts_stay_readable() {
        for text in [
            "4200001234202612041234567890",
            "2026113022001",
            "PAY20261204000123",
            "66.60",
            "2026-12-04T12:30:45+08:00",
            "12:30:45",
            "v1.2.3",
            "Foo::bar",
            "the order 1234567890123456 is late",
            "wx_trade_13800138000x",
        ] {
            assert_eq!(mask(text), None, "{text}");
        }
    }

    #[test]
    fn e_mail_phone_and_addresses_are_masked_where_they_stand() {
        assert_eq!(
            mask("write to wang.li@example.com.").as_deref(),
            Some("write to wa****om.")
        );
        assert_eq!(
            mask("call +86 138 0013 8000 or 13800138000").as_deref(),
            Some("call +8****00 or 13****00")
        );
        assert_eq!(
            mask("from 203.0.113.9 via 2001:db8::1").as_deref(),
            Some("from 20****.9 via 20****:1")
        );
        assert_eq!(mask("at 10.0.0.1").as_deref(), Some("at ****"));
        assert_eq!(mask("version 1.2.3.4.5"), None);
        assert_eq!(mask("a@b"), None, "no domain");
    }
}
