// `clear_done`: removes the finished tasks from a task list, after the user
// confirms which ones will go.
//
// 1. The finished tasks are found. With none, the list comes back unchanged.
// 2. Otherwise the user is asked to confirm, by a form (key `confirm`) naming
//    the tasks to clear; those titles travel in the call's sealed state,
//    because the answer arrives in a fresh instance.
// 3. Confirmed, exactly the titles the user saw are cleared. Declining,
//    cancelling or answering "no" ends the call with an error result and
//    nothing cleared.
//
// Every result also reports `callsInThisInstance`, a module-level counter: it
// is always 1, because Airlock runs every round in a fresh instance.

import { InputRequired, Result, ToolError, log, tool } from "airlock-guest";

export { tools } from "airlock-guest";

let callsInThisInstance = 0;

tool(
  {
    name: "clear_done",
    title: "Clear finished tasks",
    description:
      "Removes the finished tasks from a task list and returns what remains, after the user confirms.",
    inputSchema: {
      type: "object",
      properties: {
        tasks: {
          type: "array",
          items: {
            type: "object",
            properties: { title: { type: "string" }, done: { type: "boolean" } },
            required: ["title", "done"],
          },
        },
      },
      required: ["tasks"],
    },
    destructive: true,
    openWorld: false,
  },
  (call) => {
    callsInThisInstance += 1;
    const tasks = call.arguments.tasks;
    if (!Array.isArray(tasks) || !tasks.every((t) => typeof t?.title === "string" && typeof t?.done === "boolean")) {
      throw new ToolError("`tasks` must be a list of {title, done}");
    }
    const finished = tasks.filter((t) => t.done).map((t) => t.title);
    if (finished.length === 0) return outcome(tasks, []);

    const answer = call.elicitation("confirm");
    if (answer === undefined) return askToConfirm(call, finished);
    const confirmed = answer.acceptedContent()?.confirm === true;
    if (!confirmed) throw new ToolError("cancelled: nothing was cleared");
    const shown = call.state({ clear: [] }).clear;
    log.info(`clear_done cleared ${shown.length} tasks`);
    return outcome(tasks.filter((t) => !(t.done && shown.includes(t.title))), shown);
  },
);

/** The question, or an error when the client cannot show forms. */
function askToConfirm(call, finished) {
  if (!call.client.canElicitForm) {
    throw new ToolError(`cannot ask for confirmation: this client shows no forms (would clear ${finished.join(", ")})`);
  }
  const schema = {
    type: "object",
    properties: { confirm: { type: "boolean", title: "Clear them" } },
    required: ["confirm"],
  };
  return new InputRequired()
    .elicitForm("confirm", `Clear ${finished.length} finished tasks: ${finished.join(", ")}?`, schema)
    .withState({ clear: finished });
}

/** The result: the remaining tasks, and what was cleared. */
function outcome(remaining, cleared) {
  const summary = `cleared ${cleared.length}, ${remaining.length} remain`;
  return Result.text(summary).withStructured({ remaining, cleared, callsInThisInstance });
}
