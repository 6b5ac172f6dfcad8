// The samples (samples/*/app.js), run natively with node's test runner
// (scripts/test-javascript-sdk) through the exports they re-export: what
// their components answer, before any component is built. The end-to-end
// flows over MCP are tests/tests/javascript_tools.rs.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import { tools as clearDoneTools } from "../samples/js_clear_done/app.js";
import { tools as hashTools } from "../samples/js_hash/app.js";
import { completions, prompts, resources } from "../samples/js_notes/app.js";
import { FORMS_ONLY, NO_CLIENT, answered, firstRound, retry } from "./rounds.mjs";

const text = (outcome) => outcome.val.content[0].val.text;

test("js_hash: sha256 agrees with node:crypto, across block boundaries", () => {
  const [listed] = hashTools.listTools().filter((t) => t.name === "sha256");
  assert.equal(listed.title, "SHA-256 (JavaScript)");
  for (const input of ["", "abc", "a".repeat(55), "a".repeat(56), "b".repeat(64), "c".repeat(1000), "héllo ☃ 🙂"]) {
    const outcome = hashTools.callTool("sha256", JSON.stringify({ text: input }), firstRound());
    assert.equal(text(outcome), createHash("sha256").update(input).digest("hex"), `${input.length} characters`);
  }
  const wrong = hashTools.callTool("sha256", '{"text": 7}', firstRound());
  assert.equal(wrong.val.isError, true);
});

const TASKS = JSON.stringify({
  tasks: [
    { title: "write", done: true },
    { title: "test", done: false },
  ],
});

test("js_clear_done: asks first, then clears what the user saw", () => {
  const asked = clearDoneTools.callTool("clear_done", TASKS, firstRound(FORMS_ONLY));
  assert.equal(asked.tag, "input-required");
  assert.equal(asked.val.requests[0][0], "confirm");
  const confirmed = retry(asked.val.state, [["confirm", answered("accept", { confirm: true })]]);
  const done = clearDoneTools.callTool("clear_done", TASKS, confirmed);
  assert.equal(text(done), "cleared 1, 1 remain");
  const { remaining, cleared } = JSON.parse(done.val.structuredContent);
  assert.deepEqual([remaining, cleared], [[{ title: "test", done: false }], ["write"]]);
});

test("js_clear_done: a refusal, or a client without forms, clears nothing", () => {
  const asked = clearDoneTools.callTool("clear_done", TASKS, firstRound(FORMS_ONLY));
  const refusal = retry(asked.val.state, [["confirm", answered("decline")]]);
  const declined = clearDoneTools.callTool("clear_done", TASKS, refusal);
  assert.equal(declined.val.isError, true);
  assert.equal(text(declined), "cancelled: nothing was cleared");
  const formless = clearDoneTools.callTool("clear_done", TASKS, firstRound(NO_CLIENT));
  assert.equal(formless.val.isError, true);
  assert.match(text(formless), /shows no forms/);
});

const read = (uri, match = undefined) => resources.readResource(uri, match, firstRound());
const noteMatch = (id) => ({ uriTemplate: "notes://note/{id}", variables: [["id", id]] });

test("js_notes: the readme, and notes by id (only the notebook's own)", () => {
  assert.deepEqual(resources.listResources(), [
    {
      uri: "notes://readme",
      name: "readme",
      title: "About the notebook",
      description: undefined,
      mimeType: "text/plain",
      size: undefined,
      annotations: undefined,
      meta: undefined,
    },
  ]);
  const readme = "A notebook of 3 notes; read one at notes://note/{id}.";
  assert.deepEqual(read("notes://readme").val, [
    { uri: "notes://readme", mimeType: "text/plain", body: { tag: "text", val: readme }, meta: undefined },
  ]);
  assert.equal(read("notes://note/12", noteMatch("12")).val[0].body.val, "Call the plumber");
  for (const id of ["99", "constructor", "__proto__", ""]) {
    assert.deepEqual(read(`notes://note/${id}`, noteMatch(id)), { tag: "not-found" }, id);
  }
});

test("js_notes: note_summary refuses an unknown id", () => {
  const [listed] = prompts.listPrompts();
  assert.equal(listed.description, "Asks the model to summarise one note, briefly or in detail.");
  for (const id of ["7", "constructor"]) {
    const refused = prompts.getPrompt("note_summary", [["id", id]], firstRound());
    assert.deepEqual(refused, { tag: "invalid-arguments", val: `no note with id '${id}'` });
  }
});

test("js_notes: note_summary asks for the style unless given", () => {
  const direct = prompts.getPrompt("note_summary", [["id", "2"], ["style", "brief"]], firstRound());
  assert.equal(direct.val.description, "a brief summary");
  assert.equal(direct.val.messages[0].content.val.text, "Summarise this note (brief): Water the plants");
  const asked = prompts.getPrompt("note_summary", [["id", "2"]], firstRound(FORMS_ONLY));
  const [[key, request]] = asked.val.requests;
  assert.equal(key, "style");
  assert.equal(request.val.val.message, "How detailed should the summary be?");
  assert.deepEqual(JSON.parse(request.val.val.requestedSchema), {
    type: "object",
    properties: { style: { type: "string", enum: ["brief", "detailed"] } },
    required: ["style"],
  });
  const answer = [["style", answered("accept", { style: "detailed" })]];
  const rendered = prompts.getPrompt("note_summary", [["id", "2"]], retry(undefined, answer));
  assert.equal(rendered.val.description, "a detailed summary");
});

test("js_notes: ids complete as sorted strings, for the prompt and the template", () => {
  for (const target of [
    { tag: "prompt", val: "note_summary" },
    { tag: "resource-template", val: "notes://note/{id}" },
  ]) {
    const found = completions.complete({ target, argumentName: "id", argumentValue: "1", context: [] });
    assert.deepEqual(found, { values: ["1", "12"], total: 2, hasMore: false });
  }
});
