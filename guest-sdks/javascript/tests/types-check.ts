// Checked by `tsc --noEmit --strict` (scripts/test-javascript-sdk): the SDK's
// types (airlock-guest/index.d.ts) used as a tool author writing TypeScript
// would use them. Never run; a wrong declaration fails the check.

import {
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

// Misuses the declarations must refuse.
// @ts-expect-error: a handler must return an outcome, not a number.
tool({ name: "bad", description: "returns a number" }, () => 42);
// @ts-expect-error: a tool needs a description.
tool({ name: "undescribed" }, () => "ok");
// @ts-expect-error: so does a prompt.
prompt({ name: "undescribed" }, () => "ok");
// @ts-expect-error: handlers run synchronously; a promise is no outcome.
tool({ name: "later", description: "async" }, async () => "ok");
// @ts-expect-error: without a fallback, the state may be missing.
export const stateOf = (call: Call): Json => call.state();
