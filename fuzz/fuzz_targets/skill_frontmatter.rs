//! Fuzz target: the YAML frontmatter of a skill's `SKILL.md`, from untrusted
//! bytes (a skills directory's file, or the text a component serves).
//!
//! The input is the text of a `SKILL.md` (invalid UTF-8 replaced), read with
//! small limits so the fuzzer reaches them. Nothing may panic or hang, and a
//! frontmatter that is read:
//!
//! - nests no deeper than the depth limit;
//! - is a JSON object that encodes and parses back to itself.

#![no_main]

use airlock::registry::frontmatter::{self, FrontmatterLimits};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Small limits, so the fuzzer passes them.
const LIMITS: FrontmatterLimits = FrontmatterLimits {
    max_depth: 8,
    max_bytes: 4096,
};

/// The depth of the deepest array or object in `value`.
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Most inputs should reach the parser: add the opening line when it is
    // missing.
    let text = if text.starts_with("---\n") {
        text.into_owned()
    } else {
        format!("---\n{text}\n---\n")
    };
    if let Ok(map) = frontmatter::parse(&text, LIMITS) {
        let value = Value::Object(map);
        let depth = depth_of(&value);
        assert!(depth <= LIMITS.max_depth, "{depth} deep: {value}");
        let encoded = serde_json::to_string(&value).expect("a frontmatter encodes");
        let decoded: Value = serde_json::from_str(&encoded).expect("and parses back");
        assert_eq!(decoded, value);
    }
});
