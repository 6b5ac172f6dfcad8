// Resources: `resource(spec, reader)` declares a fixed one, `template(spec,
// reader)` a family; `resources` is the export.

import { InputRequired } from "./asking.js";
import { resourceContents } from "./content.js";
import { requireStrings } from "./declare.js";
import { Inputs } from "./inputs.js";

/** One part of a read's result. */
export const contents = resourceContents;

const fixed = new Map();
const templates = new Map();

function declare(table, key, listing, reader) {
  if (table.has(key)) throw new Error(`resource \`${key}\` is declared twice`);
  table.set(key, { listing, reader });
  return reader;
}

/** Declares the reader of the resource `spec.uri`. */
export function resource(spec, reader) {
  requireStrings("resource", spec, ["uri", "name"]);
  const { uri, name, title, description, mimeType, size } = spec;
  const listing = { uri, name, title, description, mimeType, size: size === undefined ? undefined : BigInt(size), annotations: undefined };
  return declare(fixed, uri, listing, reader);
}

/** Declares the reader of every URI matching `spec.uriTemplate` (RFC 6570 `{var}`, `{+var}`). */
export function template(spec, reader) {
  requireStrings("resource template", spec, ["uriTemplate", "name"]);
  const { uriTemplate, name, title, description, mimeType } = spec;
  return declare(templates, uriTemplate, { uriTemplate, name, title, description, mimeType, annotations: undefined }, reader);
}

/** What a reader returned, as the contract's `read-outcome`. */
function readOutcome(uri, mimeType, outcome) {
  if (outcome === undefined || outcome === null) return { tag: "not-found" };
  if (outcome instanceof InputRequired) return { tag: "input-required", val: outcome.toWit() };
  if (typeof outcome === "string" || outcome instanceof Uint8Array) {
    return { tag: "complete", val: [resourceContents(uri, outcome, mimeType)] };
  }
  if (Array.isArray(outcome)) return { tag: "complete", val: outcome };
  throw new TypeError(`a resource reader returned ${outcome}, which is not an outcome`);
}

/** The component's `resources` export. */
export const resources = {
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
    return readOutcome(uri, entry.listing.mimeType, entry.reader(read));
  },
};
