// The MCP App sample (samples/js_bar_chart/app.js), run natively with node's
// test runner through the exports it re-exports, in a file of its own: node
// runs each test file in its own process, so its declarations do not mix with
// the other samples'. The end-to-end flow over MCP is in
// tests/tests/javascript_tools.rs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { resources, tools } from "../samples/js_bar_chart/app.js";
import { firstRound } from "./rounds.mjs";

const APP = "ui://bar-chart/app.html";
const UI = { ui: { permissions: { clipboardWrite: {} }, prefersBorder: true } };

test("js_bar_chart: the tools name their App, the sorting one for the App only", () => {
  const meta = Object.fromEntries(tools.listTools().map((t) => [t.name, JSON.parse(t.meta)]));
  assert.deepEqual(meta, {
    bar_chart: { ui: { resourceUri: APP } },
    sort_bars: { ui: { resourceUri: APP, visibility: ["app"] } },
  });
});

test("js_bar_chart: bars as text and structured content, sorted on request", () => {
  const args = JSON.stringify({ values: { a: 1, b: 3 } });
  const given = tools.callTool("bar_chart", args, firstRound()).val;
  assert.equal(given.content[0].val.text, "a: 1 (25%)\nb: 3 (75%)");
  assert.deepEqual(JSON.parse(given.structuredContent).bars, [
    { label: "a", value: 1, share: 0.25 },
    { label: "b", value: 3, share: 0.75 },
  ]);
  const sorted = tools.callTool("sort_bars", args, firstRound()).val;
  assert.equal(sorted.content[0].val.text, "b: 3 (75%)\na: 1 (25%)");
  const wrong = tools.callTool("bar_chart", JSON.stringify({ values: { a: "1" } }), firstRound()).val;
  assert.equal(wrong.isError, true);
});

test("js_bar_chart: the App is listed and read with its MIME type and ui; the skill is served", () => {
  const listed = Object.fromEntries(resources.listResources().map((r) => [r.uri, r]));
  assert.equal(listed[APP].mimeType, "text/html;profile=mcp-app");
  assert.deepEqual(JSON.parse(listed[APP].meta), UI);
  const [page] = resources.readResource(APP, undefined, firstRound()).val;
  assert.equal(page.mimeType, "text/html;profile=mcp-app");
  assert.deepEqual(JSON.parse(page.meta), UI);
  assert.match(page.body.val, /^<!doctype html>/);
  const [skill] = resources.readResource("skill://bar-chart/SKILL.md", undefined, firstRound()).val;
  assert.equal(skill.mimeType, "text/markdown");
  assert.match(skill.body.val, /^---\nname: bar-chart\ndescription: .+\n---\n/);
});
