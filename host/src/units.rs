//! Durations and sizes as people write them, always with their unit: the
//! same rules for command-line options, environment variables, the
//! configuration file and manifests.
//!
//! - A duration is a number and a unit: `250ms`, `10s`, `5m`, `1h`, or a
//!   sum such as `1h 30m` (see [`humantime::parse_duration`]).
//! - A size is a number and a binary unit: `1000B`, `512KiB`, `64MiB`,
//!   `1GiB` (1 KiB = 1024 B). Decimal units (`kB`, `MB`) and bare letters
//!   (`M`) are refused: tools disagree on what they mean.
//! - A bare number is refused, with a message saying to add a unit: whether
//!   `64` meant bytes or MiB, or `10` milliseconds or seconds, would be a
//!   guess (the options used to carry the unit in their name).

use std::fmt;
use std::time::Duration;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// The units a size may be written in, with their factors.
const SIZE_UNITS: [(&str, u64); 5] = [
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// The longest duration accepted anywhere: one year (a far-off deadline
/// still has to fit in the clock's arithmetic).
pub const LONGEST: Duration = Duration::from_secs(31_557_600);

/// Whether `text` is a number without a unit.
fn is_bare_number(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// Parses a duration such as `250ms`, `10s`, `5m` or `1h 30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if is_bare_number(text) {
        return Err(format!(
            "`{text}` has no unit: add one (ms, s, m, h), e.g. {text}s or {text}ms"
        ));
    }
    let duration = humantime::parse_duration(text).map_err(|error| error.to_string())?;
    if duration > LONGEST {
        return Err(format!("at most {} is accepted", format_duration(LONGEST)));
    }
    Ok(duration)
}

/// Parses a size such as `1000B`, `512KiB` or `64MiB` into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if is_bare_number(text) {
        return Err(format!(
            "`{text}` has no unit: add one (B, KiB, MiB, GiB), e.g. {text}KiB or {text}B"
        ));
    }
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let unit = text[number_end..].trim();
    if number_end == 0 {
        return Err(format!(
            "`{text}` is not a size: write a number and a unit, e.g. 64MiB"
        ));
    }
    if !SIZE_UNITS
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case(unit))
    {
        return Err(format!(
            "`{unit}` is not a size unit: use B, KiB, MiB, GiB or TiB (1 KiB = 1024 B)"
        ));
    }
    text.parse::<bytesize::ByteSize>()
        .map(|size| size.as_u64())
        .map_err(|why| format!("`{text}` is not a size: {why}"))
}

/// A duration as [`parse_duration`] reads it back, e.g. `10s`, `5m`, `1h 30m`.
pub fn format_duration(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// A size in the largest unit that writes it exactly, e.g. `64MiB`, `1536B`.
pub fn format_size(bytes: u64) -> String {
    let (name, factor) = SIZE_UNITS
        .iter()
        .rev()
        .find(|(_, factor)| bytes.is_multiple_of(*factor) && bytes >= *factor)
        .unwrap_or(&SIZE_UNITS[0]);
    format!("{}{name}", bytes / factor)
}

/// `bytes` rounded for a person to read (`12.4 MiB`, `640 KiB`, `512 B`),
/// where [`format_size`] is exact.
pub fn format_size_approx(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.0} KiB", b / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// Deserializes an optional duration written as a string with its unit
/// (for `#[serde(default, deserialize_with = ...)]`).
pub fn deserialize_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    deserializer
        .deserialize_any(WithUnit {
            parse: parse_duration,
            example: "\"10s\"",
        })
        .map(Some)
}

/// Deserializes an optional size written as a string with its unit (for
/// `#[serde(default, deserialize_with = ...)]`), in bytes.
pub fn deserialize_size<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    deserializer
        .deserialize_any(WithUnit {
            parse: parse_size,
            example: "\"64MiB\"",
        })
        .map(Some)
}

/// Reads a string with [`WithUnit::parse`]; a number gets the same "add a
/// unit" message it would get as a string.
struct WithUnit<T> {
    parse: fn(&str) -> Result<T, String>,
    example: &'static str,
}

impl<T> Visitor<'_> for WithUnit<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a string with a unit, e.g. {}", self.example)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        (self.parse)(text).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        self.visit_str(&n.to_string())
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        self.visit_str(&n.to_string())
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<T, E> {
        self.visit_str(&n.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximate_sizes_read_as_a_person_would_write_them() {
        assert_eq!(format_size_approx(512), "512 B");
        assert_eq!(format_size_approx(640 << 10), "640 KiB");
        assert_eq!(format_size_approx(13_002_342), "12.4 MiB");
    }

    #[test]
    fn durations_need_their_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bare in ["10", "0", "1.5"] {
            let error = parse_duration(bare).unwrap_err();
            assert!(error.contains("no unit: add one"), "{bare}: {error}");
        }
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(
            parse_duration("2years")
                .unwrap_err()
                .contains("at most 1year")
        );
    }

    #[test]
    fn sizes_need_a_binary_unit() {
        assert_eq!(parse_size("1000B"), Ok(1000));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64 mib"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        let error = parse_size("64").unwrap_err();
        assert!(error.contains("no unit: add one"), "{error}");
        for decimal in ["64MB", "64M", "1kB", "1k"] {
            let error = parse_size(decimal).unwrap_err();
            assert!(error.contains("use B, KiB, MiB"), "{decimal}: {error}");
        }
        for nonsense in ["", "MiB", "-1MiB", "1 parsec"] {
            assert!(parse_size(nonsense).is_err(), "{nonsense}");
        }
    }

    #[test]
    fn formatting_reads_back() {
        for bytes in [1, 1000, 1536, 1 << 10, 64 << 20, 3 << 30, 5 << 40] {
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
        }
        assert_eq!(format_size(64 << 20), "64MiB");
        assert_eq!(format_size(1536), "1536B");
        for duration in [Duration::from_millis(1), Duration::from_secs(5400), LONGEST] {
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
    }

    #[test]
    fn toml_values_use_the_same_rules() {
        #[derive(serde::Deserialize)]
        struct Limits {
            #[serde(default, deserialize_with = "deserialize_size")]
            memory: Option<u64>,
            #[serde(default, deserialize_with = "deserialize_duration")]
            timeout: Option<Duration>,
        }
        let limits: Limits = toml::from_str("memory = \"32MiB\"\ntimeout = \"2s\"\n").unwrap();
        assert_eq!(limits.memory, Some(32 << 20));
        assert_eq!(limits.timeout, Some(Duration::from_secs(2)));
        let absent: Limits = toml::from_str("").unwrap();
        assert_eq!((absent.memory, absent.timeout), (None, None));
        let bare = toml::from_str::<Limits>("memory = 32\n").err().unwrap();
        assert!(bare.message().contains("no unit: add one"), "{bare}");
        let bare = toml::from_str::<Limits>("timeout = 2000\n").err().unwrap();
        assert!(bare.message().contains("no unit: add one"), "{bare}");
    }
}
