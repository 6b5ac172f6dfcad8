// Resources: `resource(spec, reader)` declares a fixed one, `template(spec,
// reader)` a family, `appResource(spec, reader)` an MCP App's HTML; `resources`
// is the export.

import { APP_MIME_TYPE, appMeta } from "./apps.js";
import { InputRequired } from "./asking.js";
import { checkMeta, metaJson, resourceContents } from "./content.js";
import { reportingCrashes } from "./crash.js";
import { requireStrings } from "./declare.js";
import { Inputs } from "./inputs.js";

/** One part of a read's result. */
export const contents = resourceContents;

const fixed = new Map();
const templates = new Map();

// `readMeta` is the `_meta` of the contents made of a string or bytes the reader returns.
function declare(table, key, listing, reader, readMeta) {
  if (table.has(key)) throw new Error(`resource \`${key}\` is declared twice`);
  table.set(key, { listing, reader, readMeta: checkMeta(readMeta) });
  return reader;
}

/**
 * Declares the reader of the resource `spec.uri`, listed with `spec.meta` as its
 * `_meta`; a string or bytes it returns is read with `spec.mimeType` and `spec.readMeta`.
 */
export function resource(spec, reader) {
  requireStrings("resource", spec, ["uri", "name"]);
  const { uri, name, title, description, mimeType, size, meta, readMeta } = spec;
  const listing = {
    uri,
    name,
    title,
    description,
    mimeType,
    size: size === undefined ? undefined : BigInt(size),
    annotations: undefined,
    meta: metaJson(meta),
  };
  return declare(fixed, uri, listing, reader, readMeta);
}

/**
 * Declares the reader of an MCP App's HTML at `spec.uri` (a `ui://` URI): listed,
 * and read when it returns a string, with the App MIME type and `spec.ui` (how
 * to present the App) as `_meta.ui`, beside what `spec.meta` holds.
 */
export function appResource(spec, reader) {
  const { ui, meta, ...rest } = spec;
  const listed = appMeta(meta, ui);
  return resource({ ...rest, mimeType: APP_MIME_TYPE, meta: listed, readMeta: listed }, reader);
}

/**
 * An App's HTML at `uri` as one part of a read's result: the App MIME type, and
 * `ui` as `_meta.ui` (clients prefer it to the listed one), beside what `meta` holds.
 */
export function appContents(uri, html, ui, meta) {
  return resourceContents(uri, html, APP_MIME_TYPE, appMeta(meta, ui));
}

/** Declares the reader of every URI matching `spec.uriTemplate` (RFC 6570 `{var}`, `{+var}`), listed with `spec.meta`. */
export function template(spec, reader) {
  requireStrings("resource template", spec, ["uriTemplate", "name"]);
  const { uriTemplate, name, title, description, mimeType, meta } = spec;
  const listing = { uriTemplate, name, title, description, mimeType, annotations: undefined, meta: metaJson(meta) };
  return declare(templates, uriTemplate, listing, reader);
}

/** What the reader of `entry` returned, as the contract's `read-outcome`. */
function readOutcome(uri, entry, outcome) {
  if (outcome === undefined || outcome === null) return { tag: "not-found" };
  if (outcome instanceof InputRequired) return { tag: "input-required", val: outcome.toWit() };
  if (typeof outcome === "string" || outcome instanceof Uint8Array) {
    return { tag: "complete", val: [resourceContents(uri, outcome, entry.listing.mimeType, entry.readMeta)] };
  }
  if (Array.isArray(outcome)) return { tag: "complete", val: outcome };
  throw new TypeError(`a resource reader returned ${outcome}, which is not an outcome`);
}

/** The component's `resources` export. */
export const resources = reportingCrashes({
  listResources() {
    return [...fixed.values()].map(({ listing }) => listing);
  },

  listResourceTemplates() {
    return [...templates.values()].map(({ listing }) => listing);
  },

  readResource(uri, match, round) {
    const entry = match ? templates.get(match.uriTemplate) : fixed.get(uri);
    if (entry === undefined) return { tag: "not-found" };
    const read = new Inputs(round);
    read.uri = uri;
    read.template = match?.uriTemplate;
    read.variables = Object.fromEntries(match?.variables ?? []);
    return readOutcome(uri, entry, entry.reader(read));
  },
});
