// Unit tests of the JavaScript guest SDK, run natively with node's test
// runner (scripts/test-javascript-sdk): the values the SDK hands to the
// contract's exports, in the shapes componentize-js lowers (records as
// objects, variants as {tag, val}, lists of pairs as arrays).

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  APP_MIME_TYPE,
  Completion,
  ContinueAsTask,
  Failed,
  InputRequired,
  InvalidArguments,
  MAX_VALUES,
  PromptResult,
  Result,
  Sampling,
  ToolError,
  appContents,
  appResource,
  completer,
  completions,
  contents,
  log,
  progress,
  prompt,
  prompts,
  resource,
  resources,
  template,
  tool,
  tools,
} from "../airlock-guest/index.js";
import { calls } from "./host-stub.mjs";
import { FORMS_ONLY, NO_CLIENT, answered, firstRound, retry } from "./rounds.mjs";

const decoder = new TextDecoder();

tool(
  {
    name: "unit_add",
    description: "Adds two integers.",
    inputSchema: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } } },
    readOnly: true,
  },
  (call) => ({ sum: call.arguments.left + call.arguments.right }),
);

tool({ name: "unit_ask", description: "Asks for a colour, keeping the round in the state." }, (call) => {
  const answer = call.elicitation("colour");
  if (answer === undefined) {
    const schema = { type: "object", properties: { colour: { type: "string" } } };
    return new InputRequired().elicitForm("colour", "Which colour?", schema).withState({ asked: call.round });
  }
  if (!answer.accepted) throw new ToolError(`no colour: ${answer.action}`);
  log.info("answered");
  progress(1, 2, "half");
  return Result.text(`${answer.acceptedContent().colour} after round ${call.state().asked}`);
});

tool({ name: "unit_task", description: "Goes on as a task, or fails.", taskSupport: "optional" }, (call) =>
  call.client.canUseTasks ? new ContinueAsTask({ step: 1 }) : new Failed(-32600, "needs tasks"),
);

tool({ name: "unit_plain_text", description: "Returns a string." }, () => "plain");

tool({ name: "unit_crash", description: "Throws a plain error." }, () => {
  throw new RangeError("a bug");
});

test("tools are listed with JSON schemas and hints as annotations", () => {
  const listed = tools.listTools();
  const add = listed.find((t) => t.name === "unit_add");
  assert.equal(add.description, "Adds two integers.");
  assert.deepEqual(JSON.parse(add.inputSchema).properties.left, { type: "integer" });
  assert.equal(add.annotations.readOnlyHint, true);
  assert.equal(add.annotations.destructiveHint, undefined);
  assert.equal(add.taskSupport, "never");
  const ask = listed.find((t) => t.name === "unit_ask");
  assert.equal(ask.annotations, undefined, "no hints, no annotations");
  assert.equal(JSON.parse(ask.inputSchema).type, "object", "the default schema is an object");
  assert.equal(listed.find((t) => t.name === "unit_task").taskSupport, "optional");
});

test("a tool declared twice, or without a description, is refused", () => {
  assert.throws(() => tool({ name: "unit_add", description: "again" }, () => "x"), /declared twice/);
  assert.throws(() => tool({ name: "unit_vague" }, () => "x"), /tool `unit_vague` needs `description`/);
});

test("an object becomes text and structured content", () => {
  const outcome = tools.callTool("unit_add", '{"left": 2, "right": 3}', firstRound());
  assert.equal(outcome.tag, "complete");
  assert.deepEqual(JSON.parse(outcome.val.structuredContent), { sum: 5 });
  assert.deepEqual(outcome.val.content, [{ tag: "text", val: { text: '{"sum":5}', annotations: undefined } }]);
  assert.equal(outcome.val.isError, false);
});

test("a string becomes one text block", () => {
  const outcome = tools.callTool("unit_plain_text", "{}", firstRound());
  assert.equal(outcome.val.content[0].val.text, "plain");
  assert.equal(outcome.val.structuredContent, undefined);
});

test("a first round asks, with the state as JSON bytes", () => {
  const outcome = tools.callTool("unit_ask", "{}", firstRound(FORMS_ONLY));
  assert.equal(outcome.tag, "input-required");
  const [[key, request]] = outcome.val.requests;
  assert.equal(key, "colour");
  assert.equal(request.tag, "elicitation");
  assert.equal(request.val.tag, "form");
  assert.equal(request.val.val.message, "Which colour?");
  assert.deepEqual(JSON.parse(request.val.val.requestedSchema).properties.colour, { type: "string" });
  assert.deepEqual(JSON.parse(decoder.decode(outcome.val.state)), { asked: 1 });
});

