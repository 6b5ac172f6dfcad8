//! Skills shipped beside a component (`NAME.skills/<skill>/`), against the
//! real binary: a skill that breaks a rule or a limit is refused at load
//! with a log line saying why (the component and its other skills still
//! load), and a changed file is served, with its new digest, after the
//! reload that follows. A skill a component serves itself is held to the
//! same rules: one whose frontmatter is an alias bomb is refused before it
//! expands.

use airlock_e2e::mcp::{complete, no_caps};
use airlock_e2e::oci_registry::sha256;
use airlock_e2e::paths::component;
use airlock_e2e::stamp::replace_once;
use airlock_e2e::{Airlock, McpClient, ToolsDir, wait_until};
use serde_json::{Value, json};

const SKILL_MD: &str = "---\nname: hashing\ndescription: How to hash text with the sha256 tool\n---\nCall `sha256` with `{\"text\": ...}`.\n";

/// The entries `skills/list` serves (one page is all these tests make).
fn skills(client: &dyn McpClient) -> Vec<Value> {
    let listed = client.rpc("skills/list", json!({}), no_caps());
    complete(&listed)["skills"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn skills_that_break_a_rule_or_a_limit_are_refused_at_load_with_a_log_line() {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_bytes("hash.skills/hashing/SKILL.md", SKILL_MD.as_bytes());
    // Three files, over --max-skill-files 2.
    tools.add_bytes(
        "hash.skills/many/SKILL.md",
        b"---\nname: many\ndescription: d\n---\n",
    );
    tools.add_bytes("hash.skills/many/a.txt", b"a");
    tools.add_bytes("hash.skills/many/b.txt", b"b");
    // 17 MiB, over the extension's 16 MiB.
    tools.add_bytes(
        "hash.skills/large/SKILL.md",
        b"---\nname: large\ndescription: d\n---\n",
    );
    tools.add_bytes("hash.skills/large/data.bin", &vec![0u8; 17 << 20]);
    // A name the naming rules refuse.
    tools.add_bytes(
        "hash.skills/Bad--name/SKILL.md",
        b"---\nname: Bad--name\ndescription: d\n---\n",
    );
    let server = Airlock::new(&tools)
        .args(["--max-skill-files", "2"])
        .start_http();
    let client = server.client();
    let served: Vec<_> = skills(&client).iter().map(|s| s["uri"].clone()).collect();
    assert_eq!(served, [json!("skill://hashing/SKILL.md")]);
    server.wait_for_log_lines(&["skipping skill", "many", "--max-skill-files"], 1);
    server.wait_for_log_lines(&["skipping skill", "large", "--max-skill-size"], 1);
    server.wait_for_log_lines(&["skipping skill", "Bad--name", "naming rules"], 1);
    let called = client.call(&airlock_e2e::ToolCall::new("sha256", json!({"text": "x"})));
    assert!(
        called.get("result").is_some(),
        "the component still serves: {called}"
    );
}

#[test]
fn a_changed_skill_file_is_served_with_its_new_digest_after_the_reload() {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_bytes("hash.skills/hashing/SKILL.md", SKILL_MD.as_bytes());
    tools.add_bytes("hash.skills/hashing/notes.md", b"first");
    let server = Airlock::new(&tools)
        .args(["--reload-interval", "50ms"])
        .start_http();
    let client = server.client();
    let digest_of_notes = |client: &dyn McpClient| {
        skills(client)
            .first()
            .and_then(|skill| {
                skill["resources"]
                    .as_array()?
                    .iter()
                    .find(|r| r["uri"] == "skill://hashing/notes.md")
                    .map(|r| r["digest"].clone())
            })
            .unwrap_or(Value::Null)
    };
    assert_eq!(digest_of_notes(&client), json!(sha256(b"first")));

    tools.add_bytes("hash.skills/hashing/notes.md", b"second, longer");
    let expected = json!(sha256(b"second, longer"));
    wait_until("the new digest of notes.md", || {
        let found = digest_of_notes(&client);
        if found == expected {
            Ok(())
        } else {
            Err(format!("{found}"))
        }
    });
    let read = client.rpc(
        "resources/read",
        json!({"uri": "skill://hashing/notes.md"}),
        no_caps(),
    );
    assert_eq!(complete(&read)["contents"][0]["text"], "second, longer");
}

#[test]
fn a_component_serves_a_skill_as_resources_beside_its_skills_directory() {
    let tools = ToolsDir::with(&["watcher"]);
    tools.add_bytes(
        "watcher.skills/subscribing/SKILL.md",
        b"---\nname: subscribing\ndescription: How to subscribe to a watched resource\n---\nSubscribe, then touch.\n",
    );
    let server = Airlock::new(&tools).start_http();
    let client = server.client();

    let listed = skills(&client);
    let uris: Vec<_> = listed.iter().map(|s| s["uri"].clone()).collect();
    assert_eq!(
        uris,
        [
            json!("skill://subscribing/SKILL.md"),
            json!("skill://watching/SKILL.md")
        ],
        "the directory's skill, then the component's"
    );
    let served = &listed[1];
    assert_eq!(served["resources"], "dynamic", "{served}");
    assert_eq!(
        served["frontmatter"],
        json!({"name": "watching", "description": "How to make a watched resource report an update"})
    );
    let got = client.rpc(
        "skills/get",
        json!({"uri": "skill://watching/SKILL.md"}),
        no_caps(),
    );
    assert_eq!(&complete(&got)["skill"], served);

    // Its SKILL.md is the component's resource: listed once, read from it.
    let resources = client.rpc("resources/list", json!({}), no_caps());
    let skill_md: Vec<_> = complete(&resources)["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["uri"] == "skill://watching/SKILL.md")
        .collect();
    assert_eq!(skill_md.len(), 1, "{resources}");
    let read = client.rpc(
        "resources/read",
        json!({"uri": "skill://watching/SKILL.md"}),
        no_caps(),
    );
    assert!(
        complete(&read)["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Call `touch`")),
        "{read}"
    );
    // Its files are not enumerated: no directory to read.
    let directory = client.rpc(
        "resources/directory/read",
        json!({"uri": "skill://watching"}),
        no_caps(),
    );
    assert_eq!(directory["error"]["code"], -32602, "{directory}");
}

/// The `SKILL.md` the `bombs` test guest serves as `skill://served/SKILL.md`,
/// which copies of it replace.
const SERVED_SKILL_MD: &[u8] = include_bytes!("../guests/bombs/src/SKILL.md");

/// A frontmatter of eight levels of eight aliases: 8^8 (16.7 million)
/// strings once expanded, in 296 bytes.
const ALIAS_BOMB: &str = "---
name: served
description: An alias bomb
a: &a [x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g]
---
";

/// How much more than a server on the same components without the bomb
/// the server may ever hold while it refuses the bomb, in KiB: far below
/// what expanding the bomb takes (over 3 GiB), room for what varies between
/// two loads.
const MAX_PEAK_ABOVE_KIB: u64 = 64 << 10;

#[test]
fn a_served_skill_whose_frontmatter_is_an_alias_bomb_is_refused_before_it_expands() {
    let guest = std::fs::read(component("bombs")).expect("read the bombs component");
    let tools = ToolsDir::with(&["hash"]);
    tools.add_bytes("hash.skills/hashing/SKILL.md", SKILL_MD.as_bytes());
    // As built, the component serves its skill.
    tools.add_bytes("bombs.wasm", &guest);
    let server = Airlock::new(&tools).start_http();
    let uris = |client: &dyn McpClient| -> Vec<Value> {
        skills(client).iter().map(|s| s["uri"].clone()).collect()
    };
    assert_eq!(
        uris(&server.client()),
        [
            json!("skill://served/SKILL.md"),
            json!("skill://hashing/SKILL.md")
        ]
    );
    let without_bomb = server.memory().peak_kib;
    drop(server);

    // The bomb, padded to the length of the text it replaces.
    let mut bomb = ALIAS_BOMB.as_bytes().to_vec();
    assert!(bomb.len() < SERVED_SKILL_MD.len(), "{}", bomb.len());
    bomb.resize(SERVED_SKILL_MD.len(), b'x');
    tools.add_bytes("bombs.wasm", &replace_once(&guest, SERVED_SKILL_MD, &bomb));
    let server = Airlock::new(&tools).start_http();
    let line = server.wait_for_log_lines(
        &["skipping skill", "bombs.wasm", "skill://served/SKILL.md"],
        1,
    );
    assert!(line.contains("alias"), "the line says why: {line}");
    // That skill only: the component, the other component and its skill
    // are served.
    let client = server.client();
    assert_eq!(uris(&client), [json!("skill://hashing/SKILL.md")]);
    assert_eq!(client.tool_names(), ["nested", "sha256"]);
    airlock_e2e::flows::sha256(&client);
    let peak = server.memory().peak_kib;
    assert!(
        peak < without_bomb + MAX_PEAK_ABOVE_KIB,
        "the server peaked at {peak} KiB, {without_bomb} KiB without the bomb: it expanded the aliases"
    );
}
