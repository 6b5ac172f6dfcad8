//! A rate as people write it, `50/s`, `600/min`, `5/10s`: so many requests
//! per period; and a [`RateLimit`], a rate with the burst a bucket holds.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use governor::Quota;
use serde::{Deserialize, Deserializer};

use crate::units::{self, format_duration};

/// `count` requests per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    count: NonZeroU32,
    period: Duration,
}

/// A rate, and how many requests may come at once after a quiet time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// The sustained rate: one more request is allowed every
    /// `period / count`.
    pub rate: Rate,
    /// The most requests allowed at once (the bucket's size).
    pub burst: NonZeroU32,
}

/// What a rate that cannot be read is told.
const EXAMPLES: &str = "write requests per period, e.g. 50/s, 600/min or 5/10s";

impl FromStr for Rate {
    type Err = String;

    /// `COUNT/PERIOD`, where the period is a duration with its unit, or a
    /// bare unit meaning one of it (`s`, `min`, `h`).
    fn from_str(text: &str) -> Result<Rate, String> {
        let text = text.trim();
        let Some((count, period)) = text.split_once('/') else {
            return Err(format!("`{text}` is not a rate: {EXAMPLES}"));
        };
        let count = count.trim().parse::<NonZeroU32>().map_err(|_| {
            format!("`{text}`: the count must be a whole number from 1; {EXAMPLES}")
        })?;
        let period = period.trim();
        let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
            units::parse_duration(period)
        } else {
            units::parse_duration(&format!("1{period}"))
        }
        .map_err(|why| format!("`{text}`: the period is not a duration ({why}); {EXAMPLES}"))?;
        if period.as_nanos() < u128::from(count.get()) {
            return Err(format!(
                "`{text}`: more than one request per nanosecond cannot be measured"
            ));
        }
        Ok(Rate { count, period })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let period = match self.period.as_secs() {
            1 if self.period.subsec_nanos() == 0 => "s".to_owned(),
            60 if self.period.subsec_nanos() == 0 => "min".to_owned(),
            3600 if self.period.subsec_nanos() == 0 => "h".to_owned(),
            _ => format_duration(self.period),
        };
        write!(f, "{}/{period}", self.count)
    }
}

impl RateLimit {
    /// `rate` with a bucket of `burst` requests; without one, of one
    /// period's worth.
    pub fn new(rate: Rate, burst: Option<NonZeroU32>) -> RateLimit {
        RateLimit {
            rate,
            burst: burst.unwrap_or(rate.count),
        }
    }

    /// The same limit as governor's quota: a request replenished every
    /// `period / count`, at most `burst` at once.
    pub(super) fn quota(&self) -> Quota {
        let every = self.rate.period / self.rate.count.get();
        Quota::with_period(every)
            .expect("a rate is at most one request per nanosecond")
            .allow_burst(self.burst)
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (burst {})", self.rate, self.burst)
    }
}

/// Deserializes an optional rate written as a string, such as `"5/s"` (for
/// `#[serde(default, deserialize_with = ...)]` in manifests).
pub fn deserialize_rate<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Rate>, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(text: &str) -> Rate {
        text.parse().unwrap()
    }

    #[test]
    fn rates_are_a_count_per_period() {
        for (text, count, period) in [
            ("50/s", 50, Duration::from_secs(1)),
            ("600/min", 600, Duration::from_secs(60)),
            ("600/m", 600, Duration::from_secs(60)),
            ("1/h", 1, Duration::from_secs(3600)),
            (" 5 / 10s ", 5, Duration::from_secs(10)),
            ("3/250ms", 3, Duration::from_millis(250)),
        ] {
            let parsed = rate(text);
            assert_eq!(
                (parsed.count.get(), parsed.period),
                (count, period),
                "{text}"
            );
        }
    }

    #[test]
    fn rates_read_back_as_written() {
        for text in ["50/s", "600/min", "1/h", "5/10s", "3/250ms"] {
            assert_eq!(rate(text).to_string(), text);
            assert_eq!(rate(&rate(text).to_string()), rate(text));
        }
        assert_eq!(rate("7/1m").to_string(), "7/min");
    }

    #[test]
    fn bad_rates_say_how_to_write_one() {
        for (text, expected) in [
            ("50", "is not a rate"),
            ("0/s", "whole number from 1"),
            ("-1/s", "whole number from 1"),
            ("x/s", "whole number from 1"),
            ("5/fortnight", "the period is not a duration"),
            ("5/10", "the period is not a duration"),
            ("2000000000/1s", "per nanosecond"),
        ] {
            let error = text.parse::<Rate>().unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn the_burst_defaults_to_one_period() {
        let limit = RateLimit::new(rate("600/min"), None);
        assert_eq!(limit.burst.get(), 600);
        assert_eq!(
            limit.quota().replenish_interval(),
            Duration::from_millis(100)
        );
        assert_eq!(limit.quota().burst_size().get(), 600);
        let limit = RateLimit::new(rate("2/s"), NonZeroU32::new(5));
        assert_eq!(limit.quota().burst_size().get(), 5);
        assert_eq!(limit.to_string(), "2/s (burst 5)");
    }
}
