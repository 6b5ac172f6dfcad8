//! Prompts, resources, completions and discovery against the `everything`
//! component (the MCP conformance fixture), written once against
//! [`McpClient`] so each runs over HTTP and over stdio.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::client::McpClient;
use crate::mcp::{
    ToolCall, all_caps, assert_state_rejected, code, complete, elicit, error, error_code,
    error_message, input_request, input_request_keys, input_required, no_caps, retry_params,
    with_meta,
};

/// The prompts of the fixture, in the order it lists them.
pub const PROMPTS: [&str; 5] = [
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
];

/// The resources of the fixture, in the order it lists them.
pub const RESOURCES: [&str; 3] = [
    "test://static-text",
    "test://static-binary",
    "test://watched-resource",
];

/// The fixture's one resource template.
pub const TEMPLATE: &str = "test://template/{id}/data";

/// The multi-round prompt.
const CONTEXT_PROMPT: &str = "test_input_required_result_prompt";

/// The first bytes of every PNG file.
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// `prompts/get` params for `name` with `arguments`, declaring `caps`.
pub fn prompt_params(name: &str, arguments: Value, caps: Value) -> Value {
    with_meta(json!({ "name": name, "arguments": arguments }), caps)
}

/// `completion/complete` params for `reference`, completing `argument`
/// from `value`.
pub fn completion_params(reference: Value, argument: &str, value: &str) -> Value {
    with_meta(
        json!({ "ref": reference, "argument": { "name": argument, "value": value } }),
        no_caps(),
    )
}

/// Asserts `response` is a -32602 error; returns its message.
#[track_caller]
fn assert_invalid_params(response: &Value, what: &str) -> String {
    assert_eq!(
        error_code(response),
        code::INVALID_PARAMS,
        "{what} must be -32602: {response}"
    );
    error_message(response)
}

/// Asserts a result carries the cache hints every list and read has.
#[track_caller]
fn assert_cache_hints(result: &Value) {
    assert!(
        result["ttlMs"].is_u64(),
        "ttlMs (a non-negative integer) is required: {result}"
    );
    assert!(
        result["cacheScope"]
            .as_str()
            .is_some_and(|scope| ["public", "private"].contains(&scope)),
        "cacheScope must be public or private: {result}"
    );
}

/// The messages of a complete `prompts/get` result.
#[track_caller]
fn messages(response: &Value) -> &Vec<Value> {
    complete(response)["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("a prompt result needs a messages array: {response}"))
}

/// All the text of a prompt's text messages, joined by newlines.
fn prompt_text(response: &Value) -> String {
    messages(response)
        .iter()
        .filter(|m| m["content"]["type"] == "text")
        .filter_map(|m| m["content"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Decodes standard Base64; panics (showing it) otherwise.
#[track_caller]
fn base64_decode(text: &Value) -> Vec<u8> {
    let text = text
        .as_str()
        .unwrap_or_else(|| panic!("expected Base64 text, got {text}"));
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("not standard Base64 ({e}): {text}"))
}

// ---------------------------------------------------------------------------
// Prompts
// ---------------------------------------------------------------------------

/// `prompts/list`: the five prompts in order, each described, with cache
/// hints; the arguments of the one that takes them.
pub fn prompts_are_listed(client: &dyn McpClient) {
    let response = client.rpc("prompts/list", json!({}), no_caps());
    let result = complete(&response);
    assert_cache_hints(result);
    let prompts = result["prompts"].as_array().expect("a prompts array");
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, PROMPTS, "{response}");
    for prompt in prompts {
        assert!(
            prompt["description"]
                .as_str()
                .is_some_and(|d| !d.trim().is_empty()),
            "every prompt needs a description: {prompt}"
        );
    }
    assert_eq!(
        prompts[1]["arguments"],
        json!([
            {"name": "arg1", "description": "First test argument", "required": true},
            {"name": "arg2", "description": "Second test argument", "required": true},
        ]),
        "{response}"
    );
}

/// A prompt without arguments: one user text message.
pub fn simple_prompt(client: &dyn McpClient) {
    let response = client.rpc(
        "prompts/get",
        json!({"name": "test_simple_prompt"}),
        no_caps(),
    );
    assert_eq!(
        messages(&response),
        &vec![json!({"role": "user", "content": {
            "type": "text", "text": "This is a simple prompt for testing."
        }})],
        "{response}"
    );
}

/// A prompt with arguments renders both values.
pub fn prompt_with_arguments(client: &dyn McpClient) {
    let params = prompt_params(
        "test_prompt_with_arguments",
        json!({"arg1": "first-välue", "arg2": "second value"}),
        no_caps(),
    );
    let response = client.exchange("prompts/get", params).response;
    let text = prompt_text(&response);
    assert!(
        text.contains("first-välue") && text.contains("second value"),
        "the text should carry both arguments: {response}"
    );
    assert_eq!(
        text,
        "Prompt with arguments: arg1='first-välue', arg2='second value'"
    );
}

/// A prompt embedding a resource: the resource block, then the text.
pub fn prompt_with_embedded_resource(client: &dyn McpClient) {
    let params = prompt_params(
        "test_prompt_with_embedded_resource",
        json!({"resourceUri": "test://example-resource"}),
        no_caps(),
    );
    let response = client.exchange("prompts/get", params).response;
    let messages = messages(&response);
    assert_eq!(messages.len(), 2, "{response}");
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": {"type": "resource", "resource": {
            "uri": "test://example-resource",
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }}}),
        "{response}"
    );
    assert_eq!(
        prompt_text(&response),
        "Please process the embedded resource above."
    );
}

