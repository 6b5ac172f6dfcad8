"""A small notebook: resources, a resource template, a prompt that may ask
for input, and completions, with the Python SDK.

- `notes://readme`: what the notebook is (text).
- `notes://note/{id}`: one note by id; an unknown id is not found.
- `note_summary {id, style?}`: a prompt asking the model to summarise a
  note; without `style`, the user is asked (a form) and the prompt is
  rendered again, in a fresh instance, with the answer.
- Completions of the note id, for the prompt and for the template.
"""

from airlock_guest import InputRequired
from airlock_guest.completions import Completion, Completions, completer  # noqa: F401
from airlock_guest.prompts import Argument, InvalidArguments, PromptResult, Prompts, prompt  # noqa: F401
from airlock_guest.resources import Resources, resource, template  # noqa: F401

NOTES = {"1": "Buy milk", "2": "Water the plants", "12": "Call the plumber"}
STYLES = ["brief", "detailed"]


@resource("notes://readme", name="readme", title="About the notebook", mime_type="text/plain")
def readme(read):
    return f"A notebook of {len(NOTES)} notes; read one at notes://note/{{id}}."


@template("notes://note/{id}", name="note", description="One note by id.", mime_type="text/plain")
def note(read):
    return NOTES.get(read.variable("id") or "")


@prompt(
    "Asks the model to summarise one note, briefly or in detail.",
    name="note_summary",
    arguments=[Argument("id", description="The note's id.", required=True), Argument("style")],
)
def note_summary(request):
    note_id = request.argument("id")
    if note_id not in NOTES:
        raise InvalidArguments(f"no note with id {note_id!r}")
    style = request.argument("style")
    if style not in STYLES:
        answer = request.elicitation("style")
        form = answer.accepted_content() if answer else None
        style = form.get("style") if form else None
    if style not in STYLES:
        schema = {"type": "object", "properties": {"style": {"type": "string", "enum": STYLES}}, "required": ["style"]}
        return InputRequired().elicit_form("style", "How detailed should the summary be?", schema)
    return PromptResult(description=f"a {style} summary").user(f"Summarise this note ({style}): {NOTES[note_id]}")


@completer(prompt="note_summary", argument="id")
def prompt_ids(request):
    return Completion.matching(sorted(NOTES), request.value)


@completer(template="notes://note/{id}", argument="id")
def template_ids(request):
    return Completion.matching(sorted(NOTES), request.value)
