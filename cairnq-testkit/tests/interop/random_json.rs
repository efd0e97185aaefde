//! Random JSON documents, and equality by value, for the exactness tests.
//!
//! Documents are written as text so they can hold what `serde_json::Value`
//! cannot: integers far beyond 64 bits, floats drawn from random bit
//! patterns (subnormals included) printed in their shortest round-trip form,
//! `-0.0`. Two documents are equal by value when their structures match,
//! object keys compared as a set (Postgres jsonb reorders them), strings
//! exactly, and numbers by exact decimal value (`1e2` equals `100`, while
//! `90.33333333333331` differs from `90.33333333333333`).

use std::collections::BTreeMap;

use serde_json::value::RawValue;

/// A seeded source of documents; the seed is printed by the tests so a
/// failure can be replayed with `CAIRNQ_JSON_SEED`.
pub(crate) struct Docs {
    rng: fastrand::Rng,
}

impl Docs {
    pub(crate) fn new(seed: u64) -> Self {
        Self { rng: fastrand::Rng::with_seed(seed) }
    }

    /// One document, nested at most `depth` levels.
    pub(crate) fn doc(&mut self, depth: u32) -> String {
        let pick = if depth == 0 { self.rng.u32(0..6) } else { self.rng.u32(0..8) };
        match pick {
            0 => ["null", "true", "false"][self.rng.usize(0..3)].to_string(),
            1 | 2 => self.integer(),
            3 | 4 => self.float(),
            5 => self.string(),
            6 => {
                let items: Vec<String> = (0..self.rng.usize(0..5)).map(|_| self.doc(depth - 1)).collect();
                format!("[{}]", items.join(","))
            }
            _ => {
                let mut keys = std::collections::BTreeSet::new();
                let mut entries = Vec::new();
                for _ in 0..self.rng.usize(0..5) {
                    let key = self.string();
                    if keys.insert(key.clone()) {
                        entries.push(format!("{key}:{}", self.doc(depth - 1)));
                    }
                }
                format!("{{{}}}", entries.join(","))
            }
        }
    }

    fn integer(&mut self) -> String {
        match self.rng.u32(0..4) {
            0 => self.rng.i64(-1000..1000).to_string(),
            1 => [i64::MIN.to_string(), i64::MAX.to_string(), u64::MAX.to_string(), (1u128 << 70).to_string()]
                [self.rng.usize(0..4)]
            .clone(),
            2 => self.rng.i64(..).to_string(),
            _ => {
                let digits: String = (0..self.rng.usize(20..40)).map(|_| self.rng.digit(10)).collect();
                let sign = if self.rng.bool() { "-" } else { "" };
                format!("{sign}{}{}", self.rng.u8(1..10), digits)
            }
        }
    }

    fn float(&mut self) -> String {
        let value = match self.rng.u32(0..6) {
            0 => -0.0,
            1 => f64::from_bits(self.rng.u64(1..1 << 52)), // subnormal
            2 => self.rng.i32(-1000..1000) as f64 / 3.0,
            _ => loop {
                let candidate = f64::from_bits(self.rng.u64(..));
                if candidate.is_finite() {
                    break candidate;
                }
            },
        };
        serde_json::to_string(&value).unwrap_or_else(|_| "0.5".to_string())
    }

    fn string(&mut self) -> String {
        const PALETTE: &[char] = &[
            'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}', 'é', 'ß', '中', '😀',
            '\u{2028}', '\u{fffd}',
        ];
        let text: String = (0..self.rng.usize(0..12)).map(|_| PALETTE[self.rng.usize(0..PALETTE.len())]).collect();
        serde_json::to_string(&text).unwrap_or_default()
    }
}

/// A document reduced to what "equal by value" compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Canon {
    Null,
    Bool(bool),
    /// Sign, significant digits without leading or trailing zeros (empty
    /// for zero), and the power of ten of the last digit.
    Number {
        negative: bool,
        digits: String,
        exponent: i64,
    },
    Text(String),
    Array(Vec<Canon>),
    Object(BTreeMap<String, Canon>),
}

/// How strictly zero's sign is compared: a store that keeps the text keeps
/// `-0.0`; Postgres `numeric` has no negative zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zero {
    Signed,
    Unsigned,
}

impl Canon {
    /// The canonical form of a JSON text; `None` when it does not parse.
    pub(crate) fn of(text: &str, zero: Zero) -> Option<Self> {
        let raw: Box<RawValue> = serde_json::from_str(text).ok()?;
        Self::of_raw(&raw, zero)
    }

    fn of_raw(raw: &RawValue, zero: Zero) -> Option<Self> {
        let text = raw.get().trim();
        Some(match text.as_bytes().first()? {
            b'n' => Self::Null,
            b't' => Self::Bool(true),
            b'f' => Self::Bool(false),
            b'"' => Self::Text(serde_json::from_str(text).ok()?),
            b'[' => {
                let items: Vec<Box<RawValue>> = serde_json::from_str(text).ok()?;
                Self::Array(items.iter().map(|item| Self::of_raw(item, zero)).collect::<Option<_>>()?)
            }
            b'{' => {
                let entries: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text).ok()?;
                let canon = entries.into_iter().map(|(k, v)| Some((k, Self::of_raw(&v, zero)?)));
                Self::Object(canon.collect::<Option<_>>()?)
            }
            _ => number(text, zero)?,
        })
    }
}

/// A JSON number's exact decimal value.
fn number(text: &str, zero: Zero) -> Option<Canon> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = format!("{whole}{fraction}");
    let mut exponent = exp - i64::try_from(fraction.len()).ok()?;
    let trimmed_end = all.trim_end_matches('0');
    exponent += i64::try_from(all.len() - trimmed_end.len()).ok()?;
    let digits = trimmed_end.trim_start_matches('0').to_string();
    if digits.is_empty() {
        let negative = negative && zero == Zero::Signed;
        return Some(Canon::Number { negative, digits, exponent: 0 });
    }
    Some(Canon::Number { negative, digits, exponent })
}

#[test]
fn numbers_compare_by_exact_value() {
    let canon = |text: &str| Canon::of(text, Zero::Signed).expect("parses");
    assert_eq!(canon("1e2"), canon("100"));
    assert_eq!(canon("100.0"), canon("1E+2"));
    assert_eq!(canon("5e-324"), canon(&format!("0.{}5", "0".repeat(323))));
    assert_ne!(canon("90.33333333333333"), canon("90.33333333333331"));
    assert_ne!(canon("-0.0"), canon("0.0"));
    assert_eq!(Canon::of("-0.0", Zero::Unsigned), Canon::of("0", Zero::Unsigned));
    assert_eq!(canon(r#"{"a":1,"b":[true]}"#), canon(r#"{ "b" : [ true ], "a" : 1.0 }"#));
}
