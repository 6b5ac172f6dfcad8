// Loaded with `node --import` before the unit tests, so that the SDK and the
// samples run natively: see host-stub-hooks.mjs.

import { register } from "node:module";

register("./host-stub-hooks.mjs", import.meta.url);
