// Module resolve hook (registered by register-host-stub.mjs) that lets the SDK
// and the samples run natively: the contract's `airlock:mcp/host@0.2.0`
// import, which only a component has, resolves to the stub host-stub.mjs
// beside this file, and `airlock-guest` (as the samples import the SDK) to the
// SDK, as the build's bundler resolves it.

const TARGETS = new Map([
  ["airlock:mcp/host@0.2.0", "./host-stub.mjs"],
  ["airlock-guest", "../airlock-guest/index.js"],
]);

export async function resolve(specifier, context, next) {
  const target = TARGETS.get(specifier);
  if (target !== undefined) return { url: new URL(target, import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
