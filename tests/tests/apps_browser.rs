//! An MCP App end to end, in a real browser: the `chart` sample's App
//! (`ui://chart/bar-chart.html`) rendered by a host page built on the
//! official `@modelcontextprotocol/ext-apps` AppBridge, in Debian's Chromium,
//! headless, driven by `playwright-core`.
//!
//! `tests/browser/drive.mjs` serves the host page with Airlock's endpoint
//! under the same origin, and the page calls `chart_numbers`, reads the
//! resource its `_meta.ui.resourceUri` names, renders it in an iframe
//! sandboxed to `allow-scripts` and joins the two with the AppBridge. The
//! test checks that the App lists the values, then clicks its "Sort" button:
//! the App's `tools/call` of `sort_numbers` goes over postMessage to the
//! host, which relays it to Airlock, and the App shows the answer. A
//! screenshot of the page is saved under the target dir.
//!
//! `scripts/npm-packages tests/browser` installs the npm packages once (into
//! the user's cache); `chromium` must be on PATH (`scripts/test` installs it).

use std::path::PathBuf;
use std::process::Command;

use airlock_e2e::paths::{target_dir, workspace_root};
use airlock_e2e::sdk_clients::{self, Transport};
use serde_json::{Value, json};

/// The bound on each of the driver's waits (the page, the App, the sort).
const WAIT_MS: &str = "25000";

/// `tests/browser`: the host page, its npm manifest and the driver.
fn browser_dir() -> PathBuf {
    workspace_root().join("tests").join("browser")
}

/// Serves the `chart` component and runs `drive.mjs` with the tool's
/// `arguments`; returns the driver's JSON report.
fn drive(arguments: &Value, screenshot: &str) -> Value {
    let node_modules = sdk_clients::install_npm_packages(&browser_dir());
    let screenshot = target_dir().join("apps-browser").join(screenshot);
    let mut cmd = Command::new("node");
    cmd.arg(browser_dir().join("drive.mjs"))
        .arg("--node-modules")
        .arg(node_modules)
        .args(["--tool", "chart_numbers", "--arguments"])
        .arg(arguments.to_string())
        .arg("--screenshot")
        .arg(&screenshot)
        .args(["--timeout-ms", WAIT_MS]);
    let report = sdk_clients::drive(cmd, Transport::Http, "chart");
    println!("screenshot: {}", screenshot.display());
    report
}

/// The numbers of a report's list `key`.
fn numbers(report: &Value, key: &str) -> Vec<f64> {
    report[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {report}"))
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

#[test]
fn the_chart_app_shows_the_values_and_sorts_them_through_the_host() {
    let values = [5.0, -2.0, 13.5, 1.0, 8.0];
    let report = drive(
        &json!({"title": "Rainfall", "values": values}),
        "bar-chart.png",
    );

    assert_eq!(report["title"], "Rainfall", "{report}");
    assert_eq!(numbers(&report, "before"), values, "{report}");
    let mut sorted = values;
    sorted.sort_by(f64::total_cmp);
    assert_eq!(numbers(&report, "after"), sorted, "{report}");
    assert_eq!(report["status"], "", "the App reported a problem: {report}");
    assert_eq!(
        report["pageErrors"],
        json!([]),
        "the page or the App logged errors (a CSP violation among them): {report}"
    );

    // The page's requests to Airlock, in order: the host's own, then the
    // App's sort, relayed by the bridge.
    let mcp: Vec<&str> = report["mcp"]
        .as_array()
        .expect("mcp")
        .iter()
        .map(|m| m.as_str().expect("a method"))
        .collect();
    let at = |what: &str| {
        mcp.iter()
            .position(|m| *m == what)
            .unwrap_or_else(|| panic!("no {what} in {mcp:?}"))
    };
    assert!(
        at("tools/call chart_numbers") < at("resources/read"),
        "{mcp:?}"
    );
    assert!(
        at("resources/read") < at("tools/call sort_numbers"),
        "{mcp:?}"
    );
}
