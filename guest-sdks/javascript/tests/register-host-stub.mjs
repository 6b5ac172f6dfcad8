// Loaded with `node --import` before the SDK's unit tests, so that the SDK
// runs natively: see host-stub-hooks.mjs.

import { register } from "node:module";

register("./host-stub-hooks.mjs", import.meta.url);
