//! JSON cut short — a refused webhook keeps only its first bytes — masked
//! token by token as far as it goes: what a sensitive key holds is masked
//! whole, every other string by its value. The text is kept as it came
//! (not pretty-printed), since it cannot be parsed.

use super::{is_sensitive, mask_value, values};

struct Frame {
    object: bool,
    /// In an object: the next string is a key.
    expecting_key: bool,
    /// Everything inside is masked (under a sensitive key).
    sensitive: bool,
}

pub fn mask(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut key: Option<String> = None;
    let mut i = 0;
    // Whether the value about to start is to be masked whole.
    let value_sensitive = |stack: &[Frame], key: &Option<String>| {
        stack.last().is_some_and(|f| f.sensitive)
            || (stack.last().is_some_and(|f| f.object) && key.as_deref().is_some_and(is_sensitive))
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'{' | b'[' => {
                let sensitive = value_sensitive(&stack, &key);
                stack.push(Frame {
                    object: c == b'{',
                    expecting_key: c == b'{',
                    sensitive,
                });
                key = None;
                out.push(c as char);
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                out.push(c as char);
                i += 1;
            }
            b',' => {
                if let Some(f) = stack.last_mut()
                    && f.object
                {
                    f.expecting_key = true;
                    key = None;
                }
                out.push(',');
                i += 1;
            }
            b':' => {
                if let Some(f) = stack.last_mut() {
                    f.expecting_key = false;
                }
                out.push(':');
                i += 1;
            }
            b'"' => {
                let end = string_end(b, i + 1);
                let raw = &text[i + 1..end.min(b.len())];
                let closed = end < b.len();
                let is_key = stack.last().is_some_and(|f| f.object && f.expecting_key);
                if is_key {
                    key = Some(decode(raw));
                    out.push_str(&text[i..(end + 1).min(b.len())]);
                } else {
                    let shown = if value_sensitive(&stack, &key) {
                        Some(mask_value(&decode(raw)))
                    } else if closed {
                        values::mask(&decode(raw))
                    } else {
                        let text = decode(raw);
                        let masked = values::mask(&text);
                        cut_digits(masked.as_deref().unwrap_or(&text)).or(masked)
                    };
                    match shown {
                        Some(s) => {
                            let quoted = serde_json::to_string(&s).unwrap_or_default();
                            if closed {
                                out.push_str(&quoted);
                            } else {
                                out.push_str(quoted.trim_end_matches('"'));
                            }
                        }
                        None => out.push_str(&text[i..(end + 1).min(b.len())]),
                    }
                }
                i = end + 1;
            }
            _ if c.is_ascii_alphanumeric() || c == b'-' || c == b'+' || c == b'.' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b"-+.".contains(&b[i])) {
                    i += 1;
                }
                let token = &text[start..i];
                let is_number = token
                    .bytes()
                    .all(|d| d.is_ascii_digit() || b"-+.eE".contains(&d));
                if is_number && value_sensitive(&stack, &key) {
                    out.push_str("\"****\"");
                } else if i == b.len() && is_number && token.len() >= CUT_DIGITS {
                    // Cut in the middle: it may be the start of a card number.
                    out.push_str("****");
                } else if values::is_card_number(token) {
                    out.push_str(&values::mask_card(token));
                } else {
                    out.push_str(token);
                }
            }
            _ => {
                // Whitespace and anything else, one character at a time.
                let ch = text[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// Digits at the cut that could be the start of a card number.
const CUT_DIGITS: usize = 6;

/// A text cut short whose last digits (with spaces or dashes between)
/// could be the start of a card number: those digits masked.
fn cut_digits(text: &str) -> Option<String> {
    let kept = text.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ' || c == '-');
    let tail = &text[kept.len()..];
    (tail.chars().filter(char::is_ascii_digit).count() >= CUT_DIGITS).then(|| format!("{kept}****"))
}

/// The index of the quote closing a string whose text starts at `from`,
/// or the text's length when it was cut first.
fn string_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// A string's text with its escapes read; a cut escape is kept as it is.
fn decode(raw: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_cut_short_is_masked_as_far_as_it_goes() {
        let full = r#"{"id":"evt_1","data":{"object":{"id":"pi_123","amount":6660,"receipt_email":"wang.li@example.com","billing_details":{"name":"Wang Li","address":{"line1":"1 Nanjing Road"}},"description":"order for lee@example.org, card 4111111111111111","client_ip":"203.0.113.9","padding":"x=="}}"#;
        for cut in [
            full.len() - 3,
            full.find("Road").unwrap(),
            full.find("4111").unwrap() + 10,
        ] {
            let shown = mask(&full[..cut]);
            for leaked in [
                "wang.li@example.com",
                "Wang Li",
                "Nanjing",
                "lee@example.org",
                "4111111111",
                "203.0.113.9",
            ] {
                assert!(
                    !shown.contains(leaked),
                    "{leaked} leaked at {cut}:\n{shown}"
                );
            }
            assert!(shown.contains("pi_123"), "{shown}");
            assert!(shown.contains("6660"), "{shown}");
        }
    }

    #[test]
    fn numbers_under_sensitive_keys_and_cards_as_numbers_are_masked() {
        let shown = mask(
            r#"{"amount":100,"card":{"number":4111111111111111,"exp_year":2030},"pan":5555555555554444,"ok":true,"#,
        );
        assert!(shown.contains(r#""amount":100"#), "{shown}");
        assert!(!shown.contains("2030"), "{shown}");
        assert!(!shown.contains("5555555555554444"), "{shown}");
        assert!(shown.contains("****4444"), "{shown}");
        assert!(shown.contains("true"), "{shown}");
    }
}