/// A prompt with an image: a Base64 PNG, then the text.
pub fn prompt_with_image(client: &dyn McpClient) {
    let response = client.rpc(
        "prompts/get",
        json!({"name": "test_prompt_with_image"}),
        no_caps(),
    );
    let messages = messages(&response);
    assert_eq!(messages.len(), 2, "{response}");
    let image = &messages[0]["content"];
    assert_eq!(messages[0]["role"], "user", "{response}");
    assert_eq!(image["type"], "image", "{response}");
    assert_eq!(image["mimeType"], "image/png", "{response}");
    assert!(
        base64_decode(&image["data"]).starts_with(PNG_SIGNATURE),
        "the image data should be a PNG: {response}"
    );
    assert_eq!(prompt_text(&response), "Please analyze the image above.");
}

/// A missing required argument, a non-string argument, arguments that are
/// not an object, and an unknown prompt are all -32602, before any
/// component runs.
pub fn prompt_bad_requests(client: &dyn McpClient) {
    let missing = client.rpc(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "only one"}}),
        no_caps(),
    );
    let message = assert_invalid_params(&missing, "a missing required argument");
    assert!(
        message.contains("arg2"),
        "the error should name the missing argument: {missing}"
    );

    let not_a_string = client.rpc(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": 1, "arg2": "two"}}),
        no_caps(),
    );
    let message = assert_invalid_params(&not_a_string, "a number as argument");
    assert!(
        message.contains("arg1"),
        "the error should name the argument: {not_a_string}"
    );

    let not_an_object = client.rpc(
        "prompts/get",
        json!({"name": "test_simple_prompt", "arguments": ["a"]}),
        no_caps(),
    );
    assert_invalid_params(&not_an_object, "arguments that are not an object");

    let unknown = client.rpc("prompts/get", json!({"name": "no_such_prompt"}), no_caps());
    let message = assert_invalid_params(&unknown, "an unknown prompt");
    assert!(
        message.contains("no_such_prompt"),
        "the error should name the prompt: {unknown}"
    );
}

