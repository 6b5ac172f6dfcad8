//! The Grafana dashboard (`deploy/grafana/airlock.json`) and the Prometheus
//! rules (`deploy/prometheus/rules/airlock.yml`) that ship with Airlock:
//! the rules pass `promtool check rules` and their unit tests
//! (`deploy/prometheus/tests/airlock.test.yml`, `promtool test rules`); every
//! dashboard query is valid PromQL; the dashboard is provisioning-ready (one
//! data source variable, no import inputs); and every metric and label name
//! either of them uses is one the real binary exports, read from its
//! `/metrics` after traffic that gives every family a series (a family
//! without one is not rendered), so renaming a metric fails here. Calls
//! refused by an access rule or a quota, of unknown tools or with arguments
//! the schema refuses are labelled as such, and the shipped rules count
//! none of them as a failure of the tool. `promtool` comes
//! with Debian's `prometheus`, which `scripts/test` installs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::hostile::{airlock, answer, assert_limit, call, tools_with};
use airlock_e2e::mcp::{all_caps, complete, error_code, is_error, result_type};
use airlock_e2e::paths::workspace_root;
use airlock_e2e::{Http, McpClient, ToolCall, wait_until};
use serde_json::{Value, json};

fn prometheus_dir() -> PathBuf {
    workspace_root().join("deploy").join("prometheus")
}

fn dashboard() -> Value {
    let path = workspace_root()
        .join("deploy")
        .join("grafana")
        .join("airlock.json");
    let text = std::fs::read_to_string(&path).expect("read deploy/grafana/airlock.json");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

fn rules_text() -> String {
    std::fs::read_to_string(prometheus_dir().join("rules").join("airlock.yml"))
        .expect("read deploy/prometheus/rules/airlock.yml")
}

/// Runs `promtool ARGS` in `dir`; panics with its output unless it succeeds.
fn promtool(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): apt-get install -y prometheus; scripts/test does")
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

/// Every `expr` of every panel of the dashboard.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut queries = Vec::new();
    let mut stack = vec![dashboard];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(expr)) = map.get("expr") {
                    queries.push(expr.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(!queries.is_empty(), "the dashboard has no queries");
    queries
}

/// The words of a PromQL expression that can be names: metric names, label
/// names and recorded series (`a:b:c`).
fn words(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|word| !word.is_empty())
}

/// Airlock's own names: its metric families (`airlock_*`) and the MCP
/// conventions' (`mcp_*`, metric and label names alike).
fn is_airlock_name(word: &str) -> bool {
    word.starts_with("airlock_") || word.starts_with("mcp_")
}

/// The series recorded by the rules (`record: NAME`).
fn recorded(rules: &str) -> BTreeSet<String> {
    rules
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- record:"))
        .map(|name| name.trim().to_owned())
        .collect()
}

/// The names of `/metrics` in the OpenMetrics text: the sample names of
/// each family (declared by `# TYPE`, so those without a sample yet too),
/// and each sample's label names.
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for declared in text.lines().filter_map(|line| line.strip_prefix("# TYPE ")) {
        let (family, kind) = declared.split_once(' ').expect("# TYPE NAME KIND");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|suffix| format!("{family}{suffix}")));
    }
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let end = line.find(['{', ' ']).expect("a sample line");
        names.insert(line[..end].to_owned());
        let Some(labels) = line[end..].strip_prefix('{') else {
            continue;
        };
        // `name="value",…}`: values are quoted, with `\"` escaped.
        let mut rest = labels;
        while let Some((name, after)) = rest.split_once("=\"") {
            names.insert(name.trim_start_matches(',').to_owned());
            let mut escaped = false;
            let close = after
                .char_indices()
                .find(|&(_, c)| {
                    let closes = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })
                .map(|(at, _)| at)
                .expect("a closing quote");
            rest = &after[close + 1..];
            if rest.starts_with('}') {
                break;
            }
        }
    }
    names
}

