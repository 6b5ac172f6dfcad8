//! `chart`: numbers drawn as a bar chart by an MCP App.
//!
//! * `chart_numbers {title?, values}` summarises the numbers in text and
//!   returns them as structured content for the App to draw.
//! * `sort_numbers {values}` sorts them ascending; the model or the App (its
//!   visibility is both) may call it.
//! * The App is the resource `ui://chart/bar-chart.html`, HTML of the App
//!   MIME type that both tools name in their `_meta.ui.resourceUri`. It
//!   reaches no origin of its own (an empty CSP).
//!
//! Clients without Apps get the text content alone. See README.md.

use airlock_guest::apps::{AppCsp, AppUi, Visibility};
use airlock_guest::serde_json::Number;
use airlock_guest::{
    Call, CallResult, Outcome, ReadOutcome, Resource, ResourceContents, ResourceRead, Resources,
    RoutedTools, Tool, ToolRouter,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The App's resource, named by both tools.
const APP_URI: &str = "ui://chart/bar-chart.html";

/// The App's HTML.
const APP_HTML: &str = include_str!("../ui/bar-chart.html");

/// The most numbers one chart takes.
const MAX_VALUES: usize = 100;

/// The title of a chart given none.
const DEFAULT_TITLE: &str = "Chart";

struct Chart;

impl RoutedTools for Chart {
    fn router() -> ToolRouter {
        ToolRouter::new()
            .tool("chart_numbers", chart_numbers, |name| {
                Tool::new(
                    name,
                    "Draws numbers as a bar chart (in clients that show MCP Apps) and \
                     summarises them in text: how many, their total and their maximum.",
                )
                .title("Chart numbers")
                .input::<ChartArgs>()
                .output::<Charted>()
                .read_only()
                .idempotent()
                .open_world(false)
                .app(APP_URI)
            })
            .tool("sort_numbers", sort_numbers, |name| {
                Tool::new(name, "Sorts numbers in ascending order.")
                    .title("Sort numbers")
                    .input::<SortArgs>()
                    .output::<Sorted>()
                    .read_only()
                    .idempotent()
                    .open_world(false)
                    .app(APP_URI)
                    .visibility(&[Visibility::Model, Visibility::App])
            })
    }
}

impl Resources for Chart {
    fn list() -> Vec<Resource> {
        vec![
            Resource::app(APP_URI, "bar-chart")
                .title("Bar chart")
                .description("The App that draws the numbers of chart_numbers as a bar chart."),
        ]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        (read.uri() == APP_URI)
            .then(|| ResourceContents::app(APP_URI, APP_HTML).app_ui(&app_ui()))
            .into()
    }
}

airlock_guest::export! {
    tools: Chart,
    resources: Chart,
}

/// How the App is presented: with a border, and no origin it may reach.
fn app_ui() -> AppUi {
    AppUi {
        csp: Some(AppCsp::default()),
        prefers_border: Some(true),
        ..AppUi::default()
    }
}

/// The arguments of `chart_numbers`.
#[derive(Deserialize, JsonSchema)]
struct ChartArgs {
    /// What the numbers measure, shown above the chart; "Chart" if left out.
    title: Option<String>,
    /// The numbers, one bar each, in the order they are drawn (1 to 100).
    #[schemars(length(min = 1, max = 100))]
    values: Vec<Number>,
}

/// The structured content of `chart_numbers`: what the App draws.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
struct Charted {
    /// The chart's title.
    title: String,
    /// The numbers, as given.
    values: Vec<Number>,
}

/// The arguments of `sort_numbers`.
#[derive(Deserialize, JsonSchema)]
struct SortArgs {
    /// The numbers to sort.
    values: Vec<Number>,
}

/// The structured content of `sort_numbers`.
#[derive(Debug, PartialEq, Serialize, JsonSchema)]
struct Sorted {
    /// The numbers in ascending order.
    values: Vec<Number>,
}

fn chart_numbers(ChartArgs { title, values }: ChartArgs, _: &Call) -> Outcome {
    if !(1..=MAX_VALUES).contains(&values.len()) {
        return Outcome::error(format!(
            "values: give 1 to {MAX_VALUES} numbers, not {}",
            values.len()
        ));
    }
    let title = title.unwrap_or_else(|| DEFAULT_TITLE.to_owned());
    let numbers = values.iter().map(value);
    let total: f64 = numbers.clone().sum();
    let max = numbers.fold(f64::NEG_INFINITY, f64::max);
    let summary = format!("{title}: {} values, total {total}, max {max}", values.len());
    CallResult::text(summary)
        .with_structured(&Charted { title, values })
        .into()
}

fn sort_numbers(SortArgs { mut values }: SortArgs, _: &Call) -> Outcome {
    values.sort_by(|a, b| value(a).total_cmp(&value(b)));
    let listed: Vec<String> = values.iter().map(Number::to_string).collect();
    CallResult::text(listed.join(", "))
        .with_structured(&Sorted { values })
        .into()
}

/// A number's value (every JSON number has one as `f64`, if rounded).
fn value(number: &Number) -> f64 {
    number.as_f64().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_guest::serde_json::{self, Value, json};
    use airlock_guest::{Resources, Tools};

    fn call(name: &str, arguments: Value) -> CallResult {
        let outcome = <Chart as Tools>::call(Call::new(name, arguments.to_string()));
        outcome.result().expect("a finished call").clone()
    }

    fn structured(result: &CallResult) -> Value {
        serde_json::from_str(result.structured_content.as_deref().expect("structured")).unwrap()
    }

    fn meta(text: &Option<String>) -> Value {
        serde_json::from_str(text.as_deref().expect("a meta")).unwrap()
    }

    #[test]
    fn chart_numbers_summarises_and_returns_the_values_as_given() {
        let result = call(
            "chart_numbers",
            json!({"title": "Sales", "values": [5, 17, 12.5, 7.5]}),
        );
        assert!(!result.is_error);
        assert_eq!(result.text_content(), "Sales: 4 values, total 42, max 17");
        assert_eq!(
            structured(&result),
            json!({"title": "Sales", "values": [5, 17, 12.5, 7.5]})
        );
    }

    #[test]
    fn chart_numbers_without_a_title_is_called_chart() {
        let result = call("chart_numbers", json!({"values": [-3]}));
        assert_eq!(result.text_content(), "Chart: 1 values, total -3, max -3");
        assert_eq!(
            structured(&result),
            json!({"title": "Chart", "values": [-3]})
        );
    }

    #[test]
    fn chart_numbers_takes_one_to_a_hundred_values() {
        let hundred: Vec<u32> = (1..=100).collect();
        assert!(!call("chart_numbers", json!({"values": hundred})).is_error);
        for count in [0, 101] {
            let values = vec![1; count];
            let result = call("chart_numbers", json!({"values": values}));
            assert!(result.is_error, "{count} values");
            assert!(
                result.text_content().contains("1 to 100"),
                "{}",
                result.text_content()
            );
        }
    }

    #[test]
    fn sort_numbers_sorts_ascending() {
        let result = call("sort_numbers", json!({"values": [3, -1.5, 10, 2]}));
        assert_eq!(result.text_content(), "-1.5, 2, 3, 10");
        assert_eq!(structured(&result), json!({"values": [-1.5, 2, 3, 10]}));
    }

    #[test]
    fn both_tools_name_the_app_and_sort_numbers_its_callers() {
        let tools = <Chart as Tools>::list();
        let metas: Vec<(&str, Value)> = tools
            .iter()
            .map(|t| (t.name.as_str(), meta(&t.meta)))
            .collect();
        assert_eq!(
            metas,
            [
                (
                    "chart_numbers",
                    json!({"ui": {"resourceUri": "ui://chart/bar-chart.html"}})
                ),
                (
                    "sort_numbers",
                    json!({"ui": {"resourceUri": "ui://chart/bar-chart.html",
                        "visibility": ["model", "app"]}})
                ),
            ]
        );
        let schema: Value = serde_json::from_str(&tools[0].input_schema).unwrap();
        assert_eq!(schema["properties"]["values"]["minItems"], 1);
        assert_eq!(schema["properties"]["values"]["maxItems"], 100);
        assert_eq!(schema["required"], json!(["values"]));
    }

    #[test]
    fn the_app_is_listed_and_read_as_html_of_the_app_mime_type() {
        let listed = <Chart as Resources>::list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uri, APP_URI);
        assert_eq!(listed[0].name, "bar-chart");
        assert_eq!(
            listed[0].mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        let read = <Chart as Resources>::read(ResourceRead::new(APP_URI));
        let contents = read.contents().expect("contents");
        assert_eq!(contents.len(), 1);
        assert_eq!(
            contents[0].mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        assert!(contents[0].as_text().unwrap().contains("<html"));
        assert_eq!(
            meta(&contents[0].meta),
            json!({"ui": {"prefersBorder": true, "csp": {}}})
        );
        let unknown = <Chart as Resources>::read(ResourceRead::new("ui://chart/other.html"));
        assert!(unknown.is_not_found());
    }
}
