// Module resolve hook (registered by register-host-stub.mjs): the contract's
// `airlock:mcp/host@0.1.0` import, which only a component has, resolves to
// the stub host-stub.mjs beside this file.

const HOST = "airlock:mcp/host@0.1.0";

export async function resolve(specifier, context, next) {
  if (specifier === HOST) {
    return { url: new URL("./host-stub.mjs", import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
