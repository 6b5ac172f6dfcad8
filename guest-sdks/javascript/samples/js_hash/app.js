// `sha256`: a plain tool. Hashes text with SHA-256 and returns the hex
// digest, like the Rust `hash` sample's `sha256`.

import { ToolError, tool } from "airlock-guest";

export { tools } from "airlock-guest";

tool(
  {
    name: "sha256",
    title: "SHA-256 (JavaScript)",
    description: "Returns the SHA-256 digest of a text (UTF-8), in lowercase hex.",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string", description: "The text to hash." } },
      required: ["text"],
    },
    readOnly: true,
    idempotent: true,
    openWorld: false,
  },
  (call) => {
    const { text } = call.arguments;
    if (typeof text !== "string") throw new ToolError("`text` must be a string");
    return toHex(sha256(new TextEncoder().encode(text)));
  },
);

// The round constants: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes (FIPS 180-4, 4.2.2).
const K = Uint32Array.from(
  primes(64).map((p) => Math.floor((Math.cbrt(p) % 1) * 2 ** 32)),
);
// The initial hash value: the same of the square roots of the first 8 primes.
const H0 = Uint32Array.from(primes(8).map((p) => Math.floor((Math.sqrt(p) % 1) * 2 ** 32)));

function primes(count) {
  const found = [];
  for (let n = 2; found.length < count; n++) {
    if (found.every((p) => n % p !== 0)) found.push(n);
  }
  return found;
}

const rotr = (x, n) => (x >>> n) | (x << (32 - n));

/** The SHA-256 digest of `bytes` (FIPS 180-4). */
function sha256(bytes) {
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bytes.length / 2 ** 29));
  view.setUint32(padded.length - 4, (bytes.length * 8) >>> 0);
  const h = Uint32Array.from(H0);
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(block + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
      const t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      [hh, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    [a, b, c, d, e, f, g, hh].forEach((v, i) => (h[i] = (h[i] + v) >>> 0));
  }
  return h;
}

const toHex = (words) => [...words].map((word) => word.toString(16).padStart(8, "0")).join("");
