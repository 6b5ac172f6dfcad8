// Reporting a crash by the author's lines. An exception that escapes an export
// is a bug: the runtime prints it to the guest's stderr, which Airlock logs,
// and the call traps. Its stack names lines of the bundle the build made of
// the app and the SDK, so the exports rethrow it as a `Crash` whose report names
// the original files, lines and columns instead, by the source map the build
// appends to the bundle (toolchain/bundle.mjs). The map is decoded only then.

/** The global property (a registered symbol) the bundle sets to its source map. */
const SOURCE_MAP = Symbol.for("airlock-guest.sourceMap");

// One frame of a SpiderMonkey stack: `function@file:line:column`.
const FRAME = /^(.*)@(.*):(\d+):(\d+)$/;

// How many causes a report follows (a cycle of causes ends there).
const MAX_CAUSES = 8;

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The numbers of one segment of a source map's `mappings` (base64 VLQ). */
function decodeSegment(text) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const c of text) {
    const digit = BASE64.indexOf(c);
    if (digit < 0) return [];
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value % 2 ? -(value - 1) / 2 : value / 2);
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/**
 * The original `file:line:column` of the bundle's 1-based `line` and
 * `column` by the source map `map` (version 3), or undefined: the position of
 * the segment at or before it on that line, moved as far as the column is past it.
 */
function original(map, line, column) {
  const lines = map.mappings.split(";");
  if (line > lines.length) return undefined;
  let source = 0;
  let sourceLine = 0;
  let sourceColumn = 0;
  let found;
  for (let at = 0; at < line; at++) {
    let generated = 0;
    for (const segment of lines[at].split(",")) {
      const [dGenerated, dSource, dLine, dColumn] = decodeSegment(segment);
      if (dGenerated === undefined) continue;
      generated += dGenerated;
      if (dSource === undefined) continue;
      source += dSource;
      sourceLine += dLine;
      sourceColumn += dColumn;
      if (at === line - 1 && generated <= column - 1) {
        found = `${map.sources[source]}:${sourceLine + 1}:${sourceColumn + column - generated}`;
      }
    }
  }
  return found;
}

/**
 * `stack` (an `Error`'s, one `function@file:line:column` frame a line) with
 * each frame of the bundle named by its original position, by the source map
 * `map` (the bundle's own by default); other frames stay as they are.
 */
export function mapStack(stack, map = globalThis[SOURCE_MAP]) {
  if (map === undefined) return stack;
  return stack
    .split("\n")
    .map((frame) => {
      const parts = FRAME.exec(frame);
      if (parts === null || parts[2] !== map.file) return frame;
      const position = original(map, Number(parts[3]), Number(parts[4]));
      return position === undefined ? frame : `${parts[1]}@${position}`;
    })
    .join("\n");
}

/** What a crash prints: the error, its stack by original lines, and its causes. */
export function crashReport(error, map = globalThis[SOURCE_MAP]) {
  const parts = [];
  let cause = error;
  for (let depth = 0; depth <= MAX_CAUSES; depth++) {
    if (depth > 0) parts.push("Caused by: ");
    if (!(cause instanceof Error)) {
      parts.push(`${String(cause)}\n`);
      break;
    }
    parts.push(`${cause.name}: ${cause.message}\n`);
    const frames = mapStack(String(cause.stack ?? ""), map).split("\n").filter((frame) => frame !== "");
    if (frames.length > 0) parts.push(`Stack:\n${frames.map((frame) => `  ${frame}\n`).join("")}`);
    if (!("cause" in cause)) break;
    cause = cause.cause;
  }
  return parts.join("").trimEnd();
}

/**
 * A crash as thrown out of an export: the runtime prints a thrown value that
 * is not an `Error` by its `toSource()`, here the report (its string too).
 */
export class Crash {
  constructor(error) {
    this.error = error;
    this.report = crashReport(error);
  }

  toSource() {
    return this.report;
  }

  toString() {
    return this.report;
  }
}

/**
 * `exported` (an export's functions) with every function rethrowing an
 * `Error` that escapes it as a `Crash`; calls that do not throw run as before.
 */
export function reportingCrashes(exported) {
  for (const [name, method] of Object.entries(exported)) {
    exported[name] = function (...args) {
      try {
        return method.apply(this, args);
      } catch (error) {
        throw error instanceof Error ? new Crash(error) : error;
      }
    };
  }
  return exported;
}
