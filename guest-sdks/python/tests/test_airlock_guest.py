"""Unit tests of the Python guest SDK, run natively (CPython) against the
bindings componentize-py generates from the project's WIT for the `server`
world. `scripts/test-python-sdk` generates them and runs these tests."""

import json
import unittest
from dataclasses import dataclass

import airlock_guest as airlock
from airlock_guest.apps import APP_MIME_TYPE, AppCsp, AppPermissions, AppUi, Visibility
from airlock_guest.completions import Completion, Completions, completer
from airlock_guest.prompts import Argument, InvalidArguments, PromptResult, Prompts, prompt
from airlock_guest.resources import Resources, app_contents, app_resource, contents, resource, template
from wit_world.exports import completions as wit_completions
from wit_world.exports import prompts as wit_prompts
from wit_world.exports import resources as wit_resources
from wit_world.imports import types as wit

NO_CLIENT = wit.ClientCapabilities(False, False, False, False, False, False, False)
FORMS_ONLY = wit.ClientCapabilities(True, False, False, False, False, False, False)


def first_round(client=NO_CLIENT):
    return wit.Round(number=1, responses=[], state=None, client=client, task=False)


def retry(state, responses, client=FORMS_ONLY):
    return wit.Round(number=2, responses=responses, state=state, client=client, task=False)


@dataclass
class Pair:
    left: int
    right: int


@airlock.tool(
    "Adds two integers.",
    name="unit_add",
    input_schema={"type": "object", "properties": {"left": {"type": "integer"}, "right": {"type": "integer"}}},
    read_only=True,
)
def unit_add(call):
    pair = call.args(Pair)
    return {"sum": pair.left + pair.right}


@airlock.tool("Asks for a colour, keeping the round count in the state.", name="unit_ask")
def unit_ask(call):
    answer = call.elicitation("colour")
    if answer is None or not answer.accepted:
        if answer is not None:
            raise airlock.ToolError(f"no colour: {answer.action}")
        schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
        return airlock.InputRequired().elicit_form("colour", "Which colour?", schema).with_state({"asked": call.round})
    return airlock.Result.text(f"{answer.accepted_content()['colour']} after round {call.state()['asked']}")


@airlock.tool("Fails the request.", name="unit_failed", task_support=airlock.TaskSupport.OPTIONAL)
def unit_failed(call):
    if call.client.can_use_tasks:
        return airlock.ContinueAsTask({"step": 1})
    return airlock.Failed(-32603, "no tasks")


