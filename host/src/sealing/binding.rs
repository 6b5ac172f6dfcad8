//! What a token is bound to: the caller and the request, with the request's
//! arguments reduced to a digest of their canonical JSON form.

use ring::digest::{Context, SHA256};
use serde_json::Value;

/// The caller and request a `requestState` token belongs to.
///
/// A token opens only with a binding equal in every field to the one it was
/// sealed with, so state cannot be replayed by another principal, on another
/// method or target, or with other arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The caller's principal, in its source's namespace (`token:<name>`,
    /// `jwt:<iss>#<sub>`, `anonymous`, `stdio`; see `crate::auth`).
    pub principal: &'a str,
    /// The JSON-RPC method: `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'a str,
    /// The tool name, prompt name or resource URI.
    pub target: &'a str,
    /// [`digest_arguments`] of the request's arguments.
    pub arguments_digest: [u8; 32],
}

impl<'a> Binding<'a> {
    /// A binding whose digest is [`digest_arguments`]`(arguments)`.
    pub fn new(principal: &'a str, method: &'a str, target: &'a str, arguments: &Value) -> Self {
        Binding {
            principal,
            method,
            target,
            arguments_digest: digest_arguments(arguments),
        }
    }
}

/// SHA-256 of the canonical JSON form of `arguments`.
///
/// The canonical form has object members sorted by key (byte order of their
/// UTF-8, at every depth), no whitespace, strings escaped minimally (`"`,
/// `\`, and control characters; everything else as raw UTF-8) and numbers as
/// serde_json prints them. The same arguments in another member order or
/// spacing therefore give the same digest; `1` and `1.0` are different
/// arguments. Key order is sorted here explicitly, so the result does not
/// depend on serde_json's `preserve_order` feature.
///
/// Absent arguments are the empty object: the caller passes `{}` when the
/// request has none. `null` is treated the same way, so `{}`, `null` and a
/// missing `arguments` all give one digest.
pub fn digest_arguments(arguments: &Value) -> [u8; 32] {
    let mut ctx = Context::new(&SHA256);
    ctx.update(&canonical_arguments(arguments));
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// The canonical JSON form of `arguments` that [`digest_arguments`]
/// digests (`null` as `{}`).
pub fn canonical_arguments(arguments: &Value) -> Vec<u8> {
    match arguments {
        Value::Null => b"{}".to_vec(),
        other => canonical_json(other),
    }
}

/// The canonical JSON form of `value` (see [`digest_arguments`]): the same
/// value always gives the same bytes.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

/// Appends the canonical JSON form of `value` to `out`.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

/// Appends `s` as a JSON string with minimal escaping.
fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Compares two byte strings in time that depends only on their lengths.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(v: &Value) -> String {
        let mut out = Vec::new();
        write_canonical(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn canonical_form_is_sorted_and_compact() {
        let v: Value = serde_json::from_str(
            r#" { "b" : [ 1 , 2.5 , { "z" : null , "a" : true } ] ,
                  "a" : "x\"\\\n\u0001é\u2028" , "A": -3, "": false } "#,
        )
        .unwrap();
        assert_eq!(
            canonical(&v),
            "{\"\":false,\"A\":-3,\"a\":\"x\\\"\\\\\\n\\u0001é\u{2028}\",\"b\":[1,2.5,{\"a\":true,\"z\":null}]}"
        );
    }

    #[test]
    fn digest_ignores_member_order_and_spacing() {
        let a: Value =
            serde_json::from_str(r#"{"location":"New York","opts":{"unit":"F","days":3}}"#)
                .unwrap();
        let b: Value = serde_json::from_str(
            "{\n  \"opts\" : { \"days\" : 3,\n \"unit\" : \"F\" },\n  \"location\" : \"New York\"\n}",
        )
        .unwrap();
        assert_eq!(digest_arguments(&a), digest_arguments(&b));
        // Built in a different insertion order, too.
        let mut m = serde_json::Map::new();
        m.insert("opts".into(), json!({"unit": "F", "days": 3}));
        m.insert("location".into(), json!("New York"));
        assert_eq!(digest_arguments(&Value::Object(m)), digest_arguments(&a));
    }

    #[test]
    fn digest_sees_every_difference() {
        let base = json!({"a": 1, "b": ["x", "y"]});
        let others = [
            json!({"a": 2, "b": ["x", "y"]}),
            json!({"a": 1.0, "b": ["x", "y"]}),
            json!({"a": "1", "b": ["x", "y"]}),
            json!({"a": 1, "b": ["y", "x"]}),
            json!({"a": 1, "b": ["x", "y"], "c": null}),
            json!({"a": 1, "B": ["x", "y"]}),
            json!({"a": 1}),
            json!([1, ["x", "y"]]),
        ];
        let d = digest_arguments(&base);
        for other in &others {
            assert_ne!(digest_arguments(other), d, "{other}");
        }
        // Strings that would collide under sloppy escaping.
        assert_ne!(
            digest_arguments(&json!({"a": "x\",\"b\":\"y"})),
            digest_arguments(&json!({"a": "x", "b": "y"}))
        );
    }

    #[test]
    fn null_and_empty_object_are_the_same_arguments() {
        assert_eq!(digest_arguments(&Value::Null), digest_arguments(&json!({})));
        let expected = ring::digest::digest(&SHA256, b"{}");
        assert_eq!(&digest_arguments(&json!({}))[..], expected.as_ref());
        assert_ne!(digest_arguments(&json!({})), digest_arguments(&json!([])));
    }

    #[test]
    fn binding_new_uses_the_digest() {
        let args = json!({"q": 1});
        let b = Binding::new("p", "tools/call", "t", &args);
        assert_eq!(b.arguments_digest, digest_arguments(&args));
        assert_eq!((b.principal, b.method, b.target), ("p", "tools/call", "t"));
    }

    #[test]
    fn ct_eq_compares_exactly() {
        assert!(ct_eq(b"", b""));
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(!ct_eq(&[0x80], &[0x00]));
    }
}
