//! Who may use what: the rules of manifests and of the server's access
//! policy, for tools, prompts, resources, templates, completion, tasks and
//! 2025-era sessions; the listings each caller gets; the refusals (the
//! unknown item's error for what a caller may not see, 403 with the
//! `insufficient_scope` challenge for what it may see).

use airlock_e2e::McpClient;
use airlock_e2e::http::request_headers;
use airlock_e2e::legacy::legacy_caps;
use airlock_e2e::mcp::{
    ToolCall, complete, elicit, error_code, input_required, listen_params, no_caps, request,
    request_state, text,
};
use airlock_e2e::sse::Events;
use airlock_e2e::watcher::touch;
use serde_json::{Value, json};

use crate::support::{ALICE, Host, Http, RESOURCE_METADATA, Setup, Stream};

/// `ops` with every scope and group the rules below ask for.
const OPS_STRONG: &str = "ops-strong-token-0123456789";
/// `ops` again (the same principal), with none of them.
const OPS_WEAK: &str = "ops-weak-token-0123456789";

const TOKENS: &str = "ops-strong-token-0123456789 ops scope:deploy:write group:readers group:writers\n\
                      ops-weak-token-0123456789 ops\n";

const DEPLOY_RULES: &str = "[tools.deploy]\nallow = [\"scope:deploy:write\"]\n\
                            [tools.confirm]\nallow = [\"scope:deploy:write\"]\n";

const EVERYTHING_RULES: &str = "[prompts.test_simple_prompt]\nallow = [\"group:writers\"]\n\
                                [resources.\"test://static-text\"]\nallow = [\"group:readers\"]\n\
                                [resources.\"test://template/{id}/data\"]\nallow = [\"group:readers\"]\n";

/// A host serving hash (no rules), deploy and everything (with rules),
/// and the access policy `policy`.
fn start(policy: Option<&'static str>) -> Host {
    Host::start_with(
        &["hash", "deploy", "everything"],
        Setup {
            manifests: vec![
                ("deploy.toml", DEPLOY_RULES),
                ("everything.toml", EVERYTHING_RULES),
            ],
            tokens: TOKENS,
            access_policy: policy,
            ..Setup::default()
        },
    )
}

/// Who may see what they may not use: every authenticated caller.
const LIST_ALL: &str = "[list]\nallow = [\"authenticated\"]\n";

