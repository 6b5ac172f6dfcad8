// Declaring tools and running their calls. `tool(spec, handler)` registers a
// handler; `tools` is the component's `tools` export (the app re-exports it).

import { toolMeta } from "./apps.js";
import { InputRequired } from "./asking.js";
import { Result, metaJson, toJson } from "./content.js";
import { reportingCrashes } from "./crash.js";
import { requireStrings } from "./declare.js";
import { Inputs } from "./inputs.js";

const encoder = new TextEncoder();

/** Ends the call with an error result the model can read and correct. */
export class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = "ToolError";
  }
}

/** Runs the rest of the call as a task, from a next round that starts with `state`. */
export class ContinueAsTask {
  constructor(state = undefined) {
    this.state = state;
  }
}

/** Ends the call (or task) with a JSON-RPC error. */
export class Failed {
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}

/** One round of a call of one tool: its name and arguments, and the round's inputs. */
export class Call extends Inputs {
  constructor(name, args, round) {
    super(round);
    this.name = name;
    this.arguments = args;
  }
}

const registered = new Map();

/** Declares a tool: `spec` names and describes it, `handler(call)` runs its calls. */
export function tool(spec, handler) {
  requireStrings("tool", spec, ["name", "description"]);
  const { name, description, title, inputSchema, outputSchema, taskSupport = "never", app, visibility, meta } = spec;
  if (registered.has(name)) throw new Error(`tool \`${name}\` is declared twice`);
  const hints = {
    title,
    readOnlyHint: spec.readOnly,
    destructiveHint: spec.destructive,
    idempotentHint: spec.idempotent,
    openWorldHint: spec.openWorld,
  };
  const listing = {
    name,
    title,
    description,
    inputSchema: toJson(inputSchema ?? { type: "object" }),
    outputSchema: outputSchema === undefined ? undefined : toJson(outputSchema),
    annotations: Object.values(hints).some((hint) => hint !== undefined) ? hints : undefined,
    taskSupport,
    meta: metaJson(toolMeta(meta, app, visibility)),
  };
  registered.set(name, { listing, handler });
  return handler;
}

/** What a handler returned, as the contract's `call-outcome`. */
export function callOutcome(outcome) {
  if (typeof outcome === "string") return { tag: "complete", val: Result.text(outcome).toWit() };
  if (outcome instanceof Result) return { tag: "complete", val: outcome.toWit() };
  if (outcome instanceof InputRequired) return { tag: "input-required", val: outcome.toWit() };
  if (outcome instanceof ContinueAsTask) {
    const state = outcome.state === undefined ? undefined : encoder.encode(toJson(outcome.state));
    return { tag: "continue-as-task", val: state };
  }
  if (outcome instanceof Failed) return { tag: "failed", val: { code: outcome.code, message: outcome.message } };
  if (outcome !== null && typeof outcome === "object") return { tag: "complete", val: Result.json(outcome).toWit() };
  throw new TypeError(`a tool handler returned ${outcome}, which is not an outcome`);
}

/** The component's `tools` export: the tools declared with `tool`. */
export const tools = reportingCrashes({
  listTools() {
    return [...registered.values()].map(({ listing }) => listing);
  },

  callTool(name, argumentsJson, round) {
    const entry = registered.get(name);
    if (entry === undefined) return callOutcome(Result.error(`unknown tool \`${name}\``));
    try {
      const args = JSON.parse(argumentsJson);
      if (args === null || typeof args !== "object" || Array.isArray(args)) {
        throw new ToolError(`the arguments of \`${name}\` must be a JSON object`);
      }
      return callOutcome(entry.handler(new Call(name, args, round)));
    } catch (err) {
      if (err instanceof ToolError) return callOutcome(Result.error(err.message));
      throw err;
    }
  },
});
