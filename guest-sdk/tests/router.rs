//! Tools declared once with `ToolRouter`: listing and calling from one
//! declaration.

use airlock_guest::{Call, Error, Outcome, RoutedTools, Tool, ToolRouter, Tools, json};
use serde::Deserialize;

struct Calculator;

impl RoutedTools for Calculator {
    fn router() -> ToolRouter {
        ToolRouter::new()
            .tool("add", add, |name| {
                Tool::new(name, "Adds two numbers.")
                    .input_schema(json!({
                        "type": "object",
                        "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                        "required": ["a", "b"]
                    }))
                    .read_only()
            })
            .tool("divide", divide, |name| Tool::new(name, "Divides a by b."))
            // Whatever name the description has, the route's is listed.
            .tool("negate", negate, |_| {
                Tool::new("something-else", "Negates a.")
            })
    }
}

#[derive(Deserialize)]
struct Pair {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
struct One {
    a: f64,
}

fn add(Pair { a, b }: Pair, _: &Call) -> Outcome {
    Outcome::text((a + b).to_string())
}

fn divide(Pair { a, b }: Pair, _: &Call) -> Result<Outcome, Error> {
    if b == 0.0 {
        return Err(Error::new("cannot divide by zero"));
    }
    Ok(Outcome::text((a / b).to_string()))
}

fn negate(One { a }: One, call: &Call) -> Outcome {
    // The handler gets the call too: its round, answers and state.
    Outcome::text(format!("{} in round {}", -a, call.round()))
}

#[test]
fn every_route_is_listed_in_order_under_its_name() {
    let tools = Calculator::list();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["add", "divide", "negate"]);
    assert_eq!(tools[0].description, "Adds two numbers.");
    assert_eq!(
        tools[0].annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let schema: serde_json::Value = serde_json::from_str(&tools[0].input_schema).unwrap();
    assert_eq!(schema["required"], json!(["a", "b"]));
}

#[test]
fn a_call_runs_the_handler_its_name_names() {
    assert_eq!(
        Calculator::call(Call::new("add", r#"{"a": 1, "b": 2}"#)),
        Outcome::text("3")
    );
    assert_eq!(
        Calculator::call(Call::new("divide", r#"{"a": 1, "b": 4}"#)),
        Outcome::text("0.25")
    );
    assert_eq!(
        Calculator::call(Call::new("negate", r#"{"a": 2}"#)),
        Outcome::text("-2 in round 1")
    );
}

#[test]
fn handler_errors_and_bad_arguments_are_error_results() {
    assert_eq!(
        Calculator::call(Call::new("divide", r#"{"a": 1, "b": 0}"#)),
        Outcome::error("cannot divide by zero")
    );
    let bad = Calculator::call(Call::new("add", r#"{"a": 1}"#));
    let bad = bad.result().unwrap();
    assert!(bad.is_error);
    assert_eq!(
        bad.text_content(),
        "invalid arguments: missing field `b` at line 1 column 8"
    );
}

#[test]
fn an_unknown_name_is_an_unknown_tool() {
    assert_eq!(
        Calculator::call(Call::new("multiply", r#"{"a": 1, "b": 2}"#)),
        Outcome::unknown_tool("multiply")
    );
    assert_eq!(
        ToolRouter::new().call(&Call::new("add", "{}")),
        Outcome::unknown_tool("add")
    );
}

#[test]
fn a_call_describes_no_tool() {
    let router = ToolRouter::new().tool(
        "echo",
        |text: String, _: &Call| Outcome::text(text),
        |_| panic!("described during a call"),
    );
    assert_eq!(
        router.call(&Call::new("echo", r#""hi""#)),
        Outcome::text("hi")
    );
    assert_eq!(format!("{router:?}"), r#"["echo"]"#);
}
