// Bundles an app module and the SDK into the one ES module componentize-js
// takes, and prints the names the app exports (which interfaces of the
// contract the component serves).
//
//   node bundle.mjs TOOLCHAIN_DIR APP_JS SDK_DIR OUT_JS
//
// `airlock-guest` resolves to SDK_DIR; the contract's imports
// (`airlock:mcp/...`) stay imports, for componentize-js to bind.

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [toolchain, app, sdk, out] = process.argv.slice(2);
const require = createRequire(`${toolchain}/`);
const { rolldown } = await import(pathToFileURL(require.resolve("rolldown")).href);

const bundle = await rolldown({
  input: app,
  external: [/^airlock:mcp\//],
  resolve: { alias: { "airlock-guest": sdk } },
  logLevel: "warn",
});
const { output } = await bundle.write({ file: out, format: "esm" });
console.log(output[0].exports.join(" "));