/// The multi-round prompt: round 1 asks for the context (form elicitation
/// under `user_context`) with a requestState; the retry with the answer
/// and the state renders it.
pub fn prompt_input_required(client: &dyn McpClient) {
    let params = prompt_params(CONTEXT_PROMPT, json!({}), all_caps());
    let first = client.exchange("prompts/get", params.clone()).response;
    let asked = input_required(&first);
    assert_eq!(
        input_request_keys(asked),
        vec!["user_context".to_string()],
        "{first}"
    );
    let request = input_request(asked, "user_context");
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["context"]["type"], "string",
        "{first}"
    );

    let answer = json!({"user_context": elicit("accept", Some(json!({"context": "e2e context"})))});
    let second = client
        .exchange("prompts/get", retry_params(&params, asked, answer))
        .response;
    assert_eq!(
        prompt_text(&second),
        "Prompt with context: e2e context",
        "{second}"
    );

    // A retry without the answer is asked again, with a new state.
    let again = client
        .exchange("prompts/get", retry_params(&params, asked, Value::Null))
        .response;
    let asked_again = input_required(&again);
    assert_eq!(
        input_request_keys(asked_again),
        vec!["user_context".to_string()]
    );
    assert_ne!(
        asked_again["requestState"], asked["requestState"],
        "every round mints a new requestState"
    );
}

/// The multi-round prompt asks for a form: a client that cannot answer one
/// gets -32021 naming the capability, not an input request it cannot serve.
pub fn prompt_needs_elicitation_capability(client: &dyn McpClient) {
    let response = client.rpc("prompts/get", json!({"name": CONTEXT_PROMPT}), no_caps());
    assert_eq!(
        error_code(&response),
        code::MISSING_CAPABILITY,
        "{response}"
    );
    assert!(
        error(&response)["data"]["requiredCapabilities"]
            .get("elicitation")
            .is_some(),
        "the error should name elicitation: {response}"
    );
}

/// A requestState minted by `prompts/get` is bound to that prompt and its
/// arguments: replayed on `tools/call`, on another prompt or with other
/// arguments it is refused with -32602.
pub fn prompt_state_is_bound_to_its_prompt(client: &dyn McpClient) {
    let params = prompt_params(CONTEXT_PROMPT, json!({}), all_caps());
    let first = client.exchange("prompts/get", params.clone()).response;
    let asked = input_required(&first).clone();
    let state = asked["requestState"].clone();
    let answer = json!({"user_context": elicit("accept", Some(json!({"context": "stolen"})))});

    let on_a_tool = ToolCall::new("test_input_required_result_elicitation", json!({}))
        .responses(answer.clone())
        .state(state.clone());
    assert_state_rejected(&client.call(&on_a_tool));

    let on_another_prompt = prompt_params("test_simple_prompt", json!({}), all_caps());
    let response = client
        .exchange(
            "prompts/get",
            retry_params(&on_another_prompt, &asked, answer.clone()),
        )
        .response;
    assert_state_rejected(&response);

    let other_arguments = prompt_params(CONTEXT_PROMPT, json!({"extra": "x"}), all_caps());
    let response = client
        .exchange(
            "prompts/get",
            retry_params(&other_arguments, &asked, answer.clone()),
        )
        .response;
    assert_state_rejected(&response);

    // The state itself was fine: on its own prompt it still works.
    let response = client
        .exchange("prompts/get", retry_params(&params, &asked, answer))
        .response;
    assert_eq!(prompt_text(&response), "Prompt with context: stolen");
}

// ---------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------

/// `resources/list`: the three resources, static-text first, each with a
/// URI and a name; `resources/templates/list`: the one template.
pub fn resources_and_templates_are_listed(client: &dyn McpClient) {
    let response = client.rpc("resources/list", json!({}), no_caps());
    let result = complete(&response);
    assert_cache_hints(result);
    let resources = result["resources"].as_array().expect("a resources array");
    let uris: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(uris, RESOURCES, "static-text first: {response}");
    for resource in resources {
        assert!(
            resource["name"].as_str().is_some_and(|n| !n.is_empty()),
            "every resource needs a name: {resource}"
        );
    }
    assert_eq!(resources[0]["name"], "static-text", "{response}");
    assert_eq!(resources[0]["mimeType"], "text/plain", "{response}");
    assert_eq!(resources[1]["mimeType"], "image/png", "{response}");

    let response = client.rpc("resources/templates/list", json!({}), no_caps());
    let result = complete(&response);
    assert_cache_hints(result);
    let templates = result["resourceTemplates"]
        .as_array()
        .expect("a resourceTemplates array");
    assert_eq!(templates.len(), 1, "{response}");
    assert_eq!(templates[0]["uriTemplate"], TEMPLATE, "{response}");
    assert_eq!(templates[0]["name"], "template", "{response}");
    assert_eq!(templates[0]["mimeType"], "application/json", "{response}");
}