test("the retry reads the answer by key and the state, and reaches the host", () => {
  calls.length = 0;
  const outcome = tools.callTool("unit_ask", "{}", retry({ asked: 1 }, [["colour", answered("accept", { colour: "teal" })]]));
  assert.equal(outcome.tag, "complete");
  assert.equal(outcome.val.content[0].val.text, "teal after round 1");
  assert.deepEqual(calls, [
    ["log", "info", "answered"],
    ["progress", 1, 2, "half"],
  ]);
});

test("a declined answer and a ToolError end in an error result", () => {
  const outcome = tools.callTool("unit_ask", "{}", retry({ asked: 1 }, [["colour", answered("decline")]]));
  assert.equal(outcome.tag, "complete");
  assert.equal(outcome.val.isError, true);
  assert.equal(outcome.val.content[0].val.text, "no colour: decline");
});

test("arguments that are not a JSON object are an error result", () => {
  for (const args of ["[1, 2]", "null", "7"]) {
    const outcome = tools.callTool("unit_add", args, firstRound());
    assert.equal(outcome.val.isError, true, args);
    assert.match(outcome.val.content[0].val.text, /must be a JSON object/);
  }
});

test("an unknown tool is an error result", () => {
  const outcome = tools.callTool("nope", "{}", firstRound());
  assert.equal(outcome.val.isError, true);
  assert.equal(outcome.val.content[0].val.text, "unknown tool `nope`");
});

test("any other exception propagates as a crash naming it (the call traps)", () => {
  assert.throws(
    () => tools.callTool("unit_crash", "{}", firstRound()),
    (crash) => crash.error instanceof RangeError && crash.toSource().startsWith("RangeError: a bug\nStack:\n"),
  );
});

test("a task step and a failure become their outcomes", () => {
  const asTask = tools.callTool("unit_task", "{}", firstRound({ ...NO_CLIENT, tasks: true }));
  assert.equal(asTask.tag, "continue-as-task");
  assert.deepEqual(JSON.parse(decoder.decode(asTask.val)), { step: 1 });
  const failed = tools.callTool("unit_task", "{}", firstRound());
  assert.deepEqual(failed, { tag: "failed", val: { code: -32600, message: "needs tasks" } });
});

test("retainSupported drops what the client cannot answer", () => {
  const asked = new InputRequired()
    .elicitForm("form", "?", { type: "object" })
    .elicitUrl("url", "visit", "https://example.com/")
    .sample("model", new Sampling(10).user("hi"))
    .listRoots("roots")
    .retainSupported({ canElicitForm: true, canElicitUrl: false, canSample: true, canListRoots: false });
  assert.deepEqual(
    asked.toWit().requests.map(([key]) => key),
    ["form", "model"],
  );
});

test("a sampling request carries its messages and preferences", () => {
  const request = new Sampling(50, { systemPrompt: "be brief", modelHints: ["small"] }).user("q").assistant("a").toWit();
  assert.equal(request.maxTokens, 50);
  assert.equal(request.systemPrompt, "be brief");
  assert.deepEqual(
    request.messages.map((m) => [m.role, m.content[0].val.text]),
    [["user", "q"], ["assistant", "a"]],
  );
  assert.deepEqual(request.modelPreferences.hints, [{ name: "small" }]);
  assert.equal(new Sampling(10).toWit().modelPreferences, undefined, "no hints, no preferences");
});

test("asking twice under one key keeps the last question", () => {
  const asked = new InputRequired().listRoots("k").elicitUrl("k", "visit", "https://example.com/");
  assert.equal(asked.toWit().requests.length, 1);
  assert.equal(asked.toWit().requests[0][1].val.tag, "url");
});

test("sampling and roots answers are read by key", () => {
  const sampled = {
    tag: "sampling",
    val: {
      role: "assistant",
      model: "m",
      stopReason: "endTurn",
      content: [
        { tag: "text", val: { text: "Hel", annotations: undefined } },
        { tag: "text", val: { text: "lo", annotations: undefined } },
      ],
    },
  };
  const roots = { tag: "roots", val: [{ uri: "file:///a", name: "a" }] };
  let seen;
  tool({ name: "unit_read_answers", description: "Reads answers." }, (call) => {
    seen = { sampling: call.sampling("s"), roots: call.roots("r"), missing: call.roots("s"), noForm: call.elicitation("s") };
    return "ok";
  });
  tools.callTool("unit_read_answers", "{}", retry({}, [["s", sampled], ["r", roots]]));
  assert.equal(seen.sampling.text, "Hello");
  assert.equal(seen.sampling.model, "m");
  assert.deepEqual(seen.roots, [{ uri: "file:///a", name: "a" }]);
  assert.equal(seen.missing, undefined, "an answer of another kind is no roots answer");
  assert.equal(seen.noForm, undefined, "nor an elicitation");
});

