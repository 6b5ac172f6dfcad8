"""`bar_chart`: a tool with an MCP App. The tool turns labelled values into
bars (structured content, and a text table for clients without Apps); its
App, the HTML page served at `ui://bar-chart/app.html`, draws them and may
ask for them sorted through `sort_bars`, a tool only the App calls. The page
copies the table to the clipboard, so it asks for that permission. The
component also serves a skill, `skill://bar-chart/SKILL.md`, that tells a
model when to use the chart."""

import airlock_guest as airlock
from airlock_guest import Tools  # noqa: F401  (the component's export)
from airlock_guest.apps import AppPermissions, AppUi, Visibility
from airlock_guest.resources import ResourceRead, Resources, app_resource, resource  # noqa: F401  (Resources: the export)

APP = "ui://bar-chart/app.html"

VALUES_SCHEMA = {
    "type": "object",
    "properties": {
        "values": {
            "type": "object",
            "description": "The value of each bar, by label.",
            "additionalProperties": {"type": "number"},
        },
    },
    "required": ["values"],
}


def bars(call: airlock.Call, order: str) -> airlock.Result:
    """The bars of the call's `values`, in `order` ("given" or "descending")."""
    values = call.arguments.get("values")
    if not isinstance(values, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()
    ):
        raise airlock.ToolError("`values` must map labels to numbers")
    labelled = list(values.items())
    if order == "descending":
        labelled.sort(key=lambda bar: bar[1], reverse=True)
    total = sum(value for _, value in labelled)
    chart = [
        {"label": label, "value": value, "share": value / total if total else 0.0} for label, value in labelled
    ]
    table = "\n".join(f"{bar['label']}: {bar['value']} ({bar['share']:.0%})" for bar in chart)
    return airlock.Result.text(table or "no bars").with_structured({"bars": chart})


@airlock.tool(
    "Draws labelled values as a bar chart (a text table where the client shows no Apps).",
    title="Bar chart (Python)",
    input_schema=VALUES_SCHEMA,
    read_only=True,
    app=APP,
)
def bar_chart(call: airlock.Call) -> airlock.Result:
    return bars(call, "given")


@airlock.tool(
    "Sorts the bars of a chart, largest first.",
    input_schema=VALUES_SCHEMA,
    read_only=True,
    app=APP,
    visibility=[Visibility.APP],
)
def sort_bars(call: airlock.Call) -> airlock.Result:
    return bars(call, "descending")


@app_resource(
    APP,
    name="bar_chart_app",
    title="Bar chart",
    description="Draws the bars of a `bar_chart` result.",
    ui=AppUi(permissions=AppPermissions(clipboard_write=True), prefers_border=True),
)
def bar_chart_app(read: ResourceRead) -> str:
    return HTML


SKILL_MD = """---
name: bar-chart
description: How to show labelled numbers as a bar chart with the bar_chart tool
---
Call `bar_chart` with `{"values": {"<label>": <number>, ...}}` when the user
wants to compare a few quantities. Clients that render MCP Apps draw the bars;
the others show the text table of the result.
"""


@resource("skill://bar-chart/SKILL.md", name="bar-chart", mime_type="text/markdown")
def bar_chart_skill(read: ResourceRead) -> str:
    return SKILL_MD


HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Bar chart</title>
<style>body{font:14px sans-serif;margin:8px}.bar{background:#4a7;height:1.2em;margin:2px 0}</style>
</head><body>
<div id="chart">Waiting for the tool's result...</div>
<button id="sort">Sort</button> <button id="copy">Copy</button>
<script>
// The App talks to its host with JSON-RPC over postMessage (MCP Apps).
let values = {}, table = "", nextId = 1;
const pending = new Map();
function request(method, params) {
  const id = nextId++;
  parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve) => pending.set(id, resolve));
}
function draw(result) {
  const bars = result.structuredContent?.bars ?? [];
  values = Object.fromEntries(bars.map((bar) => [bar.label, bar.value]));
  table = result.content?.[0]?.text ?? "";
  const chart = document.getElementById("chart");
  chart.replaceChildren(...bars.map((bar) => {
    const row = document.createElement("div");
    row.textContent = `${bar.label}: ${bar.value}`;
    const fill = document.createElement("div");
    fill.className = "bar";
    fill.style.width = `${Math.round(bar.share * 100)}%`;
    row.append(fill);
    return row;
  }));
}
window.addEventListener("message", ({ data }) => {
  if (data?.id !== undefined && pending.has(data.id)) {
    pending.get(data.id)(data.result);
    pending.delete(data.id);
  } else if (data?.method === "ui/notifications/tool-result") {
    draw(data.params);
  }
});
document.getElementById("sort").onclick = async () =>
  draw(await request("tools/call", { name: "sort_bars", arguments: { values } }));
document.getElementById("copy").onclick = () => navigator.clipboard.writeText(table);
request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "bar-chart", version: "1" }, appCapabilities: {} }).then(() =>
  parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized" }, "*"));
</script>
</body></html>
"""