/// Reads `uri`; returns the complete result.
#[track_caller]
fn read(client: &dyn McpClient, uri: &str) -> Value {
    let response = client.rpc("resources/read", json!({ "uri": uri }), no_caps());
    let result = complete(&response).clone();
    assert_cache_hints(&result);
    result
}

/// The one part of a read result's contents.
#[track_caller]
fn only_part(result: &Value) -> &Value {
    match result["contents"].as_array().map(Vec::as_slice) {
        Some([part]) => part,
        _ => panic!("expected exactly one part in contents: {result}"),
    }
}

/// A text resource reads as text, with its URI and type.
pub fn read_text_resource(client: &dyn McpClient) {
    let result = read(client, "test://static-text");
    assert_eq!(
        only_part(&result),
        &json!({
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }),
        "{result}"
    );
}

/// A binary resource reads as a Base64 `blob` of a PNG, with no `text`.
pub fn read_binary_resource(client: &dyn McpClient) {
    let result = read(client, "test://static-binary");
    let part = only_part(&result);
    assert_eq!(part["uri"], "test://static-binary", "{result}");
    assert_eq!(part["mimeType"], "image/png", "{result}");
    assert!(part.get("text").is_none(), "a blob has no text: {result}");
    assert!(
        base64_decode(&part["blob"]).starts_with(PNG_SIGNATURE),
        "the blob should be a PNG: {result}"
    );
}

/// A URI matching the template reads with the matched variable.
pub fn read_templated_resource(client: &dyn McpClient) {
    let result = read(client, "test://template/123/data");
    let part = only_part(&result);
    assert_eq!(part["uri"], "test://template/123/data", "{result}");
    assert_eq!(part["mimeType"], "application/json", "{result}");
    let text = part["text"].as_str().expect("a text part");
    assert!(text.contains("123"), "{result}");
    let data: Value = serde_json::from_str(text).expect("the text is JSON");
    assert_eq!(data["id"], "123", "{result}");

    // The component gets the variable percent-decoded, the URI as sent.
    let result = read(client, "test://template/a%20b%2Fc/data");
    let part = only_part(&result);
    assert_eq!(part["uri"], "test://template/a%20b%2Fc/data", "{result}");
    let data: Value = serde_json::from_str(part["text"].as_str().expect("a text part"))
        .expect("the text is JSON");
    assert_eq!(data["id"], "a b/c", "{result}");
}

/// A URI nobody serves, or that only looks like the template, is -32602
/// with `data.uri` equal to the requested URI.
pub fn read_unknown_resource(client: &dyn McpClient) {
    for uri in [
        "test://nonexistent-resource",
        "test://template/123/other",
        "test://static-text/",
    ] {
        let response = client.rpc("resources/read", json!({ "uri": uri }), no_caps());
        assert_invalid_params(&response, "an unknown resource");
        assert_eq!(
            error(&response)["data"]["uri"],
            uri,
            "data.uri must be the requested URI: {response}"
        );
    }
}

/// A cursor that no list handed out is -32602 on every list.
pub fn bad_cursors_are_refused(client: &dyn McpClient) {
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        for cursor in [json!("not-a-cursor"), json!("cGFnZS05OQ"), json!(3)] {
            let response = client.rpc(method, json!({ "cursor": cursor }), no_caps());
            assert_invalid_params(&response, &format!("{method} with cursor {cursor}"));
        }
    }
}

// ---------------------------------------------------------------------------
// Completions
// ---------------------------------------------------------------------------