test("state that is not JSON reads as the fallback; bytes stay bytes", () => {
  let seen;
  tool({ name: "unit_state", description: "Reads its state." }, (call) => {
    seen = { parsed: call.state("fallback"), bytes: call.stateBytes };
    return "ok";
  });
  tools.callTool("unit_state", "{}", { ...firstRound(), state: Uint8Array.of(0xff, 0x00) });
  assert.equal(seen.parsed, "fallback");
  assert.deepEqual([...seen.bytes], [0xff, 0x00]);
});

test("client capabilities read with the SDK's names", () => {
  let seen;
  tool({ name: "unit_client", description: "Reads the client." }, (call) => {
    seen = call.client;
    return "ok";
  });
  tools.callTool("unit_client", "{}", firstRound({ ...NO_CLIENT, roots: true, samplingTools: true }));
  assert.equal(seen.canListRoots, true);
  assert.equal(seen.canSampleWithTools, true);
  assert.equal(seen.canElicitForm, false);
});

test("results carry every kind of block", () => {
  const result = Result.text("a")
    .withImage([1, 2], "image/png")
    .withResourceLink("x://l", "link", { size: 3 })
    .withResource("x://r", "body", "text/plain")
    .toWit();
  assert.deepEqual(
    result.content.map((block) => block.tag),
    ["text", "image", "resource-link", "embedded-resource"],
  );
  assert.equal(result.content[2].val.size, 3n, "sizes are u64 (BigInt)");
  assert.deepEqual(result.content[3].val.contents.body, { tag: "text", val: "body" });
});

prompt(
  { name: "unit_prompt", description: "Greets.", arguments: [{ name: "who", required: true }, { name: "style" }] },
  (request) => {
    if (!request.arguments.who) throw new InvalidArguments("who is missing");
    if (request.arguments.style === undefined && request.elicitation("style") === undefined) {
      return new InputRequired().elicitForm("style", "Which style?", { type: "object" });
    }
    return new PromptResult("greeting").user(`Hi ${request.arguments.who}`).assistant("Hello!");
  },
);

test("prompts list their arguments, render, ask and refuse", () => {
  const [listed] = prompts.listPrompts().filter((p) => p.name === "unit_prompt");
  assert.deepEqual(
    listed.arguments.map(({ name, required }) => [name, required]),
    [["who", true], ["style", false]],
  );
  const rendered = prompts.getPrompt("unit_prompt", [["who", "Ada"], ["style", "warm"]], firstRound());
  assert.equal(rendered.tag, "complete");
  assert.equal(rendered.val.description, "greeting");
  assert.deepEqual(
    rendered.val.messages.map((m) => [m.role, m.content.val.text]),
    [["user", "Hi Ada"], ["assistant", "Hello!"]],
  );
  assert.equal(prompts.getPrompt("unit_prompt", [["who", "Ada"]], firstRound()).tag, "input-required");
  assert.deepEqual(prompts.getPrompt("unit_prompt", [], firstRound()), {
    tag: "invalid-arguments",
    val: "who is missing",
  });
  assert.equal(prompts.getPrompt("nope", [], firstRound()).tag, "invalid-arguments");
  assert.throws(() => prompt({ name: "unit_vague" }, () => "x"), /prompt `unit_vague` needs `description`/);
});

resource({ uri: "unit://readme", name: "readme", mimeType: "text/plain", size: 5 }, () => "hello");
resource({ uri: "unit://bytes", name: "bytes" }, () => [contents("unit://bytes", [1, 2, 3], "application/octet-stream")]);
resource({ uri: "unit://png", name: "png", mimeType: "image/png" }, () => Uint8Array.of(0x89, 0x50));
resource({ uri: "unit://wrong", name: "wrong" }, () => 42);
template({ uriTemplate: "unit://item/{id}", name: "item" }, (read) =>
  read.variables.id === "1" ? `item ${read.variables.id} via ${read.template}` : undefined,
);

