//! Splitting a statement line into fields: CSV (double quotes, `""` inside
//! quotes) through the `csv` crate's reader, into buffers kept from line to
//! line; and, for the sandbox's plain lines, the places of the commas and
//! quotes found sixteen bytes at a time.

/// A CSV line's fields, split by `csv_core` into a buffer this keeps: no
/// allocation per line once the buffers have grown to the longest line.
/// Each line is read on its own (a quote left open ends with the line), a
/// carriage return inside a line is text, and a byte-order mark is the
/// statement reader's to strip, not this one's.
pub struct CsvFields {
    core: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
}

/// The fields of one line, borrowed from the [`CsvFields`] that split it.
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    text: &'a str,
    ends: &'a [usize],
}

impl Default for CsvFields {
    fn default() -> Self {
        CsvFields::new()
    }
}

impl CsvFields {
    pub fn new() -> CsvFields {
        let core = csv_core::ReaderBuilder::new()
            .terminator(csv_core::Terminator::Any(b'\n'))
            .build();
        let mut fields = CsvFields {
            core,
            out: vec![0; 256],
            ends: vec![0; 32],
        };
        // The reader strips a byte-order mark from the first input it is
        // given, and only from that one: given a record first, it leaves
        // every line's bytes as they are.
        fields.split("-");
        fields
    }

    /// Splits one line (without its end).
    pub fn split(&mut self, line: &str) -> Fields<'_> {
        use csv_core::ReadRecordResult;
        if line.is_empty() {
            self.ends[0] = 0;
            return Fields {
                text: "",
                ends: &self.ends[..1],
            };
        }
        let mut input = line.as_bytes();
        let (mut len, mut count) = (0, 0);
        loop {
            // An empty input tells the reader the line has ended.
            let (result, read, wrote, ended) =
                self.core
                    .read_record(input, &mut self.out[len..], &mut self.ends[count..]);
            input = &input[read..];
            len += wrote;
            count += ended;
            match result {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => self.out.resize(self.out.len() * 2, 0),
                ReadRecordResult::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                ReadRecordResult::Record | ReadRecordResult::End => break,
            }
        }
        // Only quotes (ASCII) were taken out of the line's UTF-8, and fields
        // end at commas (ASCII): the rest, and each field, is UTF-8.
        let text = std::str::from_utf8(&self.out[..len]).expect("UTF-8 less ASCII bytes");
        Fields {
            text,
            ends: &self.ends[..count],
        }
    }
}

impl<'a> Fields<'a> {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Field `i` (panics past the end, as indexing does).
    pub fn get(&self, i: usize) -> &'a str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let fields = *self;
        (0..fields.len()).map(move |i| fields.get(i))
    }
}

/// [`CsvFields::split`] once, the fields owned.
pub fn split_owned(line: &str) -> Vec<String> {
    CsvFields::new()
        .split(line)
        .iter()
        .map(str::to_owned)
        .collect()
}

/// The places of the commas and quotes in `line`, in order, found sixteen
/// bytes at a time (eight where SSE2 is not there): a search per field,
/// short as the fields are, cost a large share of the parse, because
/// `memchr2_iter` starts its vector search afresh for each one. Both are
/// ASCII, so every place is a character boundary. Inlined into the
/// sandbox's reader, in another module: a call per comma undid the gain.
#[inline]
pub fn separators(line: &[u8]) -> Separators<'_> {
    Separators {
        line,
        next: 0,
        base: 0,
        marks: 0,
    }
}

pub struct Separators<'a> {
    line: &'a [u8],
    /// Where the next block starts.
    next: usize,
    /// Where the block of `marks` starts.
    base: usize,
    /// A bit for each byte of that block not yet given that is `,` or `"`
    /// (bit `k` for byte `k` with SSE2, bit `8k + 7` without).
    marks: u64,
}

#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;
#[cfg(not(target_arch = "x86_64"))]
const BLOCK: usize = 8;

impl Iterator for Separators<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.marks == 0 {
            let len = self.line.len();
            if self.next >= len {
                return None;
            }
            let left = len - self.next;
            self.marks = if left >= BLOCK {
                marks(self.line[self.next..][..BLOCK].try_into().expect("a block"))
            } else if len >= BLOCK {
                // The line's last block, read so that it ends with the line
                // (no copy); the bytes already seen shifted out.
                marks(self.line[len - BLOCK..].try_into().expect("a block"))
                    >> ((BLOCK - left) * BITS_PER_BYTE)
            } else {
                // A line shorter than a block, with zeros (neither a comma
                // nor a quote) after it.
                let mut block = [0u8; BLOCK];
                for (to, from) in block.iter_mut().zip(&self.line[self.next..]) {
                    *to = *from;
                }
                marks(&block)
            };
            self.base = self.next;
            self.next += BLOCK;
        }
        let at = self.base + self.marks.trailing_zeros() as usize / BITS_PER_BYTE;
        self.marks &= self.marks - 1;
        Some(at)
    }
}

