// Asking the client for input mid-call (Multi Round-Trip Requests): requests
// named by keys the tool chooses, and state bytes for the next round, which
// Airlock seals.

import { toJson } from "./content.js";

const encoder = new TextEncoder();

/** A request for a completion from the client's model. */
export class Sampling {
  constructor(maxTokens, { systemPrompt, temperature, modelHints = [], stopSequences = [] } = {}) {
    Object.assign(this, { maxTokens, systemPrompt, temperature, modelHints, stopSequences, messages: [] });
  }

  user(text) {
    return this.message("user", text);
  }

  assistant(text) {
    return this.message("assistant", text);
  }

  message(role, text) {
    this.messages.push({ role, content: [{ tag: "text", val: { text, annotations: undefined } }] });
    return this;
  }

  /** The contract's `sampling-request`. */
  toWit() {
    const hints = this.modelHints.map((name) => ({ name }));
    return {
      messages: this.messages,
      maxTokens: this.maxTokens,
      systemPrompt: this.systemPrompt,
      modelPreferences: hints.length ? { hints, costPriority: undefined, speedPriority: undefined, intelligencePriority: undefined } : undefined,
      includeContext: undefined,
      temperature: this.temperature,
      stopSequences: this.stopSequences,
      metadata: undefined,
      tools: [],
      toolChoice: undefined,
    };
  }
}

/** Whether a client (`call.client`) can answer a request. */
function supports(client, request) {
  if (request.tag === "roots") return client.canListRoots;
  if (request.tag === "sampling") return client.canSample;
  return request.val.tag === "url" ? client.canElicitUrl : client.canElicitForm;
}

/** What a round needs before the call can finish; methods chain. */
export class InputRequired {
  constructor() {
    this.requests = [];
    this.state = undefined;
  }

  request(key, request) {
    this.requests = this.requests.filter(([k]) => k !== key);
    this.requests.push([key, request]);
    return this;
  }

  elicitForm(key, message, schema) {
    const requestedSchema = typeof schema === "string" ? schema : toJson(schema);
    return this.request(key, { tag: "elicitation", val: { tag: "form", val: { message, requestedSchema } } });
  }

  elicitUrl(key, message, url) {
    return this.request(key, { tag: "elicitation", val: { tag: "url", val: { message, url } } });
  }

  sample(key, sampling) {
    return this.request(key, { tag: "sampling", val: sampling.toWit() });
  }

  listRoots(key) {
    return this.request(key, { tag: "roots" });
  }

  withState(value) {
    this.state = encoder.encode(toJson(value));
    return this;
  }

  withStateBytes(data) {
    this.state = Uint8Array.from(data);
    return this;
  }

  retainSupported(client) {
    this.requests = this.requests.filter(([, request]) => supports(client, request));
    return this;
  }

  /** The contract's `input-required`. */
  toWit() {
    return { requests: this.requests, state: this.state };
  }
}
