// MCP Apps (`io.modelcontextprotocol/ui`): an HTML App, served as a `ui://`
// resource, that the client renders in a sandboxed frame for a tool's results.
// This module writes the `_meta.ui` members: `tool({ app, visibility })`,
// `appResource` and `appContents` (resources.js) use them.

import { checkMeta } from "./content.js";

/** The MIME type of an App's HTML. */
export const APP_MIME_TYPE = "text/html;profile=mcp-app";

/** Who may call a tool that has an App. */
const VISIBILITY = ["model", "app"];
/** The Content Security Policy lists of origins (`ui.csp`). */
const CSP = ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"];
/** The browser permissions an App may ask for (`ui.permissions`). */
const PERMISSIONS = ["camera", "microphone", "geolocation", "clipboardWrite"];
/** How a client should present an App (`ui`). */
const UI = ["csp", "permissions", "domain", "prefersBorder"];

/** Throws unless `value` is a plain object whose members are all `known`. */
function requireMembers(what, value, known) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${what} must be an object`);
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new TypeError(`${what} has no member \`${key}\` (it takes ${known.join(", ")})`);
  }
}

/** Throws unless `value` is undefined or of type `type`. */
function requireOptional(what, value, type) {
  if (value !== undefined && typeof value !== type) throw new TypeError(`${what} must be a ${type}`);
}

/**
 * The `_meta.ui` members of an App's presentation `ui` ({ csp, permissions,
 * domain, prefersBorder }): empty lists of origins are left out, and each
 * permission asked for becomes an empty object (`{ camera: {} }`).
 */
function uiMembers(ui) {
  requireMembers("an App's `ui`", ui, UI);
  const members = {};
  if (ui.csp !== undefined) {
    requireMembers("`ui.csp`", ui.csp, CSP);
    members.csp = {};
    for (const list of CSP) {
      const origins = ui.csp[list] ?? [];
      if (!Array.isArray(origins) || origins.some((origin) => typeof origin !== "string")) {
        throw new TypeError(`\`ui.csp.${list}\` must be a list of origins`);
      }
      if (origins.length > 0) members.csp[list] = [...origins];
    }
  }
  if (ui.permissions !== undefined) {
    requireMembers("`ui.permissions`", ui.permissions, PERMISSIONS);
    members.permissions = {};
    for (const permission of PERMISSIONS) {
      requireOptional(`\`ui.permissions.${permission}\``, ui.permissions[permission], "boolean");
      if (ui.permissions[permission]) members.permissions[permission] = {};
    }
  }
  requireOptional("`ui.domain`", ui.domain, "string");
  if (ui.domain !== undefined) members.domain = ui.domain;
  requireOptional("`ui.prefersBorder`", ui.prefersBorder, "boolean");
  if (ui.prefersBorder !== undefined) members.prefersBorder = ui.prefersBorder;
  return members;
}

/** A copy of `meta` (an item's `_meta`) with `members` set in its `ui` object, keeping what else it holds. */
function withUi(meta, members) {
  const ui = checkMeta(meta)?.ui;
  const kept = ui !== null && typeof ui === "object" && !Array.isArray(ui) ? ui : {};
  return { ...meta, ui: { ...kept, ...members } };
}

/** The `_meta` of an App's resource or contents: `meta` plus, when given, `ui` (how to present the App) as its `ui` members. */
export function appMeta(meta, ui) {
  return ui === undefined ? meta : withUi(meta, uiMembers(ui));
}

/**
 * A tool's `_meta`: `meta` plus, when given, the App that renders its results
 * (`ui.resourceUri`) and who may call it (`ui.visibility`).
 */
export function toolMeta(meta, app, visibility) {
  const members = {};
  requireOptional("a tool's `app`", app, "string");
  if (app !== undefined) members.resourceUri = app;
  if (visibility !== undefined) {
    if (!Array.isArray(visibility) || visibility.some((who) => !VISIBILITY.includes(who))) {
      throw new TypeError(`a tool's \`visibility\` is a list of ${VISIBILITY.map((who) => `"${who}"`).join(", ")}`);
    }
    members.visibility = [...visibility];
  }
  return Object.keys(members).length > 0 ? withUi(meta, members) : meta;
}