#[test]
fn the_rules_pass_promtool_check_and_their_unit_tests() {
    let dir = prometheus_dir();
    let checked = promtool(&dir, &["check", "rules", "rules/airlock.yml"]);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = promtool(&dir, &["test", "rules", "tests/airlock.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
    // Every alert of the rules has a case in the unit tests.
    let cases = std::fs::read_to_string(dir.join("tests").join("airlock.test.yml"))
        .expect("read the rule tests");
    let alerts: Vec<String> = rules_text()
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- alert:"))
        .map(|name| name.trim().to_owned())
        .collect();
    assert!(alerts.len() >= 7, "too few alerts: {alerts:?}");
    for alert in alerts {
        assert!(
            cases.contains(&format!("alertname: {alert}\n")),
            "no unit test for the alert {alert}"
        );
    }
}

#[test]
fn the_dashboard_is_provisioning_ready_and_its_queries_are_promql() {
    let dashboard = dashboard();
    assert!(
        dashboard.get("__inputs").is_none(),
        "an exported-for-import dashboard (with __inputs) cannot be provisioned"
    );
    assert!(dashboard["uid"].as_str().is_some_and(|uid| !uid.is_empty()));
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("template variables");
    assert!(
        variables
            .iter()
            .any(|v| v["name"] == "datasource" && v["query"] == "prometheus"),
        "no Prometheus data source variable"
    );
    // Every panel and query reads the variable's data source.
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut queried = 0;
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        let source = json!({"type": "prometheus", "uid": "${datasource}"});
        assert_eq!(panel["datasource"], source, "{}", panel["title"]);
        for target in panel["targets"].as_array().expect("targets") {
            assert_eq!(target["datasource"], source, "{}", panel["title"]);
            queried += 1;
        }
    }
    assert!(queried > 10, "only {queried} queries");

    // Each query, with Grafana's variables given values, as a recording
    // rule for `promtool check rules` to parse.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (at, query) in dashboard_queries(&dashboard).iter().enumerate() {
        let promql = query
            .replace("$__rate_interval", "1m")
            .replace("$__range", "1h")
            .replace("$job", ".*")
            .replace("$instance", ".*");
        assert!(!promql.contains('$'), "a variable left in {promql}");
        rules.push_str(&format!(
            "      - record: dashboard_query_{at}\n        expr: {}\n",
            serde_json::to_string(&promql).expect("a JSON string is a YAML string")
        ));
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("dashboard.yml"), rules).expect("write the queries");
    promtool(dir.path(), &["check", "rules", "dashboard.yml"]);
}

#[test]
fn every_name_the_dashboard_and_rules_use_is_one_airlock_exports() {
    // `env` only for authenticated callers: the anonymous client is refused.
    let tools = tools_with(Some("[tools.env]\nallow = [\"authenticated\"]\n"));
    tools.add("report");
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0", "--call-timeout", "300ms"])
        .start_http();
    let client = server.client();
    // Traffic that gives every family a series: a readiness probe (which
    // asks the task store), a call, a refused requestState, a call into its
    // deadline, one refused by an access rule, and a task that runs a round.
    let readyz = server.url().replace("/mcp", "/readyz");
    assert_eq!(Http::new(&readyz).get().status, 200);
    answer(&call(&client, "sha256", json!({"text": "abc"})));
    let refused =
        client.call(&ToolCall::new("sha256", json!({"text": "abc"})).state("not-a-token"));
    assert!(refused.get("error").is_some(), "{refused}");
    assert_limit(&call(&client, "spin", json!({})), &["time limit"]);
    let denied = call(&client, "env", json!({"name": "HOME"}));
    assert!(denied.get("error").is_some(), "{denied}");
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let task = client.call(&ToolCall::new("build_report", json!({"items": ["quick"]})).caps(caps));
    assert_eq!(result_type(&task["result"]), "task", "{task}");
    let text = wait_until("a task round to be counted", || {
        let text = server.scrape_metrics();
        if text.contains("airlock_task_rounds_total{") {
            Ok(text)
        } else {
            Err(text)
        }
    });
    let exported = exported_names(&text);
    for family in [
        "airlock_state_refused_total",
        "airlock_limit_hits_total",
        "airlock_access_refused_total",
    ] {
        assert!(
            exported.contains(family),
            "the traffic gave {family} no series: {text}"
        );
    }
    assert!(
        exported.contains("mcp_method_name") && exported.contains("airlock_instances_max"),
        "could not read the names from /metrics: {exported:?}"
    );

    let rules = rules_text();
    let recorded = recorded(&rules);
    assert!(!recorded.is_empty(), "the rules record nothing");
    let mut used = BTreeSet::new();
    let sources = [("the rules", vec![rules.clone()])]
        .into_iter()
        .chain([("the dashboard", dashboard_queries(&dashboard()))]);
    for (source, texts) in sources {
        for text in &texts {
            for word in words(text) {
                if word.contains(':') && word.starts_with("airlock:") {
                    assert!(
                        recorded.contains(word),
                        "{source}: {word} is not recorded by the rules"
                    );
                } else if is_airlock_name(word) {
                    assert!(
                        exported.contains(word),
                        "{source}: {word} is not a name airlock exports: {exported:?}"
                    );
                    used.insert(word.to_owned());
                }
            }
        }
    }
    for family in [
        "mcp_server_operation_duration_seconds_bucket",
        "airlock_instances_busy",
        "airlock_instances_max",
        "airlock_calls_queued",
        "airlock_calls_refused_busy_total",
        "airlock_state_refused_total",
        "airlock_task_rounds_total",
        "airlock_tasks_created_total",
        "airlock_components_loaded",
        "airlock_reload_errors_total",
        "airlock_dependency_up",
    ] {
        assert!(used.contains(family), "neither uses {family}");
    }
}

/// The samples of `name` in the OpenMetrics `text`: each one's labels and
/// value.
fn samples(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    text.lines()
        .filter_map(|line| {
            let (labels, value) = line
                .strip_prefix(name)?
                .strip_prefix('{')?
                .rsplit_once("} ")?;
            let labels = labels
                .split(',')
                .filter_map(|pair| {
                    let (label, value) = pair.split_once("=\"")?;
                    Some((label.to_owned(), value.strip_suffix('"')?.to_owned()))
                })
                .collect();
            Some((labels, value.parse().ok()?))
        })
        .collect()
}

