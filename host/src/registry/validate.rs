//! Checks on the tool descriptions a component returns from `list-tools`.
//!
//! These are served to clients verbatim, so anything a client or model would
//! choke on is refused at load time, naming the component file, rather than
//! discovered on a client.

use std::collections::HashSet;

use serde_json::Value;

use crate::runtime::wit;

/// Longest tool name allowed.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Whether `name` matches `^[A-Za-z0-9_.-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Checks every tool of one component; the error says what is wrong with
/// which tool.
pub fn validate_tools(tools: &[wit::Tool]) -> Result<(), String> {
    if tools.is_empty() {
        return Err("list-tools returned no tools".to_owned());
    }
    let mut seen = HashSet::new();
    for tool in tools {
        validate_tool(tool)?;
        if !seen.insert(tool.name.as_str()) {
            return Err(format!("list-tools returns tool `{}` twice", tool.name));
        }
    }
    Ok(())
}

fn validate_tool(tool: &wit::Tool) -> Result<(), String> {
    if !is_valid_tool_name(&tool.name) {
        return Err(format!(
            "tool name {} is invalid: use 1 to {MAX_TOOL_NAME_LEN} characters of A-Z a-z 0-9 _ . -",
            quote_untrusted(&tool.name)
        ));
    }
    let name = &tool.name;
    if tool.description.trim().is_empty() {
        return Err(format!("tool `{name}` has an empty description"));
    }
    match serde_json::from_str::<Value>(&tool.input_schema) {
        Err(err) => {
            return Err(format!(
                "tool `{name}`: input-schema is not valid JSON ({err})"
            ));
        }
        Ok(Value::Object(schema)) if schema.get("type") == Some(&Value::from("object")) => {}
        Ok(_) => {
            return Err(format!(
                "tool `{name}`: input-schema must be a JSON object with \"type\": \"object\""
            ));
        }
    }
    if let Some(output_schema) = &tool.output_schema {
        match serde_json::from_str::<Value>(output_schema) {
            Err(err) => {
                return Err(format!(
                    "tool `{name}`: output-schema is not valid JSON ({err})"
                ));
            }
            Ok(Value::Object(_)) => {}
            Ok(_) => return Err(format!("tool `{name}`: output-schema is not a JSON object")),
        }
    }
    Ok(())
}

/// A guest-supplied string, quoted and escaped, cut to a readable length.
fn quote_untrusted(s: &str) -> String {
    const MAX: usize = 80;
    let cut: String = s.chars().take(MAX).collect();
    if cut.len() < s.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> wit::Tool {
        wit::Tool {
            name: name.into(),
            title: None,
            description: "does things".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "sha256", "A-b_c.d", &"x".repeat(64)] {
            assert!(is_valid_tool_name(ok), "{ok}");
        }
        for bad in ["", "with space", "é", "a/b", &"x".repeat(65)] {
            assert!(!is_valid_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn accepts_good_tools() {
        let mut with_output = tool("b");
        with_output.output_schema = Some(r#"{"type":"object","properties":{}}"#.into());
        assert_eq!(validate_tools(&[tool("a"), with_output]), Ok(()));
    }

    #[test]
    fn rejects_bad_tools() {
        let cases: Vec<(wit::Tool, &str)> = vec![
            (tool("bad name"), "is invalid"),
            (
                wit::Tool {
                    description: "  ".into(),
                    ..tool("a")
                },
                "empty description",
            ),
            (
                wit::Tool {
                    input_schema: "{".into(),
                    ..tool("a")
                },
                "not valid JSON",
            ),
            (
                wit::Tool {
                    input_schema: r#"{"type":"string"}"#.into(),
                    ..tool("a")
                },
                "\"type\": \"object\"",
            ),
            (
                wit::Tool {
                    input_schema: "[]".into(),
                    ..tool("a")
                },
                "\"type\": \"object\"",
            ),
            (
                wit::Tool {
                    output_schema: Some("true".into()),
                    ..tool("a")
                },
                "output-schema is not a JSON object",
            ),
        ];
        for (tool, expected) in cases {
            let err = validate_tools(&[tool]).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
        let err = validate_tools(&[tool("a"), tool("a")]).unwrap_err();
        assert!(err.contains("twice"), "{err}");
        assert!(validate_tools(&[]).is_err());
    }
}
