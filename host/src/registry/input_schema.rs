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
//! megabytes of arguments would hold a thread for minutes. Linear is still
//! not cheap for every schema (a pattern whose automaton keeps many states
//! alive, `multipleOf` over many large numbers), so arguments heavier than
//! [`INLINE_CHECK_WEIGHT`] are checked off the threads that serve
//! requests, at most `--max-concurrent-checks` at once ([`HeavyChecks`]):
//! a costly check delays its own call, not the calls of others.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::Semaphore;

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

/// Arguments heavier than this ([`heavier_than`]) are checked off the
/// threads that serve requests: 16 KiB, more than most calls carry, so
/// that they never pay for the move.
pub const INLINE_CHECK_WEIGHT: usize = 16 << 10;

/// What one value other than a string weighs, besides what it holds.
const VALUE_WEIGHT: usize = 8;

/// Whether `arguments` weigh more than `limit`: the bytes of their strings
/// and keys, and [`VALUE_WEIGHT`] for every value. Stops as soon as they
/// do, so a light call pays only for what it holds.
fn heavier_than(arguments: &Value, limit: usize) -> bool {
    fn spend(value: &Value, left: &mut usize) -> bool {
        let weight = match value {
            Value::String(text) => text.len(),
            _ => VALUE_WEIGHT,
        };
        let Some(rest) = left.checked_sub(weight) else {
            return true;
        };
        *left = rest;
        match value {
            Value::Array(items) => items.iter().any(|item| spend(item, left)),
            Value::Object(members) => members.iter().any(|(key, value)| {
                match left.checked_sub(key.len()) {
                    Some(rest) => *left = rest,
                    None => return true,
                }
                spend(value, left)
            }),
            _ => false,
        }
    }
    let mut left = limit;
    spend(arguments, &mut left)
}

/// Where the checks of heavy arguments run (`--max-concurrent-checks`):
/// each on a thread of its own, not on a thread that serves requests
/// (whose other requests move to another thread meanwhile), and at most
/// so many at once; the others wait for their turn without holding a
/// thread that serves requests. Light arguments are checked in place.
#[derive(Debug, Clone)]
pub struct HeavyChecks {
    concurrent: usize,
    turns: Arc<Semaphore>,
}

impl HeavyChecks {
    /// At most `concurrent` heavy checks at once (at least one).
    pub fn new(concurrent: usize) -> Self {
        let concurrent = concurrent.max(1);
        HeavyChecks {
            concurrent,
            turns: Arc::new(Semaphore::new(concurrent)),
        }
    }

    /// Most heavy checks at once.
    pub fn concurrent(&self) -> usize {
        self.concurrent
    }

    /// Runs `check` of `arguments`: in place when they are light, or
    /// outside Tokio's multi-threaded runtime (which `airlock serve` runs
    /// on); otherwise on this thread, after handing its other work to
    /// another and waiting for a turn.
    pub fn run<T>(&self, arguments: &Value, check: impl FnOnce() -> T) -> T {
        let runtime = Handle::try_current()
            .ok()
            .filter(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread);
        let Some(runtime) = runtime.filter(|_| heavier_than(arguments, INLINE_CHECK_WEIGHT)) else {
            return check();
        };
        tokio::task::block_in_place(|| {
            // Never closed, so a turn always comes.
            let _turn = runtime.block_on(self.turns.acquire());
            check()
        })
    }
}

impl Default for HeavyChecks {
    /// One heavy check at a time.
    fn default() -> Self {
        HeavyChecks::new(1)
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
    fn weight_counts_strings_keys_and_other_values() {
        assert!(!heavier_than(&json!({}), VALUE_WEIGHT));
        assert!(heavier_than(&json!({}), VALUE_WEIGHT - 1));
        // The object, then its key, then its string.
        let text = json!({"key": "0123456789"});
        assert!(!heavier_than(&text, VALUE_WEIGHT + 3 + 10));
        assert!(heavier_than(&text, VALUE_WEIGHT + 3 + 9));
        let numbers = json!([1, 2, 3]);
        assert!(!heavier_than(&numbers, 4 * VALUE_WEIGHT));
        assert!(heavier_than(&numbers, 4 * VALUE_WEIGHT - 1));
        let long_key = json!({ "k".repeat(INLINE_CHECK_WEIGHT): null });
        assert!(heavier_than(&long_key, INLINE_CHECK_WEIGHT));
        let deep = json!([[[["x".repeat(INLINE_CHECK_WEIGHT)]]]]);
        assert!(heavier_than(&deep, INLINE_CHECK_WEIGHT));
        assert!(!heavier_than(
            &json!({"room": "Blue", "minutes": 30}),
            INLINE_CHECK_WEIGHT
        ));
    }

    /// Heavy arguments, past [`INLINE_CHECK_WEIGHT`].
    fn heavy() -> Value {
        json!({"text": "x".repeat(INLINE_CHECK_WEIGHT + 1)})
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_heavy_check_leaves_the_thread_serving_requests_free() {
        // The check waits for a task spawned on the runtime's only worker
        // thread: it can run only if the check has handed that thread's
        // work to another.
        let checks = HeavyChecks::default();
        let checked = tokio::spawn(async move {
            checks.run(&heavy(), || {
                let (done, ran) = std::sync::mpsc::channel();
                tokio::spawn(async move { done.send(()) });
                ran.recv_timeout(std::time::Duration::from_secs(30)).is_ok()
            })
        });
        assert!(checked.await.unwrap(), "the spawned task never ran");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heavy_checks_take_turns() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let checks = HeavyChecks::new(1);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let (checks, running, most) = (checks.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    checks.run(&heavy(), || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    });
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
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
