//! Parsers of option values that need more than a type: durations and
//! sizes within their ranges (see [`crate::units`] for how they are
//! written), intervals that may be `off`, and origins. Each runs when the
//! value is parsed, so a bad value stops `airlock` before anything loads.

use std::time::Duration;

use crate::units::{self, format_duration, format_size};

/// A duration of at least `min` (and at most [`units::LONGEST`]).
pub(super) fn duration(
    min: Duration,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    move |text| {
        let duration = units::parse_duration(text)?;
        if duration < min {
            return Err(format!("must be at least {}", format_duration(min)));
        }
        Ok(duration)
    }
}

/// A duration, or `off` (which, like `0s`, is [`Duration::ZERO`]).
pub(super) fn interval(text: &str) -> Result<Duration, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        return Ok(Duration::ZERO);
    }
    units::parse_duration(text).map_err(|why| format!("{why}; or `off`"))
}

/// A size in bytes between `min` and `max`.
pub(super) fn size(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let bytes = units::parse_size(text)?;
        if !(min..=max).contains(&bytes) {
            return Err(if max == u64::MAX {
                format!("must be at least {}", format_size(min))
            } else {
                format!(
                    "must be between {} and {}",
                    format_size(min),
                    format_size(max)
                )
            });
        }
        Ok(bytes)
    }
}

/// An exact origin as browsers send it: `scheme://host[:port]`, no path.
pub(super) fn origin(text: &str) -> Result<String, String> {
    let Some((scheme, authority)) = text.split_once("://") else {
        return Err("give a full origin with its scheme, e.g. https://app.example.com".to_owned());
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok || authority.is_empty() {
        return Err("give a full origin, e.g. https://app.example.com".to_owned());
    }
    if authority.contains(['/', '?', '#']) {
        return Err(
            "an origin has no path: scheme://host[:port], e.g. https://app.example.com".to_owned(),
        );
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_checked_against_their_floor() {
        let at_least_a_second = duration(Duration::from_secs(1));
        assert_eq!(at_least_a_second("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(
            at_least_a_second("500ms"),
            Err("must be at least 1s".to_owned())
        );
        assert!(at_least_a_second("10").unwrap_err().contains("no unit"));
    }

    #[test]
    fn intervals_may_be_off() {
        assert_eq!(interval("off"), Ok(Duration::ZERO));
        assert_eq!(interval("0s"), Ok(Duration::ZERO));
        assert_eq!(interval("500ms"), Ok(Duration::from_millis(500)));
        assert!(interval("500").unwrap_err().ends_with("or `off`"));
    }

    #[test]
    fn sizes_are_checked_against_their_range() {
        let fields = size(1 << 10, 16 << 20);
        assert_eq!(fields("64KiB"), Ok(64 << 10));
        assert_eq!(
            fields("17MiB"),
            Err("must be between 1KiB and 16MiB".to_owned())
        );
        assert_eq!(
            size(1 << 10, u64::MAX)("100B"),
            Err("must be at least 1KiB".to_owned())
        );
    }

    #[test]
    fn origins_need_a_scheme_and_no_path() {
        assert!(origin("https://app.example.com").is_ok());
        assert!(origin("http://localhost:3000").is_ok());
        for bad in [
            "app.example.com",
            "://app.example.com",
            "https://",
            "https://app.example.com/",
            "https://app.example.com/path",
            "1http://x",
        ] {
            assert!(origin(bad).is_err(), "{bad}");
        }
    }
}
