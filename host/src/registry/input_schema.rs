//! A tool's input schema compiled into a validator, once per version of its
//! component (when it is loaded or listed again), and the check of a call's
//! arguments against it before the tool runs.
//!
//! Schemas are JSON Schema 2020-12, the draft MCP names; a schema whose
//! `$schema` names another draft the validator knows (4, 6, 7, 2019-09) is
//! read as that draft. Nothing is ever fetched: a `$ref` to a document
//! outside the schema (another URL, a file) makes the schema fail to
//! compile, and so does a `$schema` naming a meta-schema the validator does
//! not bundle; either way the component is refused at load, as for any
//! other listing that cannot be served. `format` is checked as each draft
//! says: an annotation only in 2019-09 and 2020-12, an assertion before.
//!
//! # What a check costs
//!
//! The arguments are the client's, so the cost of checking them must not
//! be theirs to choose. `pattern` and `patternProperties` are matched by
//! the `regex` crate, whose time grows linearly with the text: a pattern
//! that needs a backtracking engine (lookahead, lookbehind,
//! backreferences) makes its schema fail to compile, and its component is
//! refused at load. A backtracking engine's time can grow faster than the
//! text even when its backtracks are limited, since one step of a
//! lookahead or a backreference can scan the rest of the text: a few
//! megabytes of arguments would hold a thread for minutes.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::runtime::events::truncate;

/// How much one refusal says of the violations it found
/// (`--max-named-violations`, `--max-violation-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViolationLimits {
    /// Most violations named.
    pub named: usize,
    /// Most bytes of them, in all.
    pub bytes: usize,
}

impl Default for ViolationLimits {
    fn default() -> Self {
        ViolationLimits {
            named: 5,
            bytes: 1024,
        }
    }
}

/// Why a schema with a pattern the `regex` crate cannot compile is refused.
const LINEAR_PATTERNS: &str =
    "patterns are matched in linear time: no lookahead, lookbehind or backreferences";

/// A tool's input schema, compiled.
pub struct InputSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputSchema").finish_non_exhaustive()
    }
}

impl InputSchema {
    /// Compiles `schema` (the text a component listed, already checked to
    /// be a JSON object), without fetching anything. The error says why it
    /// is not a usable JSON Schema.
    pub fn compile(schema: &str) -> Result<InputSchema, String> {
        let schema: Value = serde_json::from_str(schema).map_err(|err| err.to_string())?;
        let validator = jsonschema::options()
            .offline()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(&schema)
            .map_err(|err| match err.kind() {
                jsonschema::error::ValidationErrorKind::Format { format } if format == "regex" => {
                    format!("{err} ({LINEAR_PATTERNS})")
                }
                _ => err.to_string(),
            })?;
        Ok(InputSchema { validator })
    }