fn names(client: &dyn McpClient, method: &str, field: &str, key: &str) -> Vec<String> {
    client
        .list_all(method, field)
        .iter()
        .map(|item| item[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn deploy() -> ToolCall {
    ToolCall::new(
        "deploy",
        json!({"service": "api", "environment": "staging"}),
    )
}

/// The error member of `response`.
#[track_caller]
fn error(response: &Value) -> &Value {
    response
        .get("error")
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

#[test]
fn a_caller_sees_and_uses_only_what_its_scopes_and_groups_allow() {
    let host = start(None);
    // What a server without deploy and everything answers: the bytes of an
    // item that does not exist.
    let bare = Host::start(&["hash"]);
    let missing = bare.http();
    let alice = host.http();
    let tools = names(&alice, "tools/list", "tools", "name");
    assert!(tools.contains(&"sha256".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "deploy" || t == "confirm"),
        "{tools:?}"
    );
    let unseen = alice.exchange("tools/call", deploy().params());
    let unknown = missing.exchange("tools/call", deploy().params());
    assert_eq!(error(&unseen.response), error(&unknown.response));
    assert_eq!(unseen.status, unknown.status);
    assert_eq!(error(&unseen.response)["message"], "Unknown tool: deploy");

    let ops = host.http_as(OPS_STRONG);
    let tools = names(&ops, "tools/list", "tools", "name");
    assert!(tools.contains(&"deploy".to_owned()) && tools.contains(&"sha256".to_owned()));
    let called = ops.call(&deploy());
    assert!(called.get("result").is_some(), "{called}");

    // Listings that depend on the caller are private; the others public.
    let listed = alice.rpc("tools/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["cacheScope"], "private", "{listed}");
    let listed = missing.rpc("tools/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["cacheScope"], "public", "{listed}");
}

#[test]
fn a_caller_that_may_see_a_tool_is_told_which_scope_to_ask_for() {
    let host = start(Some(LIST_ALL));
    let alice = host.http();
    let tools = names(&alice, "tools/list", "tools", "name");
    assert!(tools.contains(&"deploy".to_owned()), "{tools:?}");
    let (_, reply) = alice.send("tools/call", deploy().params());
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"deploy:write\", resource_metadata=\"{RESOURCE_METADATA}\""
            )
            .as_str()
        )
    );
    let response = reply.json();
    assert_eq!(error_code(&response), -31403, "{response}");
    assert_eq!(
        error(&response)["data"]["missingScopes"],
        json!(["deploy:write"])
    );
    let called = host.http_as(OPS_STRONG).call(&deploy());
    assert!(called.get("result").is_some(), "{called}");
}

fn confirm() -> ToolCall {
    ToolCall::new("confirm", json!({"action": "ship"}))
}

#[test]
fn a_scope_revoked_mid_flow_stops_it_at_its_next_round() {
    let host = start(Some(LIST_ALL));
    let strong = host.http_as(OPS_STRONG);
    let state = request_state(input_required(&strong.call(&confirm())));
    let yes = json!({"confirm": elicit("accept", Some(json!({"ok": true})))});
    // The same principal, with a token that lost the scope.
    let weak = host.http_as(OPS_WEAK);
    let (_, reply) = weak.send(
        "tools/call",
        confirm()
            .responses(yes.clone())
            .state(state.clone())
            .params(),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    let done = strong.call(&confirm().responses(yes).state(state));
    assert_eq!(text(complete(&done)).trim(), "confirmed ship", "{done}");
}

#[test]
fn prompts_resources_templates_and_completion_obey_the_rules() {
    let host = start(None);
    let bare = Host::start(&["hash"]);
    let missing = bare.http();
    let alice = host.http();
    let ops = host.http_as(OPS_STRONG);
    let prompts = names(&alice, "prompts/list", "prompts", "name");
    assert!(
        !prompts.contains(&"test_simple_prompt".to_owned()),
        "{prompts:?}"
    );
    assert!(
        prompts.contains(&"test_prompt_with_image".to_owned()),
        "{prompts:?}"
    );
    assert!(
        names(&ops, "prompts/list", "prompts", "name").contains(&"test_simple_prompt".to_owned())
    );
    let resources = names(&alice, "resources/list", "resources", "uri");
    assert!(
        !resources.contains(&"test://static-text".to_owned()),
        "{resources:?}"
    );
    assert!(
        resources.contains(&"test://static-binary".to_owned()),
        "{resources:?}"
    );
    let templates = names(
        &alice,
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
    );
    assert!(templates.is_empty(), "{templates:?}");
    assert_eq!(
        names(
            &ops,
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate"
        ),
        ["test://template/{id}/data"]
    );

    let requests = [
        ("prompts/get", json!({"name": "test_simple_prompt"})),
        ("resources/read", json!({"uri": "test://static-text"})),
        ("resources/read", json!({"uri": "test://template/7/data"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": {"name": "a", "value": ""}}),
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"}, "argument": {"name": "id", "value": ""}}),
        ),
    ];
    for (method, params) in requests {
        let unseen = alice.rpc(method, params.clone(), no_caps());
        let unknown = missing.rpc(method, params.clone(), no_caps());
        assert_eq!(error(&unseen), error(&unknown), "{method} {params}");
        let allowed = ops.rpc(method, params.clone(), no_caps());
        assert!(
            allowed.get("error").is_none_or(|e| e["code"] != -31403),
            "{method}: {allowed}"
        );
        if method != "completion/complete" || params["ref"]["type"] == "ref/resource" {
            assert!(
                allowed.get("result").is_some(),
                "{method} {params}: {allowed}"
            );
        }
    }
    let listed = alice.rpc("resources/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["cacheScope"], "private", "{listed}");
}

#[test]
fn sessions_of_2025_clients_obey_the_same_rules() {
    let host = start(Some(LIST_ALL));
    let alice = host.http();
    let session = alice.open_session(json!({}));
    let listed = session.rpc("tools/list", json!({}));
    let tools: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"deploy"), "{listed}");
    let (_, reply) = session.request(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api", "environment": "staging"}}),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|c| c.contains("scope=\"deploy:write\"")),
        "{:?}",
        reply.headers
    );
    let ops = host.http_as(OPS_STRONG);
    let session = ops.open_session(json!({}));
    let called = session.rpc(
        "tools/call",
        json!({"name": "deploy", "arguments": {"service": "api", "environment": "staging"}}),
    );
    assert!(called.get("result").is_some(), "{called}");
}

#[test]
fn the_policy_requires_a_floor_and_rules_items_manifests_leave_open() {
    let host = start(Some(
        "[default]\ntools = [\"group:readers\"]\n[list]\nallow = [\"anyone\"]\n",
    ));
    let alice = host.http();
    let (_, reply) = alice.send(
        "tools/call",
        ToolCall::new("sha256", json!({"text": "a"})).params(),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert_eq!(reply.header("www-authenticate"), None, "no scope would do");
    let ops = host.http_as(OPS_STRONG);
    let hashed = ops.call(&ToolCall::new("sha256", json!({"text": "a"})));
    assert!(hashed.get("result").is_some(), "{hashed}");

    let floor = start(Some("[require]\nallow = [\"scope:mcp:tools\"]\n"));
    let ops = floor.http_as(OPS_STRONG);
    assert!(names(&ops, "tools/list", "tools", "name").is_empty());
    assert!(names(&ops, "prompts/list", "prompts", "name").is_empty());
}

#[test]
fn rules_do_not_apply_on_stdio() {
    let host = start(Some("[require]\nallow = [\"scope:mcp:tools\"]\n"));
    let stdio = host.stdio();
    assert!(stdio.tool_names().contains(&"deploy".to_owned()));
    let called = stdio.call(&ToolCall::new("sha256", json!({"text": "a"})));
    assert!(called.get("result").is_some(), "{called}");
}

#[test]
fn a_rule_naming_an_item_the_component_does_not_serve_refuses_the_component() {
    let host = Host::start_with(
        &["hash"],
        Setup {
            manifests: vec![("hash.toml", "[tools.sha512]\nallow = [\"anyone\"]\n")],
            ..Setup::default()
        },
    );
    assert!(host.http().tool_names().is_empty());
}

#[test]
fn tasks_follow_the_rule_of_their_tool_for_every_token() {
    let host = Host::start_with(
        &["report"],
        Setup {
            manifests: vec![(
                "report.toml",
                "[tools.build_report]\nallow = [\"scope:deploy:write\"]\n",
            )],
            tokens: TOKENS,
            ..Setup::default()
        },
    );
    let mut caps = no_caps();
    caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    let report = ToolCall::new(
        "build_report",
        json!({"items": ["one", "two", "three", "four"], "sliceSize": 2}),
    )
    .caps(caps.clone());
    let (strong, weak) = (host.http_as(OPS_STRONG), host.http_as(OPS_WEAK));

    let refused = weak.call(&report);
    assert_eq!(
        error(&refused)["message"],
        "Unknown tool: build_report",
        "{refused}"
    );
    let created = strong.call(&report);
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    // The same principal with a token that lacks the scope: its task now
    // reads as unknown, to every tasks method.
    for method in ["tasks/get", "tasks/cancel"] {
        let response = weak.rpc(method, json!({ "taskId": id }), caps.clone());
        assert_eq!(error_code(&response), -32602, "{method}: {response}");
        assert!(
            error(&response)["message"]
                .as_str()
                .is_some_and(|message| message.contains("unknown taskId")),
            "{method}: {response}"
        );
    }
    let got = strong.rpc("tasks/get", json!({ "taskId": id }), caps.clone());
    assert_eq!(complete(&got)["taskId"], id.as_str(), "{got}");
    let cancelled = strong.rpc("tasks/cancel", json!({ "taskId": id }), caps);
    assert!(cancelled.get("result").is_some(), "{cancelled}");
}

/// A host serving everything whose tools only the group `writers` may
/// use (the policy's default), so `OPS_WEAK` sees none of them.
fn writers_only_host() -> Host {
    Host::start_with(
        &["everything"],
        Setup {
            tokens: TOKENS,
            access_policy: Some("[default]\ntools = [\"group:writers\"]\n"),
            ..Setup::default()
        },
    )
}

/// The triggers that report a change of the tools list, then the prompts'.
const LIST_TRIGGERS: [&str; 2] = ["test_trigger_tool_change", "test_trigger_prompt_change"];

/// After both lists were reported changed: the `writer` (who may use the
/// tools) hears of both; the `reader` (who sees no tool) hears first of
/// the prompts'.
#[track_caller]
fn assert_each_hears_its_own_view(writer: &mut Stream, reader: &mut Stream) {
    let mut heard: Vec<Value> = (0..2)
        .map(|_| writer.expect_event("a list change")["method"].clone())
        .collect();
    heard.sort_by_key(Value::to_string);
    assert_eq!(
        heard,
        [
            "notifications/prompts/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    let first = reader.expect_event("the prompts' change");
    assert_eq!(
        first["method"], "notifications/prompts/list_changed",
        "{first}"
    );
}

#[test]
fn a_session_stream_hears_of_list_changes_only_in_what_its_caller_sees() {
    let host = writers_only_host();
    let (strong, weak) = (host.http_as(OPS_STRONG), host.http_as(OPS_WEAK));
    let writer = strong.open_session(legacy_caps());
    let reader = weak.open_session(legacy_caps());
    let (mut writer_stream, mut reader_stream) = (writer.listen(), reader.listen());
    for trigger in LIST_TRIGGERS {
        writer.result("tools/call", json!({"name": trigger, "arguments": {}}));
    }
    assert_each_hears_its_own_view(&mut writer_stream, &mut reader_stream);
}

/// A `subscriptions/listen` stream of `http`'s caller for tool and prompt
/// list changes, after its acknowledgement.
fn listen_to_lists(http: &Http) -> Stream {
    listen_to(
        http,
        json!({"toolsListChanged": true, "promptsListChanged": true}),
    )
    .0
}

/// A `subscriptions/listen` stream of `http`'s caller for `notifications`,
/// after its acknowledgement, and that acknowledgement.
fn listen_to(http: &Http, notifications: Value) -> (Stream, Value) {
    let params = listen_params(notifications);
    let headers = request_headers("subscriptions/listen", &params);
    let body = request(http.next_id(), "subscriptions/listen", params);
    let mut stream = http
        .open(&headers, &body)
        .unwrap_or_else(|reply| panic!("a listen stream, got {}", reply.text()));
    let ack = stream.expect_event("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    (stream, ack)
}

#[test]
fn a_listen_stream_hears_of_list_changes_only_in_what_its_caller_sees() {
    let host = writers_only_host();
    let (strong, weak) = (host.http_as(OPS_STRONG), host.http_as(OPS_WEAK));
    let (mut writer, mut reader) = (listen_to_lists(&strong), listen_to_lists(&weak));
    for trigger in LIST_TRIGGERS {
        let called = strong.call(&ToolCall::new(trigger, json!({})));
        assert!(called.get("result").is_some(), "{called}");
    }
    assert_each_hears_its_own_view(&mut writer, &mut reader);
}

/// The watcher, whose `watch://alpha` and items (`watch://items/{name}`,
/// a template) only the group `readers` may read; `watch://beta` is open.
fn watcher_host() -> Host {
    Host::start_with(
        &["watcher"],
        Setup {
            manifests: vec![(
                "watcher.toml",
                "[resources.\"watch://alpha\"]\nallow = [\"group:readers\"]\n\
                 [resources.\"watch://items/{name}\"]\nallow = [\"group:readers\"]\n",
            )],
            tokens: TOKENS,
            ..Setup::default()
        },
    )
}

/// The watcher's resources only `readers` may read, and one anyone may.
const READERS_ONLY: [&str; 2] = ["watch://alpha", "watch://items/7"];
const OPEN: &str = "watch://beta";

/// Reports every resource of [`READERS_ONLY`], then [`OPEN`].
fn touch_all(http: &Http) {
    for uri in READERS_ONLY {
        touch(http, uri);
    }
    touch(http, OPEN);
}

/// The URI of the next `notifications/resources/updated` on `stream`.
#[track_caller]
fn next_update(stream: &mut impl Events) -> String {
    let note = stream.expect_event("a resource update");
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    note["params"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("an updated uri: {note}"))
        .to_owned()
}

#[test]
fn a_listen_stream_hears_only_of_updates_its_caller_may_read() {
    let host = watcher_host();
    let (strong, weak) = (host.http_as(OPS_STRONG), host.http_as(OPS_WEAK));
    let exact = json!({"resourceSubscriptions": [READERS_ONLY[0], READERS_ONLY[1], OPEN]});
    let prefix = json!({"resourceSubscriptions": ["watch://"]});
    let (mut reader, _) = listen_to(&strong, exact.clone());
    // The same principal, listening with a token without the group.
    let (mut by_uri, _) = listen_to(&weak, exact);
    let (mut by_prefix, _) = listen_to(&weak, prefix);
    // Reported by a caller that may read them all.
    touch_all(&strong);
    for uri in READERS_ONLY.iter().chain([&OPEN]) {
        assert_eq!(next_update(&mut reader), *uri);
    }
    // Updates reach every stream in order: the first a stream gets is the
    // first it may hear of.
    assert_eq!(next_update(&mut by_uri), OPEN);
    assert_eq!(next_update(&mut by_prefix), OPEN);
}

#[test]
fn a_session_stream_hears_only_of_updates_its_caller_may_read() {
    let host = watcher_host();
    let (strong, weak) = (host.http_as(OPS_STRONG), host.http_as(OPS_WEAK));
    let reader = strong.open_session(legacy_caps());
    let unseen = weak.open_session(legacy_caps());
    for session in [&reader, &unseen] {
        for uri in READERS_ONLY.iter().chain([&OPEN]) {
            session.result("resources/subscribe", json!({ "uri": uri }));
        }
    }
    let prefixed = weak.open_session(legacy_caps());
    prefixed.result("resources/subscribe", json!({"uri": "watch://"}));
    let mut streams = [&reader, &unseen, &prefixed].map(|session| session.listen());
    touch_all(&strong);
    let [reader, unseen, prefixed] = &mut streams;
    for uri in READERS_ONLY.iter().chain([&OPEN]) {
        assert_eq!(next_update(reader), *uri);
    }
    assert_eq!(next_update(unseen), OPEN);
    assert_eq!(next_update(prefixed), OPEN);
}

#[test]
fn subscribing_to_a_resource_the_caller_may_not_see_answers_as_an_unknown_one() {
    let host = watcher_host();
    // What a server without the watcher answers: the bytes of a resource
    // that does not exist.
    let bare = Host::start(&["hash"]);
    for uri in READERS_ONLY {
        let filter = json!({ "resourceSubscriptions": [uri] });
        let (_, unseen) = listen_to(&host.http_as(OPS_WEAK), filter.clone());
        let (_, unknown) = listen_to(&bare.http_as(ALICE), filter);
        assert_eq!(unseen, unknown, "{uri}");

        let (weak, alice) = (host.http_as(OPS_WEAK), bare.http_as(ALICE));
        let (unseen, unknown) = (
            weak.open_session(legacy_caps()),
            alice.open_session(legacy_caps()),
        );
        for method in ["resources/subscribe", "resources/unsubscribe"] {
            let (_, unseen) = unseen.request(method, json!({ "uri": uri }));
            let (_, unknown) = unknown.request(method, json!({ "uri": uri }));
            assert_eq!(unseen.status, unknown.status, "{method} {uri}");
            assert_eq!(unseen.text(), unknown.text(), "{method} {uri}");
        }
    }
}
