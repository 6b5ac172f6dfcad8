//! Checks of the JSON texts a guest returns (schemas, structured content,
//! `_meta`): the registry checks what a component lists at load and the wire
//! checks every value again as it embeds it verbatim, both with these.
//!
//! Each text must be valid JSON and nest at most `--max-json-depth` arrays
//! and objects deep. The text is embedded verbatim, so the depth is what a
//! client's parser meets: parsers built on serde_json stop at 127 levels
//! (the reply around the value included) and Python's at about 1000, while
//! a text is parsed here without a depth limit of its own (`RawValue`
//! parsing does not recurse). [`MAX_DEPTH_CEILING`] keeps the deepest value
//! and the deepest reply that can carry it within serde_json's limit.

use serde_json::value::RawValue;

/// The default of `--max-json-depth`: arrays and objects nested 64 deep,
/// far more than any schema or `_meta` needs.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// The highest `--max-json-depth` may be set: a value this deep, embedded
/// in the deepest reply the wire makes (a sampling request's tool result's
/// embedded resource's `_meta`, 12 levels down), stays within the 127
/// levels serde_json parses.
pub const MAX_DEPTH_CEILING: usize = 100;

/// A guest value that cannot be put on the wire.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GuestValueError(pub String);

/// `text` as JSON nesting at most `max_depth` arrays and objects deep, or
/// an error naming `what` it was.
pub(crate) fn json_text<'a>(
    text: &'a str,
    what: &str,
    max_depth: usize,
) -> Result<&'a RawValue, GuestValueError> {
    let raw: &RawValue = serde_json::from_str(text)
        .map_err(|e| GuestValueError(format!("{what} is not valid JSON: {e}")))?;
    if nests_deeper_than(raw.get(), max_depth) {
        return Err(GuestValueError(format!(
            "{what} nests arrays and objects deeper than {max_depth} levels (--max-json-depth)"
        )));
    }
    Ok(raw)
}

/// [`json_text`] that must be a JSON object.
pub(crate) fn json_object<'a>(
    text: &'a str,
    what: &str,
    max_depth: usize,
) -> Result<&'a RawValue, GuestValueError> {
    let raw = json_text(text, what, max_depth)?;
    if raw.get().trim_start().starts_with('{') {
        Ok(raw)
    } else {
        Err(GuestValueError(format!("{what} must be a JSON object")))
    }
}

/// Checks a guest's `meta` text: it must be a JSON object within
/// `max_depth`.
pub(crate) fn check_meta(meta: &str, max_depth: usize) -> Result<&RawValue, GuestValueError> {
    json_object(meta, "_meta", max_depth)
}

/// Whether the valid JSON `json` opens more than `max_depth` arrays and
/// objects inside one another: one pass over its bytes, stopping at the
/// first level too deep. Brackets inside strings do not count.
fn nests_deeper_than(json: &str, max_depth: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in json.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return true;
                }
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object holding arrays, `depth` levels in all.
    fn nested(depth: usize) -> String {
        let inner = depth - 1;
        format!("{{\"n\":{}0{}}}", "[".repeat(inner), "]".repeat(inner))
    }

    #[test]
    fn depth_counts_arrays_and_objects_not_brackets_in_strings() {
        for (json, depth) in [
            ("1", 0),
            ("\"[[[{{{\"", 0),
            ("{}", 1),
            ("[[],[[]],{}]", 3),
            (r#"{"a":"\"[[","b":{"c":[1]}}"#, 3),
            (r#"["\\",["\\\"]"]]"#, 2),
            (&nested(64), 64),
        ] {
            assert!(!nests_deeper_than(json, depth), "{json} within {depth}");
            if depth > 0 {
                assert!(nests_deeper_than(json, depth - 1), "{json} over {depth}");
            }
        }
    }

    #[test]
    fn a_value_deeper_than_the_limit_is_refused_naming_it_and_the_option() {
        assert!(json_text(&nested(64), "structured content", 64).is_ok());
        let err = json_text(&nested(65), "structured content", 64).unwrap_err();
        assert_eq!(
            err.0,
            "structured content nests arrays and objects deeper than 64 levels (--max-json-depth)"
        );
        // Far past serde_json's own limit: still refused by depth, not
        // accepted because `RawValue` parsing has no limit.
        let deep = nested(100_000);
        assert!(serde_json::from_str::<&RawValue>(&deep).is_ok());
        let err = check_meta(&deep, DEFAULT_MAX_DEPTH).unwrap_err();
        assert!(err.0.starts_with("_meta nests"), "{}", err.0);
        assert!(json_object("[1]", "inputSchema", 64).is_err());
        assert!(
            json_text("{oops", "x", 64)
                .unwrap_err()
                .0
                .contains("not valid JSON")
        );
    }

    #[test]
    fn serde_json_parses_127_levels() {
        // serde_json parses 127 levels and refuses 128.
        let parses = |depth: usize| serde_json::from_str::<serde_json::Value>(&nested(depth));
        assert!(parses(127).is_ok());
        assert!(parses(128).is_err());
    }
}
