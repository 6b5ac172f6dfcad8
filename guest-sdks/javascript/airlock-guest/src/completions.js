// Argument completion for prompts and resource templates: `completer(spec,
// suggest)` declares one; `completions` is the export.

import { reportingCrashes } from "./crash.js";

/** Most values one completion may hold; longer lists are cut (and `hasMore` set). */
export const MAX_VALUES = 100;

/** Suggested values. */
export class Completion {
  constructor(values, { total = undefined, hasMore = false } = {}) {
    this.values = values;
    this.total = total;
    this.hasMore = hasMore;
  }

  /** The `candidates` that start with `prefix` (ignoring case), at most `MAX_VALUES` of them. */
  static matching(candidates, prefix) {
    const typed = prefix.toLowerCase();
    const found = [...candidates].filter((c) => c.toLowerCase().startsWith(typed));
    return new Completion(found.slice(0, MAX_VALUES), { total: found.length, hasMore: found.length > MAX_VALUES });
  }
}

const registered = new Map();
const keyOf = (kind, target, argument) => `${kind}\u0000${target}\u0000${argument}`;

/** Declares `suggest` the completer of `spec.argument` of `spec.prompt` or `spec.template`. */
export function completer(spec, suggest) {
  const kind = spec.prompt !== undefined ? "prompt" : "resource-template";
  const key = keyOf(kind, spec.prompt ?? spec.template, spec.argument);
  if (registered.has(key)) throw new Error(`completer of \`${spec.argument}\` is declared twice`);
  registered.set(key, suggest);
  return suggest;
}

/** The component's `completions` export. */
export const completions = reportingCrashes({
  complete(request) {
    const suggest = registered.get(keyOf(request.target.tag, request.target.val, request.argumentName));
    const none = { values: [], total: undefined, hasMore: false };
    if (suggest === undefined) return none;
    const found = suggest({
      prompt: request.target.tag === "prompt" ? request.target.val : undefined,
      template: request.target.tag === "resource-template" ? request.target.val : undefined,
      argument: request.argumentName,
      value: request.argumentValue,
      context: Object.fromEntries(request.context),
    });
    const { values, total, hasMore } = found instanceof Completion ? found : new Completion(found);
    return { values: values.slice(0, MAX_VALUES), total, hasMore: hasMore || values.length > MAX_VALUES };
  },
});