/// The label matchers (`name="value"`, `name!="value"`, `name=~"a|b"`) the
/// recording rule `record` puts on `family`, as the rules file writes them.
fn rule_matchers(rules: &str, record: &str, family: &str) -> Vec<(String, String, String)> {
    let start = rules
        .find(&format!("- record: {record}\n"))
        .unwrap_or_else(|| panic!("no rule records {record}"));
    let rule = &rules[start..];
    let selector = rule[rule
        .find(&format!("{family}{{"))
        .expect("the rule's selector")
        + family.len()
        + 1..]
        .split('}')
        .next()
        .expect("a closed selector");
    selector
        .split(',')
        .map(|matcher| {
            let operator = ["!=", "=~", "="]
                .into_iter()
                .find(|op| matcher.contains(op))
                .unwrap_or_else(|| panic!("a matcher: {matcher}"));
            let (label, value) = matcher.split_once(operator).expect("found above");
            let value = value.trim_matches('"');
            (
                label.trim().to_owned(),
                operator.to_owned(),
                value.to_owned(),
            )
        })
        .collect()
}

/// Whether `labels` pass every one of `matchers` (a missing label is
/// empty, as in PromQL; a regex here is an alternation of words).
fn selected(labels: &BTreeMap<String, String>, matchers: &[(String, String, String)]) -> bool {
    matchers.iter().all(|(label, operator, value)| {
        let actual = labels.get(label).map_or("", String::as_str);
        match operator.as_str() {
            "=" => actual == value,
            "!=" => actual != value,
            _ => value.split('|').any(|word| word == actual),
        }
    })
}

#[test]
fn refused_and_unknown_calls_are_no_failures_of_the_tool_in_the_shipped_rules() {
    // `env` only for authenticated callers (the anonymous client may not
    // even see it: its refusal reads as an unknown tool); `env_all` once a
    // minute per caller.
    let tools = tools_with(Some(
        "[tools.env]\nallow = [\"authenticated\"]\n\n[tools.env_all]\nrate-limit = \"1/min\"\n",
    ));
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0", "--call-timeout", "300ms"])
        .start_http();
    let client = server.client();
    let hidden = call(&client, "env", json!({"name": "HOME"}));
    assert_eq!(error_code(&hidden), -32602, "{hidden}");
    let unknown = call(&client, "no-such-tool", json!({}));
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    answer(&call(&client, "env_all", json!({})));
    let over_quota = call(&client, "env_all", json!({}));
    assert_eq!(error_code(&over_quota), -31429, "{over_quota}");
    let bad_arguments = call(&client, "sleep", json!({"ms": "long"}));
    assert!(is_error(complete(&bad_arguments)), "{bad_arguments}");
    // The tool's own failure: it runs into its deadline.
    assert_limit(&call(&client, "spin", json!({})), &["time limit"]);

    let text = server.scrape_metrics();
    let calls = samples(&text, "mcp_server_operation_duration_seconds_count");
    let outcome = |tool: &str, error_type: &str| {
        calls
            .iter()
            .find(|(labels, _)| {
                labels["mcp_method_name"] == "tools/call"
                    && labels["gen_ai_tool_name"] == tool
                    && labels["error_type"] == error_type
            })
            .and_then(|(labels, _)| labels.get("airlock_outcome").cloned())
            .unwrap_or_else(|| {
                panic!("no series of {tool} with error_type {error_type} and an outcome:\n{text}")
            })
    };
    assert_eq!(outcome("env", "-32602"), "denied");
    assert_eq!(outcome("", "-32602"), "unknown");
    assert_eq!(outcome("env_all", "-31429"), "over_quota");
    assert_eq!(outcome("env_all", ""), "ok");
    assert_eq!(outcome("sleep", "tool_error"), "invalid");
    assert_eq!(outcome("spin", "tool_error"), "failed");

    // What the shipped rules count: only spin failed, and only the calls
    // that ran a tool are its calls.
    let rules = rules_text();
    let family = "mcp_server_operation_duration_seconds_count";
    let counted = |record: &str| -> BTreeMap<String, f64> {
        let matchers = rule_matchers(&rules, record, family);
        let mut by_tool = BTreeMap::new();
        for (labels, value) in calls
            .iter()
            .filter(|(labels, _)| selected(labels, &matchers))
        {
            *by_tool
                .entry(labels["gen_ai_tool_name"].clone())
                .or_default() += value;
        }
        by_tool
    };
    assert_eq!(
        counted("airlock:tool_errors:rate5m"),
        BTreeMap::from([("spin".to_owned(), 1.0)]),
        "{text}"
    );
    assert_eq!(
        counted("airlock:tool_calls:rate5m"),
        BTreeMap::from([("env_all".to_owned(), 1.0), ("spin".to_owned(), 1.0)]),
        "{text}"
    );
}
