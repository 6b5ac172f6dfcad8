// A stand-in for the contract's `airlock:mcp/host` import when the SDK runs
// natively under node's test runner: it records every call in `calls`.

/** Every host call made, as [function name, ...arguments]. */
export const calls = [];

export const log = (level, message) => calls.push(["log", level, message]);
export const progress = (done, total, message) => calls.push(["progress", done, total, message]);
export const notifyListChanged = (kind) => calls.push(["notifyListChanged", kind]);
export const notifyResourceUpdated = (uri) => calls.push(["notifyResourceUpdated", uri]);
