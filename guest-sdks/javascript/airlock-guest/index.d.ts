// Types of the JavaScript guest SDK (index.js). Tools written in TypeScript
// check against these; componentize-js itself takes the bundled JavaScript.

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object (tool arguments, form answers, an item's `_meta`). */
export type JsonObject = { [key: string]: Json };

// ---------------------------------------------------------------- results

/** The complete result of a tool call, built up block by block; methods chain. */
export class Result {
  content: unknown[];
  structured: string | undefined;
  isError: boolean;
  /** A result with one text block. */
  static text(text: string): Result;
  /** An error result the model can read and correct. */
  static error(message: string): Result;
  /** A result with `value` as text and as structured content. */
  static json(value: Json): Result;
  /** Adds a text block. */
  withText(text: string): this;
  /** Adds an image (raw bytes; Airlock base64-encodes them), e.g. `image/png`. */
  withImage(data: ArrayLike<number>, mimeType: string): this;
  /** Adds an audio clip (raw bytes), e.g. `audio/wav`. */
  withAudio(data: ArrayLike<number>, mimeType: string): this;
  /** Adds a link to a resource the client may read. */
  withResourceLink(
    uri: string,
    name: string,
    options?: { title?: string; description?: string; mimeType?: string; size?: number },
  ): this;
  /** An embedded resource: text for a string, a blob for bytes; `meta` is its `_meta`. */
  withResource(uri: string, body: string | ArrayLike<number>, mimeType?: string, meta?: JsonObject): this;
  /** Structured content (checked against the tool's `outputSchema` by clients). */
  withStructured(value: Json): this;
}

// ---------------------------------------------------------------- asking for input

/** A request for a completion from the client's model; methods chain. */
export class Sampling {
  constructor(
    maxTokens: number,
    options?: { systemPrompt?: string; temperature?: number; modelHints?: string[]; stopSequences?: string[] },
  );
  /** Adds a user message. */
  user(text: string): this;
  /** Adds an assistant message. */
  assistant(text: string): this;
  /** Adds a text message of either role. */
  message(role: "user" | "assistant", text: string): this;
}

/** What the client can answer: forms, URLs, sampling, roots, tasks. */
export interface ClientCapabilities {
  canElicitForm: boolean;
  canElicitUrl: boolean;
  canSample: boolean;
  canSampleWithTools: boolean;
  canSampleWithContext: boolean;
  canListRoots: boolean;
  canUseTasks: boolean;
}

/**
 * What a round needs before the call can finish: requests to the client by
 * key, and state for the next round (sealed by Airlock). Methods chain.
 */
export class InputRequired {
  /** Asks for a form; `schema` is a JSON schema of flat properties. */
  elicitForm(key: string, message: string, schema: JsonObject | string): this;
  /** Asks the user to visit `url` (e.g. to sign in somewhere). */
  elicitUrl(key: string, message: string, url: string): this;
  /** Asks the client's model. */
  sample(key: string, sampling: Sampling): this;
  /** Asks for the client's roots. */
  listRoots(key: string): this;
  /** State for the next round, as JSON. */
  withState(value: Json): this;
  /** State for the next round, as bytes. */
  withStateBytes(data: ArrayLike<number>): this;
  /** Drops the requests `client` cannot answer. */
  retainSupported(client: ClientCapabilities): this;
}

/** The client's answer to a form or URL request. */
export interface ElicitationAnswer {
  action: "accept" | "decline" | "cancel";
  content: JsonObject | undefined;
  accepted: boolean;
  /** The form's content when accepted, else `undefined`. */
  acceptedContent(): JsonObject | undefined;
}

/** The client's model's answer to a sampling request. */
export interface SamplingAnswer {
  model: string;
  stopReason: string | undefined;
  content: unknown[];
  /** The text blocks, joined. */
  text: string;
  toolUses: unknown[];
}

/** One of the client's roots. */
export interface Root {
  uri: string;
  name: string | undefined;
}

/** One round: its number, the answers by key, the state, the client. */
export class Inputs {
  /** 1 for the first request, then one more per retry. */
  readonly round: number;
  /** Whether this round runs as a task. */
  readonly isTask: boolean;
  /** What the client can answer on this request. */
  readonly client: ClientCapabilities;
  /** The state returned last round, as bytes. */
  readonly stateBytes: Uint8Array | undefined;
  /** The state returned last round, parsed as JSON (`undefined` if none or not JSON). */
  state<T = Json>(): T | undefined;
  /** The state returned last round, parsed as JSON (`fallback` if none or not JSON). */
  state<T = Json>(fallback: T): T;
  /** The raw answer under `key`. */
  response(key: string): unknown;
  /** The answer to the form or URL asked under `key` (`undefined` if none, or of another kind). */
  elicitation(key: string): ElicitationAnswer | undefined;
  /** The answer to the sampling request asked under `key`. */
  sampling(key: string): SamplingAnswer | undefined;
  /** The client's roots, asked for under `key`. */
  roots(key: string): Root[] | undefined;
}

// ---------------------------------------------------------------- tools

/** One round of a call of one tool. */
export class Call extends Inputs {
  readonly name: string;
  readonly arguments: JsonObject;
}

/** Thrown by a handler: ends the call with an error result the model can read. */
export class ToolError extends Error {
  constructor(message: string);
}

/** Goes on as a task, from a next round that starts with `state`. */
export class ContinueAsTask {
  constructor(state?: Json);
  /** The next round's state. */
  readonly state: Json | undefined;
}

/** Ends the call (or task) with a JSON-RPC error. */
export class Failed {
  constructor(code: number, message: string);
  /** The JSON-RPC error code. */
  readonly code: number;
  readonly message: string;
}

/**
 * What a tool handler returns: text, a result, JSON (structured content, also
 * given as text), a question, or a task step.
 */
export type Outcome = string | Result | InputRequired | ContinueAsTask | Failed | JsonObject | Json[];

/** How a tool is listed. */
export interface ToolSpec {
  /** 1 to 64 characters of `A-Z a-z 0-9 _ - .`, unique across the server. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  title?: string;
  /** JSON Schema of the arguments, an object schema (default: any object). */
  inputSchema?: JsonObject;
  /** JSON Schema of the structured content, when the tool returns it. */
  outputSchema?: JsonObject;
  /** Hints for clients (which must not trust them). */
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  openWorld?: boolean;
  /** Whether calls may run as tasks (default `"never"`). */
  taskSupport?: "never" | "optional" | "required";
  /** The `ui://` resource of the MCP App that renders its results (`_meta.ui.resourceUri`). */
  app?: string;
  /** Who may call it (`_meta.ui.visibility`); both when unset. */
  visibility?: Visibility[];
  /** Any other `_meta`. */
  meta?: JsonObject;
}

/** Declares a tool; returns `handler`. */
export function tool<H extends (call: Call) => Outcome>(spec: ToolSpec, handler: H): H;

/** The component's `tools` export: re-export it from the app. */
export const tools: object;

// ---------------------------------------------------------------- logs

/** Logs at each level (to Airlock's log, and to a client that asked for them). */
export const log: {
  debug(message: string): void;
  info(message: string): void;
  notice(message: string): void;
  warning(message: string): void;
  error(message: string): void;
};

/** Reports progress of the current call; `done` must grow with each report. */
export function progress(done: number, total?: number, message?: string): void;

/** Reports changes the host cannot see by itself. */
export const notify: {
  listChanged(kind: "tools" | "prompts" | "resources"): void;
  resourceUpdated(uri: string): void;
};

// ---------------------------------------------------------------- prompts

/** Thrown by a prompt handler: the client gets -32602 with this message. */
export class InvalidArguments extends Error {
  constructor(message: string);
}

/** The messages of a prompt; methods chain. */
export class PromptResult {
  constructor(description?: string);
  /** Adds a user message of text. */
  user(text: string): this;
  /** Adds an assistant message of text. */
  assistant(text: string): this;
  /** Adds a message of any content block (the contract's `content-block`). */
  message(role: "user" | "assistant", content: unknown): this;
}

/** One request for a prompt. */
export interface PromptRequest extends Inputs {
  readonly name: string;
  readonly arguments: { [name: string]: string | undefined };
}

/** How a prompt is listed. */
export interface PromptSpec {
  name: string;
  title?: string;
  /** What the prompt is for. */
  description: string;
  arguments?: { name: string; title?: string; description?: string; required?: boolean }[];
  /** Its `_meta`. */
  meta?: JsonObject;
}

/** Declares a prompt; returns `handler`. */
export function prompt<H extends (request: PromptRequest) => string | PromptResult | InputRequired>(
  spec: PromptSpec,
  handler: H,
): H;

/** The component's `prompts` export: re-export it from the app. */
export const prompts: object;

// ---------------------------------------------------------------- resources

/** One part of a read's result. */
export interface ResourceContents {
  uri: string;
  mimeType: string | undefined;
  body: unknown;
  /** Its `_meta`, as JSON text. */
  meta: string | undefined;
}

/** One part of a read's result: text for a string, a blob for bytes; `meta` is its `_meta`. */
export function contents(
  uri: string,
  body: string | ArrayLike<number>,
  mimeType?: string,
  meta?: JsonObject,
): ResourceContents;

/** One read of a resource. */
export interface ResourceRead extends Inputs {
  readonly uri: string;
  /** The template matched, for a templated resource. */
  readonly template: string | undefined;
  /** The template's variables, for a templated resource. */
  readonly variables: { [name: string]: string };
}

/**
 * What a reader returns: the body (text, or bytes for a blob), several parts,
 * a question, or nothing (not found).
 */
export type ReadOutcome = string | Uint8Array | ResourceContents[] | InputRequired | undefined | null;

/** How a fixed resource is listed. */
export interface ResourceSpec {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
  /** Its `_meta` as listed. */
  meta?: JsonObject;
  /** The `_meta` of the contents made of a string or bytes the reader returns. */
  readMeta?: JsonObject;
}

/** Declares the reader of one fixed resource; returns `reader`. */
export function resource<R extends (read: ResourceRead) => ReadOutcome>(spec: ResourceSpec, reader: R): R;

/** Declares the reader of every URI matching `spec.uriTemplate` (RFC 6570 `{var}`, `{+var}`). */
export function template<R extends (read: ResourceRead) => ReadOutcome>(
  spec: { uriTemplate: string; name: string; title?: string; description?: string; mimeType?: string; meta?: JsonObject },
  reader: R,
): R;

/** The component's `resources` export: re-export it from the app. */
export const resources: object;

// ---------------------------------------------------------------- apps

/** The MIME type of an MCP App's HTML (`text/html;profile=mcp-app`). */
export const APP_MIME_TYPE: string;

/** Who may call a tool that has an App: the model, or the App through its host. */
export type Visibility = "model" | "app";

/** How a client should present an App: its resource's `_meta.ui`. */
export interface AppUi {
  /** The origins the App may reach; none unless listed. */
  csp?: {
    /** Origins for `fetch`, XHR and WebSocket. */
    connectDomains?: string[];
    /** Origins for scripts, styles, images, fonts and media. */
    resourceDomains?: string[];
    /** Origins for nested frames. */
    frameDomains?: string[];
    /** Origins allowed as the document's base URI. */
    baseUriDomains?: string[];
  };
  /** The browser permissions the App asks for. */
  permissions?: { camera?: boolean; microphone?: boolean; geolocation?: boolean; clipboardWrite?: boolean };
  /** A dedicated origin for the App, if the client supports one. */
  domain?: string;
  /** Whether the App prefers the client to draw a border around it. */
  prefersBorder?: boolean;
}

/**
 * Declares the reader of an App's HTML at `spec.uri` (a `ui://` URI): listed, and
 * read when it returns a string, with the App MIME type and `spec.ui` as `_meta.ui`.
 */
export function appResource<R extends (read: ResourceRead) => ReadOutcome>(
  spec: { uri: string; name: string; title?: string; description?: string; ui?: AppUi; meta?: JsonObject },
  reader: R,
): R;

/** An App's HTML as one part of a read's result, with the App MIME type and `ui` as `_meta.ui`. */
export function appContents(uri: string, html: string, ui?: AppUi, meta?: JsonObject): ResourceContents;

// ---------------------------------------------------------------- completions

/** Most values one completion may hold; longer lists are cut (and `hasMore` set). */
export const MAX_VALUES: number;

/** Suggested values. */
export class Completion {
  constructor(values: string[], options?: { total?: number; hasMore?: boolean });
  values: string[];
  total: number | undefined;
  hasMore: boolean;
  /** The `candidates` that start with `prefix` (ignoring case), at most `MAX_VALUES` of them. */
  static matching(candidates: Iterable<string>, prefix: string): Completion;
}

/** One request for completions of an argument. */
export interface CompletionRequest {
  prompt: string | undefined;
  template: string | undefined;
  argument: string;
  value: string;
  /** Arguments already given. */
  context: { [name: string]: string };
}

/** Declares the completer of `spec.argument` of a prompt or a resource template. */
export function completer<S extends (request: CompletionRequest) => Completion | string[]>(
  spec: { prompt: string; argument: string } | { template: string; argument: string },
  suggest: S,
): S;

/** The component's `completions` export: re-export it from the app. */
export const completions: object;