#[cfg(target_arch = "x86_64")]
const BITS_PER_BYTE: usize = 1;
#[cfg(not(target_arch = "x86_64"))]
const BITS_PER_BYTE: usize = 8;

/// Bit `k` set where byte `k` of `block` is `,` or `"`.
#[cfg(target_arch = "x86_64")]
#[inline]
fn marks(block: &[u8; 16]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2, which these need, is part of every x86_64 processor
    // (Rust enables it for the target); the load reads the sixteen bytes
    // `block` borrows, and may be unaligned.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let hits = _mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b',' as i8)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
        );
        u64::from(_mm_movemask_epi8(hits) as u16)
    }
}

/// Bit `8k + 7` set where byte `k` of `block` is `,` or `"`.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn marks(block: &[u8; 8]) -> u64 {
    let word = u64::from_le_bytes(*block);
    byte_is(word, b',') | byte_is(word, b'"')
}

/// 0x80 in each byte of `word` that is `byte`, 0 in the others. Exact:
/// no carry crosses from one byte into the next (each sum is at most
/// 0x7f + 0x7f).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn byte_is(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (u64::from(byte) * 0x0101_0101_0101_0101);
    !(((x & LOW7) + LOW7) | x | LOW7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lines_split_with_quotes() {
        assert_eq!(
            split_owned(r#"a,"b,c","d""e",,f"#),
            ["a", "b,c", "d\"e", "", "f"]
        );
    }

    /// The splitter Reckon wrote before it used the csv crate, kept as the
    /// reference the crate's reading is held to.
    fn hand_split(line: &str) -> Vec<String> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', true) => quoted = false,
                ('"', false) if field.is_empty() => quoted = true,
                (',', false) => fields.push(std::mem::take(&mut field)),
                (c, _) => field.push(c),
            }
        }
        fields.push(field);
        fields
    }

    /// Lines of every length up to 24 from a few characters (commas,
    /// quotes, a carriage return, a byte-order mark, letters, a three-byte
    /// character), one splitter used for all in turn: split as the
    /// hand-written splitter split them.
    #[test]
    fn the_csv_crate_splits_lines_as_the_hand_written_splitter_did() {
        let alphabet = [",", "\"", "a", "Z", "\r", "\u{feff}", "商", " "];
        let mut csv = CsvFields::new();
        let mut seed = 11u32;
        for len in 0..=24 {
            for _ in 0..400 {
                let mut line = String::new();
                for _ in 0..len {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    line.push_str(alphabet[(seed >> 16) as usize % alphabet.len()]);
                }
                let split: Vec<&str> = csv.split(&line).iter().collect();
                assert_eq!(split, hand_split(&line), "{line:?}");
            }
        }
        for line in [
            "\"",
            "\"\"",
            "\"\"\"",
            "a\"b",
            "\"a\"b\"c,d",
            "\"a,b",
            ",",
            ",,",
        ] {
            let split: Vec<&str> = csv.split(line).iter().collect();
            assert_eq!(split, hand_split(line), "{line:?}");
        }
        // Fields longer than the buffers first given.
        let long = format!(
            "{},\"{}\",{}",
            "x".repeat(1000),
            "y,".repeat(700),
            ",".repeat(100)
        );
        let split: Vec<&str> = csv.split(&long).iter().collect();
        assert_eq!(split, hand_split(&long));
    }

    #[test]
    fn separators_are_every_comma_and_quote_in_order() {
        // Lines of every length up to 40 from a few bytes (commas, quotes,
        // letters, and a three-byte character), against a plain search.
        let alphabet: [&[u8]; 5] = [b",", b"\"", b"a", b"Z", "商".as_bytes()];
        let mut seed = 7u32;
        for len in 0..=40 {
            for _ in 0..50 {
                let mut line = Vec::new();
                while line.len() < len {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    line.extend_from_slice(alphabet[(seed >> 16) as usize % alphabet.len()]);
                }
                let expected: Vec<usize> = line
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| matches!(b, b',' | b'"'))
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(separators(&line).collect::<Vec<_>>(), expected, "{line:?}");
            }
        }
        assert_eq!(separators(b"").next(), None);
        assert_eq!(
            separators(b",,,,,,,,,").collect::<Vec<_>>(),
            (0..9).collect::<Vec<_>>()
        );
        // Bytes one off a comma or a quote (and bytes with the high bit
        // set) are not taken for one.
        let near: Vec<u8> = (0..=255u8).filter(|b| !matches!(b, b',' | b'"')).collect();
        assert_eq!(separators(&near).next(), None);
        // The word-at-a-time test (used where SSE2 is not), byte by byte.
        for b in 0..=255u8 {
            let word = u64::from_le_bytes([b, b',', 0, b'"', 0xff, b, 0x2d, 0x2b]);
            let expected = u64::from_le_bytes([
                if b == b',' { 0x80 } else { 0 },
                0x80,
                0,
                0,
                0,
                if b == b',' { 0x80 } else { 0 },
                0,
                0,
            ]);
            assert_eq!(byte_is(word, b','), expected, "{b}");
        }
    }
}