/// The `completion` of a complete `completion/complete` result; checks its
/// shape (at most 100 string values, `hasMore` a boolean).
#[track_caller]
fn completion(response: &Value) -> Value {
    let completion = complete(response)["completion"].clone();
    let values = completion["values"]
        .as_array()
        .unwrap_or_else(|| panic!("completion.values must be an array: {response}"));
    assert!(values.len() <= 100, "at most 100 values: {response}");
    assert!(values.iter().all(Value::is_string), "{response}");
    assert!(completion["hasMore"].is_boolean(), "{response}");
    completion
}

/// A prompt argument completes from what was typed.
pub fn complete_prompt_argument(client: &dyn McpClient) {
    let reference = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    let params = completion_params(reference.clone(), "arg1", "test");
    let typed = completion(&client.exchange("completion/complete", params).response);
    assert_eq!(
        typed["values"],
        json!(["testValue1", "test-alpha", "test-beta"])
    );
    assert_eq!(typed["total"], 3);
    assert_eq!(typed["hasMore"], false);

    let params = completion_params(reference, "arg1", "");
    let everything = completion(&client.exchange("completion/complete", params).response);
    assert_eq!(everything["values"].as_array().map(Vec::len), Some(4));
}

/// A template variable completes; a listed resource has nothing to
/// complete.
pub fn complete_template_variable(client: &dyn McpClient) {
    let params = completion_params(json!({"type": "ref/resource", "uri": TEMPLATE}), "id", "1");
    let ids = completion(&client.exchange("completion/complete", params).response);
    assert_eq!(ids["values"], json!(["1", "123"]));

    let params = completion_params(
        json!({"type": "ref/resource", "uri": "test://static-text"}),
        "id",
        "",
    );
    let nothing = completion(&client.exchange("completion/complete", params).response);
    assert_eq!(nothing["values"], json!([]));
}

/// Unknown prompts, arguments and templates, and malformed references,
/// are -32602.
pub fn complete_bad_references(client: &dyn McpClient) {
    let cases = [
        (
            "an unknown prompt",
            json!({"type": "ref/prompt", "name": "no_such_prompt"}),
            "arg1",
        ),
        (
            "an argument the prompt does not declare",
            json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
            "arg3",
        ),
        (
            "an unknown template",
            json!({"type": "ref/resource", "uri": "test://nope/{id}"}),
            "id",
        ),
        (
            "a variable the template does not have",
            json!({"type": "ref/resource", "uri": TEMPLATE}),
            "name",
        ),
        (
            "a reference of an unknown type",
            json!({"type": "ref/tool", "name": "test_simple_text"}),
            "x",
        ),
        (
            "a prompt reference without a name",
            json!({"type": "ref/prompt"}),
            "arg1",
        ),
        (
            "a resource reference without a uri",
            json!({"type": "ref/resource", "name": TEMPLATE}),
            "id",
        ),
        (
            "a reference that is not an object",
            json!("ref/prompt"),
            "arg1",
        ),
    ];
    for (what, reference, argument) in cases {
        let params = completion_params(reference, argument, "");
        let response = client.exchange("completion/complete", params).response;
        assert_invalid_params(&response, what);
    }
    let no_ref = with_meta(
        json!({"argument": {"name": "arg1", "value": ""}}),
        no_caps(),
    );
    let response = client.exchange("completion/complete", no_ref).response;
    assert_invalid_params(&response, "a request without ref");
}

// ---------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------

/// `server/discover` advertises tools (with listChanged), prompts,
/// resources (subscribe, listChanged) and completions.
pub fn discover_advertises_everything(client: &dyn McpClient) {
    let response = client.rpc("server/discover", json!({}), no_caps());
    let result = complete(&response);
    assert_cache_hints(result);
    let caps = &result["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{response}");
    assert!(caps["prompts"].is_object(), "{response}");
    assert_eq!(caps["resources"]["subscribe"], true, "{response}");
    assert_eq!(caps["resources"]["listChanged"], true, "{response}");
    assert!(caps["completions"].is_object(), "{response}");
}