class ToolsTest(unittest.TestCase):
    def test_lists_what_the_decorators_declared(self):
        listed = {tool.name: tool for tool in airlock.Tools().list_tools()}
        add = listed["unit_add"]
        self.assertEqual(add.description, "Adds two integers.")
        self.assertEqual(json.loads(add.input_schema)["properties"]["left"], {"type": "integer"})
        self.assertTrue(add.annotations.read_only_hint)
        self.assertIsNone(add.annotations.destructive_hint)
        self.assertEqual(json.loads(listed["unit_ask"].input_schema), {"type": "object"})
        self.assertIsNone(listed["unit_ask"].annotations)
        self.assertEqual(listed["unit_failed"].task_support, wit.TaskSupport.OPTIONAL)

    def test_a_dict_becomes_structured_content_and_text(self):
        outcome = airlock.Tools().call_tool("unit_add", '{"left": 2, "right": 3, "extra": 0}', first_round())
        self.assertIsInstance(outcome, wit.CallOutcome_Complete)
        self.assertEqual(json.loads(outcome.value.structured_content), {"sum": 5})
        self.assertEqual(outcome.value.content, [wit.ContentBlock_Text(wit.TextContent('{"sum":5}', None))])
        self.assertFalse(outcome.value.is_error)

    def test_arguments_that_do_not_fit_are_an_error_result(self):
        outcome = airlock.Tools().call_tool("unit_add", '{"left": 2}', first_round())
        self.assertTrue(outcome.value.is_error)
        self.assertIn("invalid arguments for `unit_add`", outcome.value.content[0].value.text)

    def test_unknown_tool_is_an_error_result(self):
        outcome = airlock.Tools().call_tool("nope", "{}", first_round())
        self.assertTrue(outcome.value.is_error)
        self.assertEqual(outcome.value.content[0].value.text, "unknown tool `nope`")

    def test_two_rounds_with_state_and_answer(self):
        tools = airlock.Tools()
        first = tools.call_tool("unit_ask", "{}", first_round(FORMS_ONLY))
        self.assertIsInstance(first, wit.CallOutcome_InputRequired)
        (key, request), = first.value.requests
        self.assertEqual(key, "colour")
        form = request.value.value
        self.assertEqual(form.message, "Which colour?")
        self.assertEqual(json.loads(form.requested_schema)["properties"], {"colour": {"type": "string"}})
        self.assertEqual(json.loads(first.value.state), {"asked": 1})

        answer = wit.InputResponse_Elicitation(wit.ElicitationResponse(wit.ElicitationAction.ACCEPT, '{"colour":"teal"}'))
        second = tools.call_tool("unit_ask", "{}", retry(first.value.state, [("colour", answer)]))
        self.assertEqual(second.value.content[0].value.text, "teal after round 1")

        declined = wit.InputResponse_Elicitation(wit.ElicitationResponse(wit.ElicitationAction.DECLINE, None))
        third = tools.call_tool("unit_ask", "{}", retry(first.value.state, [("colour", declined)]))
        self.assertTrue(third.value.is_error)
        self.assertEqual(third.value.content[0].value.text, "no colour: decline")

    def test_tasks_and_protocol_errors(self):
        with_tasks = wit.ClientCapabilities(False, False, False, False, False, False, True)
        outcome = airlock.Tools().call_tool("unit_failed", "{}", first_round(with_tasks))
        self.assertEqual(outcome, wit.CallOutcome_ContinueAsTask(b'{"step":1}'))
        outcome = airlock.Tools().call_tool("unit_failed", "{}", first_round())
        self.assertEqual(outcome, wit.CallOutcome_Failed(wit.ProtocolError(-32603, "no tasks")))


class InputsTest(unittest.TestCase):
    def test_answers_by_key_and_kind(self):
        sampled = wit.InputResponse_Sampling(
            wit.SamplingResponse(
                wit.Role.ASSISTANT,
                [wit.SamplingContent_Text(wit.TextContent("fine", None)), wit.SamplingContent_Text(wit.TextContent("!", None))],
                "model-1",
                "endTurn",
            )
        )
        roots = wit.InputResponse_Roots([wit.Root("file:///w", "w")])
        inputs = airlock.Inputs(retry(b"not json", [("s", sampled), ("r", roots)]))
        self.assertEqual(inputs.sampling("s").text, "fine!")
        self.assertEqual(inputs.sampling("s").model, "model-1")
        self.assertEqual(inputs.roots("r"), [airlock.Root("file:///w", "w")])
        self.assertIsNone(inputs.elicitation("s"), "a sampling answer is no elicitation")
        self.assertIsNone(inputs.roots("missing"))
        self.assertEqual(inputs.state(default="fallback"), "fallback")
        self.assertEqual(inputs.state_bytes, b"not json")
        self.assertTrue(inputs.client.can_elicit_form)
        self.assertFalse(inputs.client.can_sample)

    def test_accepted_content_as_a_dataclass(self):
        accepted = airlock.Elicitation("accept", {"left": 1, "right": 2})
        self.assertEqual(accepted.accepted_content(Pair), Pair(1, 2))
        self.assertIsNone(airlock.Elicitation("accept", {"left": 1}).accepted_content(Pair))
        self.assertIsNone(airlock.Elicitation("cancel", None).accepted_content())

    def test_retain_supported_drops_what_the_client_cannot_answer(self):
        asked = (
            airlock.InputRequired()
            .elicit_form("f", "form", {"type": "object"})
            .elicit_url("u", "visit", "https://example.com/step")
            .sample("s", airlock.Sampling(100).user("hi"))
            .list_roots("r")
            .retain_supported(airlock.ClientCapabilities.from_wit(FORMS_ONLY))
        )
        self.assertEqual([key for key, _ in asked.requests], ["f"])

    def test_sampling_request(self):
        request = airlock.Sampling(50, system_prompt="be brief", model_hints=["small"]).user("q").assistant("a").to_wit()
        self.assertEqual(request.max_tokens, 50)
        self.assertEqual([m.role for m in request.messages], [wit.Role.USER, wit.Role.ASSISTANT])
        self.assertEqual(request.model_preferences.hints, [wit.ModelHint("small")])


