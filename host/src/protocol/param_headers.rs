//! `x-mcp-header`: tool arguments mirrored into `Mcp-Param-{Name}` headers.
//!
//! A tool's input schema may mark a primitive property with
//! `"x-mcp-header": "Region"`; an HTTP client then sends the argument's value
//! as `Mcp-Param-Region` so that intermediaries can route on it. Airlock reads
//! the annotations once per tool at start and, on every HTTP `tools/call`,
//! requires each present, non-null annotated argument to be mirrored exactly
//! (400, -32020 otherwise).

use serde_json::Value;

use super::envelope::decode_header_value;
use super::jsonrpc::RpcError;

/// One annotated property of a tool's input schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamHeader {
    /// The `{Name}` of `Mcp-Param-{Name}`.
    pub name: String,
    /// Property names from the schema root to the annotated property.
    pub path: Vec<String>,
}

/// Reads the `x-mcp-header` annotations of an input schema. Annotations are
/// only honoured on properties reachable through `properties` alone, on
/// `string`, `integer` or `boolean` properties, with names that are RFC 9110
/// tokens, unique ignoring case; anything else is an error naming the property.
pub fn annotations(input_schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut found)?;
    for (i, header) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(&header.name))
        {
            return Err(format!("x-mcp-header \"{}\" is used twice", header.name));
        }
    }
    Ok(found)
}

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (property, schema) in properties {
        path.push(property.clone());
        if let Some(annotation) = schema.get("x-mcp-header") {
            let at = path.join(".");
            let name = annotation.as_str().filter(|n| is_token(n)).ok_or_else(|| {
                format!("x-mcp-header of property {at} must be a non-empty header token")
            })?;
            if !matches!(
                schema.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            ) {
                return Err(format!(
                    "x-mcp-header of property {at} needs type string, integer or boolean"
                ));
            }
            found.push(ParamHeader {
                name: name.to_owned(),
                path: path.clone(),
            });
        }
        collect(schema, path, found)?;
        path.pop();
    }
    Ok(())
}

/// Checks that every annotated argument that is present and not null is
/// mirrored by its header. `header` looks a header up by name.
pub fn check<'h>(
    annotated: &[ParamHeader],
    arguments: &Value,
    header: impl Fn(&str) -> Option<&'h str>,
) -> Result<(), RpcError> {
    for param in annotated {
        let value = param
            .path
            .iter()
            .try_fold(arguments, |value, key| value.get(key));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let header_name = format!("Mcp-Param-{}", param.name);
        let raw = header(&header_name)
            .ok_or_else(|| RpcError::header_mismatch(format!("Missing {header_name} header")))?;
        let decoded = decode_header_value(raw)?;
        let matches = match value {
            Value::String(text) => decoded == text.as_str(),
            Value::Bool(flag) => decoded == if *flag { "true" } else { "false" },
            Value::Number(number) => decoded.parse::<f64>().ok() == number.as_f64(),
            _ => true,
        };
        if !matches {
            return Err(RpcError::header_mismatch(format!(
                "Header mismatch: {header_name} header '{raw}' does not match argument {}",
                param.path.join(".")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_annotations_through_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "options": {"type": "object", "properties": {"dryRun": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}},
        }});
        let found = annotations(&schema).unwrap();
        assert_eq!(
            found,
            vec![
                ParamHeader {
                    name: "Dry-Run".into(),
                    path: vec!["options".into(), "dryRun".into()]
                },
                ParamHeader {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
            ]
        );
    }

    #[test]
    fn refuses_invalid_annotations() {
        for bad in [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
        ] {
            assert!(annotations(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checks_mirrored_values() {
        let annotated = annotations(&json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
        }}))
        .unwrap();
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| *v)
            }
        };
        let args = json!({"region": "Hello", "count": 42});
        assert!(
            check(
                &annotated,
                &args,
                with(&[("Mcp-Param-Region", "Hello"), ("Mcp-Param-Count", "42.0")])
            )
            .is_ok()
        );
        assert!(
            check(
                &annotated,
                &args,
                with(&[
                    ("Mcp-Param-Region", "=?base64?SGVsbG8=?="),
                    ("Mcp-Param-Count", "42")
                ])
            )
            .is_ok()
        );
        assert!(
            check(
                &annotated,
                &args,
                with(&[
                    ("Mcp-Param-Region", "=?base64?SGVsbG8?="),
                    ("Mcp-Param-Count", "42")
                ])
            )
            .is_err()
        );
        assert!(check(&annotated, &args, with(&[("Mcp-Param-Count", "42")])).is_err());
        assert!(
            check(
                &annotated,
                &args,
                with(&[("Mcp-Param-Region", "Hello"), ("Mcp-Param-Count", "43")])
            )
            .is_err()
        );
        assert!(check(&annotated, &json!({"region": null}), with(&[])).is_ok());
    }
}
