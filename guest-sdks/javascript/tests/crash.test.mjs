// Unit tests of what a crash reports (airlock-guest/src/crash.js): the test
// app tests/apps/js_crash is bundled as the build bundles it
// (toolchain/bundle.mjs, the pinned rolldown), and frames of that bundle, in
// SpiderMonkey's `function@file:line:column` form, must come out naming the
// app's own files, lines and columns.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { crashReport, mapStack } from "../airlock-guest/src/crash.js";
import { firstRound } from "./rounds.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const app = here("apps/js_crash/");
const work = mkdtempSync(join(tmpdir(), "airlock-crash-test-"));
after(() => rmSync(work, { recursive: true, force: true }));

const toolchain = execFileSync(here("../../../scripts/javascript-toolchain"), { encoding: "utf8" }).trim();
const bundled = join(work, "bundle.js");
execFileSync("node", [here("../toolchain/bundle.mjs"), toolchain, join(app, "app.js"), here("../airlock-guest/index.js"), bundled]);
// Evaluating the bundle hands its source map to the SDK, as in a component.
const bundle = await import(pathToFileURL(bundled).href);

/** The 1-based `line:column` where `needle` (found once) starts in `file`. */
function position(file, needle) {
  const lines = readFileSync(file, "utf8").split("\n");
  const found = lines.flatMap((text, i) => (text.includes(needle) ? [`${i + 1}:${text.indexOf(needle) + 1}`] : []));
  assert.equal(found.length, 1, `${needle} in ${file}: ${found}`);
  return found[0];
}

const THROW_HERE = 'new RangeError("crashed in app.js")';
const THROW_IN_RATIO = 'new RangeError("division by zero in ratio.js")';
const CALL_QUOTIENT = "quotient(call.arguments)";
const CALL_RATIO = "ratio(args.a, args.b)";

test("frames of the bundle name the app's files, lines and columns", () => {
  const stack = [
    `ratio@bundle.js:${position(bundled, THROW_IN_RATIO)}`,
    `quotient@bundle.js:${position(bundled, CALL_RATIO)}`,
    `@bundle.js:${position(bundled, CALL_QUOTIENT)}`,
    "export_tools_0_2_0$callTool@/tmp/x/sources/initializer.js:1284:15",
    "",
  ].join("\n");
  assert.equal(
    mapStack(stack),
    [
      `ratio@ratio.js:${position(join(app, "ratio.js"), THROW_IN_RATIO)}`,
      `quotient@app.js:${position(join(app, "app.js"), CALL_RATIO)}`,
      `@app.js:${position(join(app, "app.js"), CALL_QUOTIENT)}`,
      "export_tools_0_2_0$callTool@/tmp/x/sources/initializer.js:1284:15",
      "",
    ].join("\n"),
  );
  // The exact lines the author wrote: the map is not merely consistent with itself.
  assert.equal(position(join(app, "app.js"), THROW_HERE), "18:11");
  assert.match(mapStack(`quotient@bundle.js:${position(bundled, THROW_HERE)}`), /^quotient@app\.js:18:11$/);
});

test("the SDK's own frames name its files under airlock-guest/", () => {
  const line = position(bundled, "callOutcome(entry.handler(");
  const mapped = mapStack(`callTool@bundle.js:${line}`);
  const sdk = here("../airlock-guest/src/tools.js");
  assert.equal(mapped, `callTool@airlock-guest/src/tools.js:${position(sdk, "callOutcome(entry.handler(")}`);
});

test("frames the map does not cover stay as they were", () => {
  const lines = readFileSync(bundled, "utf8").split("\n").length;
  const stack = `far@bundle.js:${lines + 10}:1\nother@app.js:3:1\nnot a frame`;
  assert.equal(mapStack(stack), stack);
  assert.equal(mapStack("f@bundle.js:1:1", undefined), "f@bundle.js:1:1");
});

test("a report names the error, its mapped stack and its causes", () => {
  const cause = new TypeError("inner");
  cause.stack = `ratio@bundle.js:${position(bundled, THROW_IN_RATIO)}\n`;
  const error = new RangeError("outer", { cause });
  error.stack = `quotient@bundle.js:${position(bundled, THROW_HERE)}\n`;
  assert.equal(
    crashReport(error),
    [
      "RangeError: outer",
      "Stack:",
      "  quotient@app.js:18:11",
      "Caused by: TypeError: inner",
      "Stack:",
      `  ratio@ratio.js:${position(join(app, "ratio.js"), THROW_IN_RATIO)}`,
    ].join("\n"),
  );
  const looped = new Error("loop");
  looped.stack = "";
  looped.cause = looped;
  assert.equal(crashReport(looped).split("Caused by: ").length, 9);
  assert.equal(crashReport(new Error("plain", { cause: "a string" })).split("\n").at(-1), "Caused by: a string");
});

test("an exception escaping the bundle's export is rethrown as a crash; a tool error is a result", () => {
  const call = (args) => bundle.tools.callTool("divide", args, firstRound());
  assert.throws(
    () => call(JSON.stringify({ here: true })),
    (crash) => crash.error instanceof RangeError && /^RangeError: crashed in app\.js\nStack:\n/.test(crash.toSource()),
  );
  assert.equal(call(JSON.stringify({ a: 1, b: 4 })).val.content[0].val.text, "0.25");
  assert.equal(call("[]").val.isError, true);
});