@prompt("Greets.", name="unit_greet", arguments=[Argument("name", required=True)])
def unit_greet(request):
    if request.argument("name") == "nobody":
        raise InvalidArguments("nobody to greet")
    return PromptResult("a greeting").user(f"Greet {request.argument('name')}")


@resource("unit://fixed", mime_type="text/plain")
def unit_fixed(read):
    return "fixed text"


@template("unit://blob/{id}", name="blob")
def unit_blob(read):
    return bytes([int(read.variable("id"))]) if read.variable("id") != "0" else None


@template("unit://meta/{id}", name="unit_meta_template", meta={"origin": "unit"})
def unit_meta_template(read):
    return "x"


@completer(prompt="unit_greet", argument="name")
def unit_names(request):
    return ["Ada", "Alan", "Grace"]


class PromptsResourcesCompletionsTest(unittest.TestCase):
    def test_prompt(self):
        listed = {p.name: p for p in Prompts().list_prompts()}
        self.assertEqual(listed["unit_greet"].arguments[0].required, True)
        outcome = Prompts().get_prompt("unit_greet", [("name", "Ada")], first_round())
        self.assertEqual(outcome.value.description, "a greeting")
        self.assertEqual(outcome.value.messages[0].content.value.text, "Greet Ada")
        refused = Prompts().get_prompt("unit_greet", [("name", "nobody")], first_round())
        self.assertEqual(refused, wit_prompts.PromptOutcome_InvalidArguments("nobody to greet"))

    def test_resources(self):
        self.assertEqual([r.uri for r in Resources().list_resources()], ["unit://fixed", "ui://unit/app.html"])
        self.assertEqual(
            [t.uri_template for t in Resources().list_resource_templates()], ["unit://blob/{id}", "unit://meta/{id}"]
        )
        fixed = Resources().read_resource("unit://fixed", None, first_round())
        self.assertEqual(fixed.value, [contents("unit://fixed", "fixed text", "text/plain")])
        match = wit_resources.TemplateMatch("unit://blob/{id}", [("id", "7")])
        blob = Resources().read_resource("unit://blob/7", match, first_round())
        self.assertEqual(blob.value[0].body, wit.ResourceBody_Blob(b"\x07"))
        missing = wit_resources.TemplateMatch("unit://blob/{id}", [("id", "0")])
        self.assertIsInstance(Resources().read_resource("unit://blob/0", missing, first_round()), wit_resources.ReadOutcome_NotFound)

    def test_completions(self):
        request = wit_completions.CompletionRequest(wit_completions.CompletionTarget_Prompt("unit_greet"), "name", "a", [])
        found = Completions().complete(request)
        self.assertEqual((found.values, found.has_more), (["Ada", "Alan", "Grace"], False))
        self.assertEqual(Completion.matching(["Ada", "Alan", "Grace"], "al"), Completion(["Alan"], 1, False))
        many = Completion.matching([f"v{i}" for i in range(150)], "v")
        self.assertEqual((len(many.values), many.total, many.has_more), (100, 150, True))
        nothing = wit_completions.CompletionRequest(wit_completions.CompletionTarget_ResourceTemplate("x"), "id", "", [])
        self.assertEqual(Completions().complete(nothing).values, [])


@airlock.tool(
    "Shows a table in its App.",
    name="unit_show",
    app="ui://unit/app.html",
    visibility=[Visibility.APP, "model"],
    meta={"other": 1, "ui": {"kept": True}},
)
def unit_show(call):
    return "shown"


@prompt("Has metadata.", name="unit_meta_prompt", meta={"origin": "unit"})
def unit_meta_prompt(request):
    return "hi"


UNIT_UI = AppUi(
    csp=AppCsp(connect_domains=["https://api.example.com"]),
    permissions=AppPermissions(clipboard_write=True),
    prefers_border=False,
)


