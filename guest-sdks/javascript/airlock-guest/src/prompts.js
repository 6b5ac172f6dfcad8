// Prompts: `prompt(spec, handler)` declares one; `prompts` is the export.

import { InputRequired } from "./asking.js";
import { metaJson, textBlock } from "./content.js";
import { reportingCrashes } from "./crash.js";
import { requireStrings } from "./declare.js";
import { Inputs } from "./inputs.js";

/** The arguments are wrong: the client gets -32602 with this message. */
export class InvalidArguments extends Error {
  constructor(message) {
    super(message);
    this.name = "InvalidArguments";
  }
}

/** The messages of a prompt; methods chain. */
export class PromptResult {
  constructor(description = undefined) {
    this.description = description;
    this.messages = [];
  }

  user(text) {
    return this.message("user", textBlock(text));
  }

  assistant(text) {
    return this.message("assistant", textBlock(text));
  }

  message(role, content) {
    this.messages.push({ role, content });
    return this;
  }
}

const registered = new Map();

/** Declares a prompt: `spec` names, describes it and lists its arguments. */
export function prompt(spec, handler) {
  requireStrings("prompt", spec, ["name", "description"]);
  const { name, title, description, arguments: args = [], meta } = spec;
  if (registered.has(name)) throw new Error(`prompt \`${name}\` is declared twice`);
  const listing = {
    name,
    title,
    description,
    arguments: args.map((a) => ({ name: a.name, title: a.title, description: a.description, required: a.required ?? false })),
    meta: metaJson(meta),
  };
  registered.set(name, { listing, handler });
  return handler;
}

function promptOutcome(outcome) {
  if (typeof outcome === "string") outcome = new PromptResult().user(outcome);
  if (outcome instanceof PromptResult) {
    return { tag: "complete", val: { description: outcome.description, messages: outcome.messages } };
  }
  if (outcome instanceof InputRequired) return { tag: "input-required", val: outcome.toWit() };
  throw new TypeError(`a prompt handler returned ${outcome}, which is not an outcome`);
}

/** The component's `prompts` export. */
export const prompts = reportingCrashes({
  listPrompts() {
    return [...registered.values()].map(({ listing }) => listing);
  },

  getPrompt(name, args, round) {
    const entry = registered.get(name);
    if (entry === undefined) return { tag: "invalid-arguments", val: `unknown prompt \`${name}\`` };
    const request = new Inputs(round);
    request.name = name;
    request.arguments = Object.fromEntries(args);
    try {
      return promptOutcome(entry.handler(request));
    } catch (err) {
      if (err instanceof InvalidArguments) return { tag: "invalid-arguments", val: err.message };
      throw err;
    }
  },
});
