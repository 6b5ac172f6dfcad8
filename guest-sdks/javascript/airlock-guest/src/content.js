// Results and the content blocks they carry: a builder over the contract's
// `call-result` record.

/** A JSON value as the compact text the contract's `json` type carries. */
export const toJson = (value) => JSON.stringify(value);

/** Throws unless `meta` (an item's `_meta`) is undefined or a JSON object; returns it. */
export function checkMeta(meta) {
  if (meta !== undefined && (meta === null || typeof meta !== "object" || Array.isArray(meta))) {
    throw new TypeError("`meta` must be an object (a JSON object)");
  }
  return meta;
}

/** An item's `_meta` as the contract's `json` text, or `undefined` when there is none. */
export const metaJson = (meta) => (checkMeta(meta) === undefined ? undefined : toJson(meta));

/** A plain text content block. */
export const textBlock = (text) => ({ tag: "text", val: { text, annotations: undefined } });

/** The contents of one resource: text for a string, a blob for bytes; `meta` is their `_meta`. */
export function resourceContents(uri, body, mimeType, meta) {
  const wireBody = typeof body === "string" ? { tag: "text", val: body } : { tag: "blob", val: Uint8Array.from(body) };
  return { uri, mimeType, body: wireBody, meta: metaJson(meta) };
}

/** The complete result of a tool call, built up block by block. */
export class Result {
  constructor() {
    this.content = [];
    this.structured = undefined;
    this.isError = false;
  }

  static text(text) {
    return new Result().withText(text);
  }

  static error(message) {
    const result = new Result().withText(message);
    result.isError = true;
    return result;
  }

  static json(value) {
    return new Result().withText(toJson(value)).withStructured(value);
  }

  withText(text) {
    this.content.push(textBlock(text));
    return this;
  }

  withImage(data, mimeType) {
    this.content.push({ tag: "image", val: { data: Uint8Array.from(data), mimeType, annotations: undefined } });
    return this;
  }

  withAudio(data, mimeType) {
    this.content.push({ tag: "audio", val: { data: Uint8Array.from(data), mimeType, annotations: undefined } });
    return this;
  }

  withResourceLink(uri, name, { title, description, mimeType, size } = {}) {
    const link = { uri, name, title, description, mimeType, size: size === undefined ? undefined : BigInt(size), annotations: undefined };
    this.content.push({ tag: "resource-link", val: link });
    return this;
  }

  withResource(uri, body, mimeType, meta) {
    this.content.push({ tag: "embedded-resource", val: { contents: resourceContents(uri, body, mimeType, meta), annotations: undefined } });
    return this;
  }

  withStructured(value) {
    this.structured = toJson(value);
    return this;
  }

  /** The contract's `call-result`. */
  toWit() {
    return { content: this.content, structuredContent: this.structured, isError: this.isError };
  }
}
