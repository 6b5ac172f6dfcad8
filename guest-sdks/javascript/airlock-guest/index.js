// Write MCP tools for Airlock in JavaScript, as WebAssembly components built
// with componentize-js. The types, with their documentation, are in index.d.ts.
//
// A tool is a function declared with `tool(...)`; the app module re-exports
// `tools` so the component exports it:
//
//     import { tool } from "airlock-guest";
//     export { tools } from "airlock-guest";
//
//     tool({ name: "greet", description: "Greets someone." }, (call) => `Hello, ${call.arguments.name}!`);
//
// Every call, and every round of a multi-round call, runs in a fresh instance:
// module-level variables start from their build-time values each time. What the
// next round needs travels in the state of `InputRequired`, which Airlock seals.

export { Result } from "./src/content.js";
export { InputRequired, Sampling } from "./src/asking.js";
export { Inputs } from "./src/inputs.js";
export { Call, ContinueAsTask, Failed, ToolError, tool, tools } from "./src/tools.js";
export { log, progress, notify } from "./src/log.js";
export { InvalidArguments, PromptResult, prompt, prompts } from "./src/prompts.js";
export { appContents, appResource, contents, resource, template, resources } from "./src/resources.js";
export { APP_MIME_TYPE } from "./src/apps.js";
export { Completion, MAX_VALUES, completer, completions } from "./src/completions.js";
