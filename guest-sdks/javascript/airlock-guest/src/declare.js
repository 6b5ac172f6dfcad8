// What the declaring functions (`tool`, `prompt`, `resource`, `template`)
// check of their specs, so that a component missing a field the contract
// requires fails to build rather than to load.

/** Throws unless `spec` gives each of `fields` (the first one names it) as a string. */
export function requireStrings(kind, spec, fields) {
  for (const field of fields) {
    if (typeof spec[field] !== "string") {
      throw new TypeError(`${kind} \`${spec[fields[0]]}\` needs \`${field}\`, a string`);
    }
  }
}
