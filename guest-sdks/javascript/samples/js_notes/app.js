// A small notebook: resources, a resource template, a prompt that may ask for
// input, and completions, with the JavaScript SDK. It behaves exactly as the
// Python SDK's `py_notes` sample.
//
// - `notes://readme`: what the notebook is (text).
// - `notes://note/{id}`: one note by id; an unknown id is not found.
// - `note_summary {id, style?}`: a prompt asking the model to summarise a
//   note; without `style`, the user is asked (a form) and the prompt is
//   rendered again, in a fresh instance, with the answer.
// - Completions of the note id, for the prompt and for the template.

import { Completion, InputRequired, InvalidArguments, PromptResult, completer, prompt, resource, template } from "airlock-guest";

export { completions, prompts, resources } from "airlock-guest";

const NOTES = new Map([
  ["1", "Buy milk"],
  ["2", "Water the plants"],
  ["12", "Call the plumber"],
]);
const STYLES = ["brief", "detailed"];
const noteIds = () => [...NOTES.keys()].sort();

resource(
  { uri: "notes://readme", name: "readme", title: "About the notebook", mimeType: "text/plain" },
  () => `A notebook of ${NOTES.size} notes; read one at notes://note/{id}.`,
);

template(
  { uriTemplate: "notes://note/{id}", name: "note", description: "One note by id.", mimeType: "text/plain" },
  (read) => NOTES.get(read.variables.id),
);

prompt(
  {
    name: "note_summary",
    description: "Asks the model to summarise one note, briefly or in detail.",
    arguments: [{ name: "id", description: "The note's id.", required: true }, { name: "style" }],
  },
  (request) => {
    const id = request.arguments.id;
    if (!NOTES.has(id)) throw new InvalidArguments(`no note with id '${id}'`);
    let style = request.arguments.style;
    if (!STYLES.includes(style)) style = request.elicitation("style")?.acceptedContent()?.style;
    if (!STYLES.includes(style)) {
      const schema = { type: "object", properties: { style: { type: "string", enum: STYLES } }, required: ["style"] };
      return new InputRequired().elicitForm("style", "How detailed should the summary be?", schema);
    }
    return new PromptResult(`a ${style} summary`).user(`Summarise this note (${style}): ${NOTES.get(id)}`);
  },
);

completer({ prompt: "note_summary", argument: "id" }, (request) => Completion.matching(noteIds(), request.value));
completer({ template: "notes://note/{id}", argument: "id" }, (request) => Completion.matching(noteIds(), request.value));
