//! Skills served from files (the skills extension): `skills/list`,
//! `skills/get`, `resources/directory/read` and `resources/read` of a
//! skill's files, their errors, the extension declared only while a skill
//! is served, and access rules applied to skills as to resources.

use airlock::protocol::ProtocolSettings;
use airlock_e2e::McpClient;
use airlock_e2e::mcp::{complete, error_code, no_caps};
use serde_json::{Value, json};

use crate::support::{Host, Setup};

const SKILL_MD: &str = "---\nname: demo\ndescription: Shows how to use the demo tools\nmetadata:\n  level: 2\n---\n# Demo\n\nSee references/GUIDE.md.\n";
const GUIDE: &str = "# Guide\n";
const EXTENSION: &str = "io.modelcontextprotocol/skills";

fn skill_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("everything.skills/demo/SKILL.md", SKILL_MD),
        ("everything.skills/demo/references/GUIDE.md", GUIDE),
        // Broken: not served, and the rest still is.
        (
            "everything.skills/Not_Valid/SKILL.md",
            "---\nname: Not_Valid\ndescription: d\n---\n",
        ),
    ]
}

fn start(setup: Setup) -> Host {
    Host::start_with(
        &["everything"],
        Setup {
            files: skill_files(),
            ..setup
        },
    )
}

fn sha256(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn skills_are_declared_listed_got_and_read_with_their_digests() {
    let host = start(Setup::default());
    let http = host.http();
    let discovered = http.rpc("server/discover", json!({}), no_caps());
    assert_eq!(
        complete(&discovered)["capabilities"]["extensions"][EXTENSION],
        json!({"directoryRead": true}),
        "{discovered}"
    );

    let listed = http.rpc("skills/list", json!({}), no_caps());
    let result = complete(&listed);
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"] == "public",
        "{listed}"
    );
    let expected = json!({
        "uri": "skill://demo/SKILL.md",
        "frontmatter": {
            "name": "demo",
            "description": "Shows how to use the demo tools",
            "metadata": {"level": 2}
        },
        "resources": [
            {"uri": "skill://demo/SKILL.md", "digest": sha256(SKILL_MD), "size": SKILL_MD.len()},
            {"uri": "skill://demo/references/GUIDE.md", "digest": sha256(GUIDE), "size": GUIDE.len()},
        ]
    });
    assert_eq!(result["skills"], json!([expected]), "{listed}");

    let got = http.rpc(
        "skills/get",
        json!({"uri": "skill://demo/SKILL.md"}),
        no_caps(),
    );
    let result = complete(&got);
    assert_eq!(result["skill"], expected);
    assert!(
        result.get("nextCursor").is_none() && result["ttlMs"].is_u64(),
        "{got}"
    );

    for (uri, text) in [
        ("skill://demo/SKILL.md", SKILL_MD),
        ("skill://demo/references/GUIDE.md", GUIDE),
    ] {
        let read = http.rpc("resources/read", json!({"uri": uri}), no_caps());
        assert_eq!(
            complete(&read)["contents"],
            json!([{"uri": uri, "mimeType": "text/markdown", "text": text}]),
            "{read}"
        );
    }

    let resources = http.list_all("resources/list", "resources");
    let skill_md = resources
        .iter()
        .find(|r| r["uri"] == "skill://demo/SKILL.md")
        .unwrap_or_else(|| panic!("SKILL.md is listed: {resources:?}"));
    assert_eq!(skill_md["name"], "demo");
    assert_eq!(skill_md["description"], "Shows how to use the demo tools");
    assert_eq!(skill_md["mimeType"], "text/markdown");
}

#[test]
fn directories_are_read_page_by_page() {
    let host = start(Setup {
        protocol: ProtocolSettings {
            page_size: 1,
            ..ProtocolSettings::default()
        },
        ..Setup::default()
    });
    let http = host.http();
    let mut children = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..10 {
        let mut params = json!({"uri": "skill://demo"});
        if let Some(cursor) = &cursor {
            params["cursor"] = cursor.clone();
        }
        let read = http.rpc("resources/directory/read", params, no_caps());
        let result = complete(&read);
        children.extend(result["resources"].as_array().unwrap().iter().cloned());
        cursor = result.get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(
        children,
        [
            json!({"uri": "skill://demo/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": SKILL_MD.len()}),
            json!({"uri": "skill://demo/references", "name": "references", "mimeType": "inode/directory"}),
        ]
    );
    let read = http.rpc(
        "resources/directory/read",
        json!({"uri": "skill://demo/references"}),
        no_caps(),
    );
    assert_eq!(
        complete(&read)["resources"][0]["uri"],
        "skill://demo/references/GUIDE.md"
    );
}

#[test]
fn what_names_no_skill_or_directory_is_invalid_params() {
    let host = start(Setup::default());
    let http = host.http();
    for (method, uri) in [
        ("skills/get", "skill://nowhere/SKILL.md"),
        ("skills/get", "skill://demo/references/GUIDE.md"),
        ("skills/get", "skill://Not_Valid/SKILL.md"),
        ("resources/directory/read", "skill://demo/SKILL.md"),
        ("resources/directory/read", "skill://demo/nowhere"),
        ("resources/directory/read", "test://static-text"),
        ("resources/read", "skill://demo/missing.md"),
    ] {
        let response = http.rpc(method, json!({"uri": uri}), no_caps());
        assert_eq!(error_code(&response), -32602, "{method} {uri}: {response}");
    }
    let response = http.rpc("skills/get", json!({}), no_caps());
    assert_eq!(error_code(&response), -32602, "{response}");
}

#[test]
fn without_skills_the_extension_is_not_declared() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let discovered = http.rpc("server/discover", json!({}), no_caps());
    let extensions = &complete(&discovered)["capabilities"]["extensions"];
    assert!(extensions.get(EXTENSION).is_none(), "{discovered}");
    let listed = http.rpc("skills/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["skills"], json!([]));
}

/// `ops` with the group the rule below asks for.
const READER: &str = "reader-token-0123456789";

#[test]
fn a_skill_a_caller_may_not_use_does_not_exist_for_it() {
    let host = start(Setup {
        manifests: vec![(
            "everything.toml",
            "[resources.\"skill://demo/SKILL.md\"]\nallow = [\"group:readers\"]\n",
        )],
        tokens: "reader-token-0123456789 ops group:readers\n",
        ..Setup::default()
    });
    let alice = host.http();
    let listed = alice.rpc("skills/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["skills"], json!([]), "{listed}");
    assert_eq!(complete(&listed)["cacheScope"], "private");
    for (method, uri) in [
        ("skills/get", "skill://demo/SKILL.md"),
        ("resources/read", "skill://demo/references/GUIDE.md"),
        ("resources/directory/read", "skill://demo"),
    ] {
        let response = alice.rpc(method, json!({"uri": uri}), no_caps());
        assert_eq!(error_code(&response), -32602, "{method}: {response}");
    }
    let resources = alice.list_all("resources/list", "resources");
    assert!(
        !resources
            .iter()
            .any(|r| r["uri"] == "skill://demo/SKILL.md")
    );

    let reader = host.http_as(READER);
    let listed = reader.rpc("skills/list", json!({}), no_caps());
    assert_eq!(
        complete(&listed)["skills"].as_array().map(Vec::len),
        Some(1)
    );
    let read = reader.rpc(
        "resources/read",
        json!({"uri": "skill://demo/references/GUIDE.md"}),
        no_caps(),
    );
    assert_eq!(complete(&read)["contents"][0]["text"], GUIDE);
}
