// Writing to the host's log (and to the client, when it asked for log
// messages on this request), reporting progress, and reporting changes.

import * as host from "airlock:mcp/host@0.2.0";

/** Logs at each level: `log.info("...")`. */
export const log = {
  debug: (message) => host.log("debug", message),
  info: (message) => host.log("info", message),
  notice: (message) => host.log("notice", message),
  warning: (message) => host.log("warning", message),
  error: (message) => host.log("error", message),
};

/** Reports progress of the current call; `done` must grow with each report. */
export function progress(done, total = undefined, message = undefined) {
  host.progress(done, total, message);
}

/** Reports changes the host cannot see by itself. */
export const notify = {
  listChanged: (kind) => host.notifyListChanged(kind),
  resourceUpdated: (uri) => host.notifyResourceUpdated(uri),
};