@app_resource("ui://unit/app.html", ui=UNIT_UI, meta={"other": 2})
def unit_app(read):
    return "<p>app</p>"


class AppsTest(unittest.TestCase):
    UI_JSON = {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": False,
    }

    def test_a_tool_names_its_app_and_who_may_call_it_beside_its_other_meta(self):
        listed = {tool.name: tool for tool in airlock.Tools().list_tools()}
        self.assertEqual(
            json.loads(listed["unit_show"].meta),
            {"other": 1, "ui": {"kept": True, "resourceUri": "ui://unit/app.html", "visibility": ["app", "model"]}},
        )
        self.assertIsNone(listed["unit_add"].meta, "no meta unless given")

    def test_a_tool_refuses_meta_that_is_not_an_object_and_unknown_callers(self):
        with self.assertRaisesRegex(TypeError, "_meta must be a dict"):
            airlock.tool("x", name="unit_bad_meta", meta=["ui"])(lambda call: "x")
        with self.assertRaisesRegex(ValueError, "'everyone' is not a valid Visibility"):
            airlock.tool("x", name="unit_bad_visibility", visibility=["everyone"])(lambda call: "x")
        with self.assertRaisesRegex(TypeError, "visibility is a list"):
            airlock.tool("x", name="unit_one_visibility", visibility=Visibility.APP)(lambda call: "x")
        with self.assertRaisesRegex(TypeError, "list of origins"):
            AppCsp(connect_domains="https://api.example.com")
        names = {tool.name for tool in airlock.Tools().list_tools()}
        self.assertFalse(names & {"unit_bad_meta", "unit_bad_visibility", "unit_one_visibility"})

    def test_an_app_is_listed_and_read_with_its_mime_type_and_ui(self):
        [listed] = [r for r in Resources().list_resources() if r.uri == "ui://unit/app.html"]
        self.assertEqual(listed.mime_type, APP_MIME_TYPE)
        self.assertEqual(listed.name, "unit_app")
        self.assertEqual(json.loads(listed.meta), {"other": 2, "ui": self.UI_JSON})
        [read] = Resources().read_resource("ui://unit/app.html", None, first_round()).value
        self.assertEqual(read.mime_type, "text/html;profile=mcp-app")
        self.assertEqual(read.body, wit.ResourceBody_Text("<p>app</p>"))
        self.assertEqual(json.loads(read.meta), {"other": 2, "ui": self.UI_JSON})

    def test_app_contents_carry_the_mime_type_and_ui(self):
        part = app_contents("ui://unit/other.html", "<p>", AppUi(domain="a.example.com"))
        self.assertEqual(part.mime_type, APP_MIME_TYPE)
        self.assertEqual(json.loads(part.meta), {"ui": {"domain": "a.example.com"}})
        self.assertIsNone(app_contents("ui://unit/other.html", "<p>").meta)
        everything = AppPermissions(camera=True, microphone=True, geolocation=True, clipboard_write=True)
        self.assertEqual(
            AppUi(csp=AppCsp(), permissions=everything).to_json(),
            {"csp": {}, "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}}},
        )

    def test_every_other_item_carries_meta(self):
        listed = {p.name: p for p in Prompts().list_prompts()}
        self.assertEqual(json.loads(listed["unit_meta_prompt"].meta), {"origin": "unit"})
        self.assertIsNone(listed["unit_greet"].meta)
        templates = {t.name: t for t in Resources().list_resource_templates()}
        self.assertEqual(json.loads(templates["unit_meta_template"].meta), {"origin": "unit"})
        self.assertIsNone(templates["blob"].meta)
        self.assertEqual(json.loads(contents("unit://x", "x", meta={"a": 1}).meta), {"a": 1})
        embedded = airlock.Result().with_resource("unit://x", "x", meta={"b": 2}).content[0]
        self.assertEqual(json.loads(embedded.value.contents.meta), {"b": 2})
        with self.assertRaisesRegex(TypeError, "_meta must be a dict"):
            contents("unit://x", "x", meta="{}")


if __name__ == "__main__":
    unittest.main()
