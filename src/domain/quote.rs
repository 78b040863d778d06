//! Echoing what was sent in a refusal, bounded: a field of any size is
//! quoted by its first characters and its length, so an error (and the
//! run, page or log that keeps it) stays small whatever the input was.

use std::borrow::Cow;
use std::fmt;

/// The characters of a field a refusal quotes.
pub const QUOTED_CHARS: usize = 100;

/// `field` as a refusal quotes it: `"abc"` whole when it is short,
/// otherwise its first [`QUOTED_CHARS`] characters and its length,
/// `"abc…" (20,971,520 bytes)`. Escaped as `{:?}` escapes a string.
pub fn quote(field: &str) -> Quoted<'_> {
    Quoted {
        start: field,
        len: field.len(),
    }
}

/// [`quote`] of a text `len` bytes long of which only `start` is at hand
/// (a line too long to be kept whole).
pub fn quote_start(start: &str, len: usize) -> Quoted<'_> {
    Quoted { start, len }
}

/// See [`quote`].
#[derive(Clone, Copy)]
pub struct Quoted<'a> {
    start: &'a str,
    len: usize,
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.start;
        let cut = s.char_indices().nth(QUOTED_CHARS).map(|(at, _)| at);
        match cut {
            None if self.len <= s.len() => write!(f, "{s:?}"),
            cut => write!(
                f,
                "\"{}…\" ({} bytes)",
                s[..cut.unwrap_or(s.len())].escape_debug(),
                grouped(self.len)
            ),
        }
    }
}

impl fmt::Debug for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `n` with its thousands grouped by commas: 20,971,520.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `text` cut to at most `max` bytes on a character boundary, saying how
/// long it was when it was cut: what a stored message or a page keeps of
/// a text that may have been built from anything.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let tail = format!("… ({} bytes)", grouped(text.len()));
    let mut cut = max.saturating_sub(tail.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{}{tail}", &text[..cut]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_fields_are_quoted_whole_and_long_ones_by_their_start() {
        assert_eq!(quote("ten").to_string(), "\"ten\"");
        assert_eq!(quote("a\"b").to_string(), "\"a\\\"b\"");
        let long = "x".repeat(20 * 1024 * 1024);
        assert_eq!(
            quote(&long).to_string(),
            format!("\"{}…\" (20,971,520 bytes)", "x".repeat(100))
        );
        // Cut on a character, not a byte: 商 is three bytes.
        let wide = "商".repeat(150);
        let q = quote(&wide).to_string();
        assert_eq!(q, format!("\"{}…\" (450 bytes)", "商".repeat(100)));
        assert_eq!(quote(&"商".repeat(100)).to_string().chars().count(), 102);
        assert_eq!(
            quote_start("abc", 70_000).to_string(),
            "\"abc…\" (70,000 bytes)"
        );
    }

    #[test]
    fn clipped_texts_fit_and_say_how_long_they_were() {
        assert_eq!(clip("short", 10), "short");
        let long = "商".repeat(1000);
        let clipped = clip(&long, 100);
        assert!(clipped.len() <= 100, "{clipped}");
        assert!(clipped.ends_with("… (3,000 bytes)"), "{clipped}");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(65_536), "65,536");
    }
}
