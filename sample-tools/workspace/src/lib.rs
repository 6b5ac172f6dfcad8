//! `list_roots`: a tool that asks the client which roots it exposes.
//!
//! Round 1 asks for the client's roots (key `roots`). Round 2 lists them as
//! text, one per line, and as structured content. See README.md.

use airlock_guest::{Call, CallResult, InputRequired, Outcome, Root, Tool, Tools, json};
use serde::Serialize;

struct Workspace;

impl Tools for Workspace {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "list_roots",
                "Lists the roots (directories and files) the client exposes.",
            )
            .title("List roots")
            .input_schema(json!({
                "type": "object",
                "properties": {},
                "required": []
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "roots": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "uri": { "type": "string" },
                                "name": { "type": "string" }
                            },
                            "required": ["uri"]
                        }
                    }
                },
                "required": ["roots"]
            }))
            .read_only(),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "list_roots" => list_roots(&call),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(Workspace);

/// The structured content: the roots as the client gave them.
#[derive(Serialize)]
struct Listing<'a> {
    roots: Vec<RootEntry<'a>>,
}

#[derive(Serialize)]
struct RootEntry<'a> {
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

fn list_roots(call: &Call) -> Outcome {
    // Round 1: ask. Nothing to remember, so no state.
    let Some(roots) = call.roots("roots") else {
        return InputRequired::new().list_roots("roots").into();
    };

    // Round 2: report.
    CallResult::text(describe(roots))
        .with_structured(&Listing {
            roots: roots
                .iter()
                .map(|root| RootEntry {
                    uri: &root.uri,
                    name: root.name.as_deref(),
                })
                .collect(),
        })
        .into()
}

/// `The client exposes 2 roots:` followed by one `- name: uri` (or `- uri`)
/// line per root.
fn describe(roots: &[Root]) -> String {
    match roots.len() {
        0 => "The client exposes no roots.".to_owned(),
        n => {
            let plural = if n == 1 { "root" } else { "roots" };
            let mut text = format!("The client exposes {n} {plural}:");
            for root in roots {
                match &root.name {
                    Some(name) => text.push_str(&format!("\n- {name}: {}", root.uri)),
                    None => text.push_str(&format!("\n- {}", root.uri)),
                }
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_then_lists() {
        let call = Call::new("list_roots", "{}");
        let outcome = Workspace::call(call.clone());
        let asked = outcome.input_required().expect("a roots request");
        let roots = vec![
            Root::new("file:///home/ada/app", Some("App")),
            Root::new("file:///home/ada/notes.md", None),
        ];
        let outcome = Workspace::call(call.retry(asked, [("roots", roots.into())]));
        let result = outcome.result().unwrap();
        assert_eq!(
            result.text_content(),
            "The client exposes 2 roots:\n- App: file:///home/ada/app\n- file:///home/ada/notes.md"
        );
        assert_eq!(
            result.structured_content.as_deref(),
            Some(
                r#"{"roots":[{"uri":"file:///home/ada/app","name":"App"},{"uri":"file:///home/ada/notes.md"}]}"#
            )
        );
    }
}
