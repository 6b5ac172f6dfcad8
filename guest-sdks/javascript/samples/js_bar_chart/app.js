// `bar_chart`: a tool with an MCP App. The tool turns labelled values into
// bars (structured content, and a text table for clients without Apps); its
// App, the HTML page served at `ui://bar-chart/app.html`, draws them and may
// ask for them sorted through `sort_bars`, a tool only the App calls. The page
// copies the table to the clipboard, so it asks for that permission. The
// component also serves a skill, `skill://bar-chart/SKILL.md`, that tells a
// model when to use the chart.

import { Result, ToolError, appResource, resource, tool } from "airlock-guest";

export { resources, tools } from "airlock-guest";

const APP = "ui://bar-chart/app.html";

const VALUES_SCHEMA = {
  type: "object",
  properties: {
    values: {
      type: "object",
      description: "The value of each bar, by label.",
      additionalProperties: { type: "number" },
    },
  },
  required: ["values"],
};

/** The bars of the call's `values`, in `order` ("given" or "descending"). */
function bars(call, order) {
  const { values } = call.arguments;
  if (values === null || typeof values !== "object" || Array.isArray(values)) {
    throw new ToolError("`values` must map labels to numbers");
  }
  const labelled = Object.entries(values);
  if (labelled.some(([, value]) => typeof value !== "number")) throw new ToolError("`values` must map labels to numbers");
  if (order === "descending") labelled.sort(([, a], [, b]) => b - a);
  const total = labelled.reduce((sum, [, value]) => sum + value, 0);
  const chart = labelled.map(([label, value]) => ({ label, value, share: total ? value / total : 0 }));
  const table = chart.map((bar) => `${bar.label}: ${bar.value} (${Math.round(bar.share * 100)}%)`).join("\n");
  return Result.text(table || "no bars").withStructured({ bars: chart });
}

tool(
  {
    name: "bar_chart",
    title: "Bar chart (JavaScript)",
    description: "Draws labelled values as a bar chart (a text table where the client shows no Apps).",
    inputSchema: VALUES_SCHEMA,
    readOnly: true,
    app: APP,
  },
  (call) => bars(call, "given"),
);

tool(
  {
    name: "sort_bars",
    description: "Sorts the bars of a chart, largest first.",
    inputSchema: VALUES_SCHEMA,
    readOnly: true,
    app: APP,
    visibility: ["app"],
  },
  (call) => bars(call, "descending"),
);

appResource(
  {
    uri: APP,
    name: "bar_chart_app",
    title: "Bar chart",
    description: "Draws the bars of a `bar_chart` result.",
    ui: { permissions: { clipboardWrite: true }, prefersBorder: true },
  },
  () => HTML,
);

const SKILL_MD = `---
name: bar-chart
description: How to show labelled numbers as a bar chart with the bar_chart tool
---
Call \`bar_chart\` with \`{"values": {"<label>": <number>, ...}}\` when the user
wants to compare a few quantities. Clients that render MCP Apps draw the bars;
the others show the text table of the result.
`;

resource({ uri: "skill://bar-chart/SKILL.md", name: "bar-chart", mimeType: "text/markdown" }, () => SKILL_MD);

const HTML = `<!doctype html>
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
    row.textContent = \`\${bar.label}: \${bar.value}\`;
    const fill = document.createElement("div");
    fill.className = "bar";
    fill.style.width = \`\${Math.round(bar.share * 100)}%\`;
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
`;