test("resources list, read, and are not found", () => {
  assert.deepEqual(
    resources.listResources().map((r) => r.uri),
    ["unit://readme", "unit://bytes", "unit://png", "unit://wrong", "ui://unit/app.html"],
  );
  assert.equal(resources.listResources()[0].size, 5n);
  assert.equal(resources.listResourceTemplates()[0].uriTemplate, "unit://item/{id}");
  const read = resources.readResource("unit://readme", undefined, firstRound());
  assert.deepEqual(read, {
    tag: "complete",
    val: [{ uri: "unit://readme", mimeType: "text/plain", body: { tag: "text", val: "hello" }, meta: undefined }],
  });
  const parts = resources.readResource("unit://bytes", undefined, firstRound());
  assert.deepEqual([...parts.val[0].body.val], [1, 2, 3]);
  const [png] = resources.readResource("unit://png", undefined, firstRound()).val;
  assert.equal(png.mimeType, "image/png");
  assert.equal(png.body.tag, "blob");
  assert.deepEqual([...png.body.val], [0x89, 0x50]);
  assert.throws(() => resources.readResource("unit://wrong", undefined, firstRound()), /not an outcome/);
  const match = { uriTemplate: "unit://item/{id}", variables: [["id", "1"]] };
  assert.equal(
    resources.readResource("unit://item/1", match, firstRound()).val[0].body.val,
    "item 1 via unit://item/{id}",
  );
  const missing = { uriTemplate: "unit://item/{id}", variables: [["id", "2"]] };
  assert.deepEqual(resources.readResource("unit://item/2", missing, firstRound()), { tag: "not-found" });
  assert.deepEqual(resources.readResource("unit://none", undefined, firstRound()), { tag: "not-found" });
  assert.throws(() => resource({ uri: "unit://nameless" }, () => "x"), /resource `unit:\/\/nameless` needs `name`/);
});

completer({ prompt: "unit_prompt", argument: "who" }, (request) =>
  Completion.matching(["Ada", "Alan", "Grace"], request.value),
);
completer({ template: "unit://item/{id}", argument: "id" }, () => ["1", "2"]);
completer({ prompt: "unit_prompt", argument: "style" }, () => Array.from({ length: MAX_VALUES + 1 }, (_, i) => `s${i}`));

test("completions match by prefix and are cut at the limit", () => {
  const ask = (target, argumentName, argumentValue) =>
    completions.complete({ target, argumentName, argumentValue, context: [] });
  assert.deepEqual(ask({ tag: "prompt", val: "unit_prompt" }, "who", "A"), {
    values: ["Ada", "Alan"],
    total: 2,
    hasMore: false,
  });
  assert.deepEqual(ask({ tag: "resource-template", val: "unit://item/{id}" }, "id", "").values, ["1", "2"]);
  assert.deepEqual(ask({ tag: "prompt", val: "unit_prompt" }, "who", "al").values, ["Alan"], "case is ignored");
  assert.deepEqual(ask({ tag: "prompt", val: "unit_prompt" }, "nobody", "").values, []);
  const cut = ask({ tag: "prompt", val: "unit_prompt" }, "style", "");
  assert.equal(cut.values.length, MAX_VALUES, "a completer's long list is cut");
  assert.equal(cut.hasMore, true);
  const many = Completion.matching(
    Array.from({ length: MAX_VALUES + 5 }, (_, i) => `v${i}`),
    "v",
  );
  assert.equal(many.values.length, MAX_VALUES);
  assert.equal(many.total, MAX_VALUES + 5);
  assert.equal(many.hasMore, true);
});

tool(
  {
    name: "unit_show",
    description: "Shows a table in its App.",
    app: "ui://unit/app.html",
    visibility: ["app", "model"],
    meta: { other: 1, ui: { kept: true } },
  },
  () => "shown",
);

const UNIT_UI = {
  csp: { connectDomains: ["https://api.example.com"], frameDomains: [] },
  permissions: { clipboardWrite: true, camera: false },
  prefersBorder: false,
};
const UNIT_UI_JSON = {
  csp: { connectDomains: ["https://api.example.com"] },
  permissions: { clipboardWrite: {} },
  prefersBorder: false,
};

appResource({ uri: "ui://unit/app.html", name: "unit_app", ui: UNIT_UI, meta: { other: 2 } }, () => "<p>app</p>");