    /// Checks a call's arguments (`null` for none: the tool gets `{}`).
    /// The error names the first violations, each as its place in the
    /// arguments (a JSON Pointer; `(root)` for the object itself) and what
    /// is wrong there, within `limits`. The values given are not repeated
    /// back.
    pub fn check(&self, arguments: &Value, limits: &ViolationLimits) -> Result<(), String> {
        let none;
        let arguments = match arguments {
            Value::Null => {
                none = Value::Object(Map::new());
                &none
            }
            given => given,
        };
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let mut report = String::new();
        let mut errors = self.validator.iter_errors(arguments);
        for error in errors.by_ref().take(limits.named) {
            if !report.is_empty() {
                report.push_str("; ");
            }
            let path = error.instance_path().as_str();
            let path = if path.is_empty() { "(root)" } else { path };
            let _ = write!(report, "{path}: {}", error.masked_with("the value"));
            if report.len() >= limits.bytes {
                break;
            }
        }
        if errors.next().is_some() {
            report.push_str("; and more");
        }
        Err(truncate(report, limits.bytes))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn compiled(schema: Value) -> InputSchema {
        InputSchema::compile(&schema.to_string()).unwrap()
    }

    fn booking() -> InputSchema {
        compiled(json!({
            "type": "object",
            "properties": {
                "room": {"type": "string"},
                "minutes": {"type": "integer", "minimum": 1, "maximum": 240}
            },
            "required": ["room", "minutes"],
            "additionalProperties": false
        }))
    }

    #[test]
    fn matching_arguments_pass() {
        assert_eq!(
            booking().check(
                &json!({"room": "Blue", "minutes": 30}),
                &ViolationLimits::default()
            ),
            Ok(())
        );
        let anything = compiled(json!({"type": "object"}));
        assert_eq!(
            anything.check(&Value::Null, &ViolationLimits::default()),
            Ok(())
        );
        assert_eq!(
            anything.check(&json!({"x": [1, 2]}), &ViolationLimits::default()),
            Ok(())
        );
    }

    #[test]
    fn each_kind_of_violation_is_named_with_its_place() {
        let cases = [
            (
                json!({"room": "Blue"}),
                r#"(root): "minutes" is a required property"#,
            ),
            (
                json!({"room": 7, "minutes": 30}),
                r#"/room: the value is not of type "string""#,
            ),
            (
                json!({"room": "Blue", "minutes": 0}),
                "/minutes: the value is less than the minimum of 1",
            ),
            (
                json!({"room": "Blue", "minutes": 30, "floor": 2}),
                "(root): Additional properties are not allowed ('floor' was unexpected)",
            ),
        ];
        for (arguments, expected) in cases {
            assert_eq!(
                booking().check(&arguments, &ViolationLimits::default()),
                Err(expected.to_owned())
            );
        }
        // No arguments are checked as `{}`.
        let report = booking()
            .check(&Value::Null, &ViolationLimits::default())
            .unwrap_err();
        assert!(
            report.contains(r#""room" is a required property"#)
                && report.contains(r#""minutes" is a required property"#),
            "{report}"
        );
    }

    #[test]
    fn the_values_given_are_not_repeated_back() {
        let secret = "s3cr3t-value";
        let report = booking()
            .check(
                &json!({"room": "Blue", "minutes": secret}),
                &ViolationLimits::default(),
            )
            .unwrap_err();
        assert!(!report.contains(secret), "{report}");
    }

    #[test]
    fn a_report_is_bounded_in_violations_and_bytes() {
        let many = compiled(json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}}
        }));
        let report = many
            .check(
                &json!({"items": [1, 2, 3, 4, 5, 6, 7]}),
                &ViolationLimits::default(),
            )
            .unwrap_err();
        assert_eq!(
            report.matches("is not of type").count(),
            ViolationLimits::default().named
        );
        assert!(
            report.starts_with("/items/0: ") && report.ends_with("; and more"),
            "{report}"
        );
        let long_key = "k".repeat(4 * ViolationLimits::default().bytes);
        let closed = compiled(json!({
            "type": "object",
            "properties": {"a": {}},
            "additionalProperties": false
        }));
        let report = closed
            .check(&json!({ long_key: 1 }), &ViolationLimits::default())
            .unwrap_err();
        assert!(
            report.len() <= ViolationLimits::default().bytes,
            "{}",
            report.len()
        );
        assert!(
            report.starts_with("(root): Additional properties"),
            "{report}"
        );
    }

    #[test]
    fn lower_limits_name_fewer_violations_in_fewer_bytes() {
        let many = compiled(json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}}
        }));
        let arguments = json!({"items": [1, 2, 3, 4, 5, 6, 7]});
        let two = ViolationLimits {
            named: 2,
            bytes: 1024,
        };
        let report = many.check(&arguments, &two).unwrap_err();
        assert_eq!(report.matches("is not of type").count(), 2, "{report}");
        assert!(report.ends_with("; and more"), "{report}");
        let short = ViolationLimits {
            named: 5,
            bytes: 40,
        };
        let report = many.check(&arguments, &short).unwrap_err();
        assert!(report.len() <= 40, "{report}");
        assert!(report.starts_with("/items/0: "), "{report}");
    }

    #[test]
    fn drafts_follow_dollar_schema() {
        // 2020-12 without `$schema`: `prefixItems` applies.
        let tuple = json!({
            "type": "object",
            "properties": {"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}}
        });
        let report = compiled(tuple.clone())
            .check(&json!({"pair": ["a", "b"]}), &ViolationLimits::default())
            .unwrap_err();
        assert!(report.starts_with("/pair/1: "), "{report}");
        // Draft 7 has no `prefixItems`; its `exclusiveMaximum` is a number.
        let mut draft7 = tuple;
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        draft7["properties"]["n"] = json!({"exclusiveMaximum": 3});
        let draft7 = compiled(draft7);
        assert_eq!(
            draft7.check(&json!({"pair": ["a", "b"]}), &ViolationLimits::default()),
            Ok(())
        );
        assert!(
            draft7
                .check(&json!({"n": 3}), &ViolationLimits::default())
                .is_err()
        );
        // Draft 4's `exclusiveMaximum` is a boolean beside `maximum`.
        let draft4 = compiled(json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"maximum": 3, "exclusiveMaximum": true}}
        }));
        assert!(
            draft4
                .check(&json!({"n": 3}), &ViolationLimits::default())
                .is_err()
        );
        assert_eq!(
            draft4.check(&json!({"n": 2}), &ViolationLimits::default()),
            Ok(())
        );
    }

    #[test]
    fn local_references_resolve() {
        let schema = compiled(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "required": ["city"]}},
            "properties": {"home": {"$ref": "#/$defs/address"}}
        }));
        assert_eq!(
            schema.check(
                &json!({"home": {"city": "Oslo"}}),
                &ViolationLimits::default()
            ),
            Ok(())
        );
        let report = schema
            .check(&json!({"home": {}}), &ViolationLimits::default())
            .unwrap_err();
        assert!(report.starts_with("/home: "), "{report}");
    }

    fn with_pattern(pattern: &str) -> Result<InputSchema, String> {
        InputSchema::compile(
            &json!({"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}})
                .to_string(),
        )
    }

    #[test]
    fn patterns_are_matched_as_ecma_262_says() {
        let digits = with_pattern(r"^\d{2,4}$").unwrap();
        let limits = ViolationLimits::default();
        assert_eq!(digits.check(&json!({"a": "2024"}), &limits), Ok(()));
        let report = digits.check(&json!({"a": "20x4"}), &limits).unwrap_err();
        assert!(report.starts_with("/a: "), "{report}");
        // Unanchored: anywhere in the text.
        let tagged = with_pattern("t[0-9]+").unwrap();
        assert_eq!(tagged.check(&json!({"a": "see t42 here"}), &limits), Ok(()));
        assert!(tagged.check(&json!({"a": "nothing"}), &limits).is_err());
        let keyed = compiled(json!({
            "type": "object",
            "patternProperties": {"^x-": {"type": "integer"}},
            "additionalProperties": false
        }));
        assert_eq!(keyed.check(&json!({"x-a": 1}), &limits), Ok(()));
        assert!(keyed.check(&json!({"y": 1}), &limits).is_err());
    }

    #[test]
    fn patterns_that_need_backtracking_are_refused() {
        // Each needs a backtracking engine, under which the second takes
        // time that grows with the square of the text.
        for pattern in [r"(\w+)\s\1", r"(?=(\w+))\1x", r"(?<=a)b", r"^(?!admin).*$"] {
            let why = with_pattern(pattern)
                .err()
                .unwrap_or_else(|| panic!("{pattern}"));
            assert!(
                why.contains(&json!(pattern).to_string())
                    && why.contains("no lookahead, lookbehind or backreferences"),
                "{why}"
            );
        }
        // The same refusal for a key pattern.
        let keyed = json!({"type": "object", "patternProperties": {"(a)\\1": {}}});
        assert!(InputSchema::compile(&keyed.to_string()).is_err());
    }

    #[test]
    fn nothing_is_fetched_and_unusable_schemas_are_refused() {
        let cases = [
            // A document elsewhere: never fetched.
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}),
            // A meta-schema the validator does not bundle.
            json!({"$schema": "https://example.com/my-meta", "type": "object"}),
            // Not a JSON Schema.
            json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}),
            json!({"type": "object", "properties": {"a": {"minimum": "one"}}}),
            json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
        ];
        for schema in cases {
            let err = InputSchema::compile(&schema.to_string()).unwrap_err();
            assert!(!err.is_empty(), "{schema}");
        }
    }
}
