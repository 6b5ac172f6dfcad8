// Bundles an app module and the SDK into the one ES module componentize-js
// takes, and prints the names the app exports (which interfaces of the
// contract the component serves).
//
//   node bundle.mjs TOOLCHAIN_DIR APP_JS SDK_DIR OUT_JS
//
// `airlock-guest` resolves to SDK_DIR; the contract's imports
// (`airlock:mcp/...`) stay imports, for componentize-js to bind. The bundle
// ends with a statement that hands the SDK its source map (its `mappings`,
// and its sources named as the author knows them: the app's relative to the
// app's folder, the SDK's under `airlock-guest/`), by which the SDK names the
// author's lines in the stack of a crash (airlock-guest/src/crash.js).

import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, dirname, relative, resolve, sep } from "node:path";
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
const { output } = await bundle.generate({ file: out, format: "esm", sourcemap: "hidden" });
const [{ code, map, exports }] = output;

const appDir = dirname(resolve(app));
const sdkDir = dirname(resolve(sdk));
const unix = (path) => path.split(sep).join("/");
function sourceName(source) {
  const file = resolve(dirname(resolve(out)), map.sourceRoot ?? "", source);
  const inSdk = relative(sdkDir, file);
  return inSdk.startsWith("..") ? unix(relative(appDir, file)) : `airlock-guest/${unix(inSdk)}`;
}
const sourceMap = { file: basename(out), sources: map.sources.map(sourceName), mappings: map.mappings };

await mkdir(dirname(resolve(out)), { recursive: true });
await writeFile(out, `${code}\nglobalThis[Symbol.for("airlock-guest.sourceMap")] = ${JSON.stringify(sourceMap)};\n`);
console.log(exports.join(" "));