test("a tool names its App and who may call it, beside its other meta", () => {
  const listed = tools.listTools();
  const show = listed.find((t) => t.name === "unit_show");
  assert.deepEqual(JSON.parse(show.meta), {
    other: 1,
    ui: { kept: true, resourceUri: "ui://unit/app.html", visibility: ["app", "model"] },
  });
  assert.equal(listed.find((t) => t.name === "unit_add").meta, undefined, "no meta unless given");
});

test("meta that is not an object, unknown callers and unknown ui members are refused", () => {
  const declare = (spec) => () => tool({ name: "unit_bad", description: "bad", ...spec }, () => "x");
  assert.throws(declare({ meta: ["ui"] }), /`meta` must be an object/);
  assert.throws(declare({ meta: null }), /`meta` must be an object/);
  assert.throws(declare({ visibility: ["everyone"] }), /`visibility` is a list of "model", "app"/);
  assert.throws(declare({ visibility: "app" }), /`visibility` is a list/);
  assert.throws(declare({ app: 7 }), /`app` must be a string/);
  const app = (ui) => () => appResource({ uri: "ui://unit/bad.html", name: "bad", ui }, () => "x");
  assert.throws(app({ csp: { connectDomain: ["x"] } }), /`ui.csp` has no member `connectDomain`/);
  assert.throws(app({ csp: { connectDomains: "https://x" } }), /`ui.csp.connectDomains` must be a list of origins/);
  assert.throws(app({ permissions: { clipboard: true } }), /`ui.permissions` has no member `clipboard`/);
  assert.throws(app({ permissions: { camera: "yes" } }), /`ui.permissions.camera` must be a boolean/);
  assert.throws(app({ border: true }), /an App's `ui` has no member `border`/);
  assert.throws(app({ prefersBorder: "yes" }), /`ui.prefersBorder` must be a boolean/);
  assert.equal(tools.listTools().filter((t) => t.name === "unit_bad").length, 0);
  assert.equal(resources.listResources().filter((r) => r.uri === "ui://unit/bad.html").length, 0);
});

test("an App is listed and read with its MIME type and ui", () => {
  const listed = resources.listResources().find((r) => r.uri === "ui://unit/app.html");
  assert.equal(listed.mimeType, APP_MIME_TYPE);
  assert.deepEqual(JSON.parse(listed.meta), { other: 2, ui: UNIT_UI_JSON });
  const [read] = resources.readResource("ui://unit/app.html", undefined, firstRound()).val;
  assert.equal(read.mimeType, "text/html;profile=mcp-app");
  assert.deepEqual(read.body, { tag: "text", val: "<p>app</p>" });
  assert.deepEqual(JSON.parse(read.meta), { other: 2, ui: UNIT_UI_JSON });
});

test("App contents carry the MIME type and ui", () => {
  const part = appContents("ui://unit/other.html", "<p>", { domain: "a.example.com" });
  assert.equal(part.mimeType, APP_MIME_TYPE);
  assert.deepEqual(JSON.parse(part.meta), { ui: { domain: "a.example.com" } });
  assert.equal(appContents("ui://unit/other.html", "<p>").meta, undefined);
  const everything = { camera: true, microphone: true, geolocation: true, clipboardWrite: true };
  const all = appContents("ui://unit/other.html", "<p>", { csp: {}, permissions: everything });
  assert.deepEqual(JSON.parse(all.meta).ui, {
    csp: {},
    permissions: { camera: {}, microphone: {}, geolocation: {}, clipboardWrite: {} },
  });
});

prompt({ name: "unit_meta_prompt", description: "Has metadata.", meta: { origin: "unit" } }, () => "hi");
template({ uriTemplate: "unit://meta/{id}", name: "unit_meta_template", meta: { origin: "unit" } }, () => "x");

test("every other item carries meta", () => {
  assert.deepEqual(JSON.parse(prompts.listPrompts().find((p) => p.name === "unit_meta_prompt").meta), { origin: "unit" });
  assert.equal(prompts.listPrompts().find((p) => p.name === "unit_prompt").meta, undefined);
  const metaTemplate = resources.listResourceTemplates().find((t) => t.name === "unit_meta_template");
  assert.deepEqual(JSON.parse(metaTemplate.meta), { origin: "unit" });
  assert.deepEqual(JSON.parse(contents("unit://x", "x", undefined, { a: 1 }).meta), { a: 1 });
  const embedded = new Result().withResource("unit://x", "x", undefined, { b: 2 }).content[0];
  assert.deepEqual(JSON.parse(embedded.val.contents.meta), { b: 2 });
  assert.throws(() => contents("unit://x", "x", undefined, "{}"), /`meta` must be an object/);
});
