// Checked by `tsc --noEmit --strict` (scripts/test-javascript-sdk): the SDK's
// types (airlock-guest/index.d.ts) used as a tool author writing TypeScript
// would use them. Never run; a wrong declaration fails the check.

import {
  type AppUi,
  type Call,
  type Json,
  Completion,
  ContinueAsTask,
  Failed,
  InputRequired,
  InvalidArguments,
  PromptResult,
  Result,
  Sampling,
  ToolError,
  appContents,
  appResource,
  completer,
  contents,
  log,
  progress,
  prompt,
  resource,
  template,
  tool,
} from "../airlock-guest/index.js";

tool(
  {
    name: "pick",
    description: "Asks which item to keep.",
    inputSchema: { type: "object", properties: { items: { type: "array" } } },
    readOnly: true,
    taskSupport: "optional",
  },
  (call) => {
    const items = call.arguments.items;
    if (!Array.isArray(items)) throw new ToolError("`items` must be a list");
    const answer = call.elicitation("keep");
    if (answer === undefined) {
      const schema = { type: "object", properties: { keep: { type: "string" } } };
      return new InputRequired()
        .elicitForm("keep", "Which one?", schema)
        .sample("why", new Sampling(100, { temperature: 0.2 }).user("Why?"))
        .withState({ offered: items })
        .retainSupported(call.client);
    }
    if (call.isTask) return new ContinueAsTask({ step: call.round });
    if (!answer.accepted) return new Failed(-32602, "nothing kept");
    const offered = call.state<{ offered: string[] }>({ offered: [] }).offered;
    log.info(`kept one of ${offered.length}`);
    progress(1, 1);
    return Result.text(String(answer.acceptedContent()?.keep)).withStructured({ offered });
  },
);

prompt({ name: "greet", description: "Greets someone.", arguments: [{ name: "who", required: true }] }, (request) => {
  if (!request.arguments.who) throw new InvalidArguments("who?");
  return new PromptResult("a greeting").user(`Greet ${request.arguments.who}`);
});

resource({ uri: "x://readme", name: "readme" }, () => "hello");
resource({ uri: "x://logo", name: "logo", mimeType: "image/png" }, () => Uint8Array.of(0x89, 0x50));
template({ uriTemplate: "x://item/{id}", name: "item" }, (read) => [contents(read.uri, `item ${read.variables.id}`)]);
completer({ template: "x://item/{id}", argument: "id" }, (request) => Completion.matching(["1", "2"], request.value));
tool({ name: "twice", description: "Returns its arguments twice." }, (call) => [call.arguments, call.arguments]);

// An MCP App: the tools name it, the page is listed and read with its `ui`.
const ui: AppUi = { csp: { connectDomains: ["https://api.example.com"] }, permissions: { camera: true }, prefersBorder: true };
tool({ name: "chart", description: "Draws a chart.", app: "ui://chart/app.html", meta: { origin: "x" } }, () => "drawn");
tool({ name: "redraw", description: "Redraws.", app: "ui://chart/app.html", visibility: ["app"] }, () => "again");
appResource({ uri: "ui://chart/app.html", name: "chart", ui }, () => "<!doctype html>");
resource({ uri: "x://parts", name: "parts", meta: { a: 1 }, readMeta: { b: 2 } }, (read) => [
  appContents(read.uri, "<p>", ui),
  contents(read.uri, "text", "text/plain", { c: 3 }),
]);
prompt({ name: "meta", description: "Has meta.", meta: { d: 4 } }, () => "hi");

// Misuses the declarations must refuse.
// @ts-expect-error: a handler must return an outcome, not a number.
tool({ name: "bad", description: "returns a number" }, () => 42);
// @ts-expect-error: a tool needs a description.
tool({ name: "undescribed" }, () => "ok");
// @ts-expect-error: so does a prompt.
prompt({ name: "undescribed" }, () => "ok");
// @ts-expect-error: handlers run synchronously; a promise is no outcome.
tool({ name: "later", description: "async" }, async () => "ok");
// @ts-expect-error: visibility names the model or the app.
tool({ name: "seen", description: "everyone", visibility: ["everyone"] }, () => "ok");
// @ts-expect-error: a permission is asked with `true`, not named.
appResource({ uri: "ui://x", name: "x", ui: { permissions: ["camera"] } }, () => "<p>");
// @ts-expect-error: `meta` is a JSON object.
prompt({ name: "listed", description: "meta as text", meta: "{}" }, () => "ok");
// @ts-expect-error: without a fallback, the state may be missing.
export const stateOf = (call: Call): Json => call.state();
