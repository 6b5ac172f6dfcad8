//! The skills extension on the wire (`io.modelcontextprotocol/skills`,
//! SEP-2640), over the skills the registry reads from the components'
//! skills directories and those components serve as resources (see
//! [`crate::registry::skills`]):
//!
//! - `skills/list`: the entries (`{uri, frontmatter, resources}`), paginated
//!   like every list and cacheable;
//! - `skills/get {uri}`: one entry; -32602 for a URI that names no skill;
//! - `resources/directory/read {uri, cursor?}` (declared as
//!   `directoryRead: true`): the direct children of a skill's directory,
//!   subdirectories as `inode/directory`; -32602 for anything else;
//! - `resources/read` of a skills directory's file, answered from the bytes
//!   read at load, within the component's output limit (a skill a component
//!   serves is read from it, like its other resources).
//!
//! The extension is declared only while some skill is served. A skill is a
//! resource to the access rules: its `SKILL.md` URI names it, and its rule
//! covers its files and directories.

use serde::Serialize;
use serde_json::Value;

use super::access::{Gate, not_a_directory, unknown_skill};
use super::answer::Answer;
use super::catalog::{self, Catalog};
use super::jsonrpc::{self, Request, RpcError};
use super::mrtr::output_failure;
use super::wire;
use crate::access::Kind;
use crate::registry::skills::{DIRECTORY_MIME_TYPE, Skill, SkillFile};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The extension's settings as `server/discover` declares them.
pub(super) fn declared() -> Value {
    serde_json::json!({ "directoryRead": true })
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is `params.uri`.
pub(super) fn get(
    request: &Request,
    catalog: &Catalog,
    gate: Gate<'_>,
    ttl_ms: u64,
) -> Result<Answer, RpcError> {
    let uri = uri_param(request)?;
    let skill = catalog
        .registry
        .find_skill(uri)
        .ok_or_else(|| unknown_skill(uri))?;
    #[derive(Serialize)]
    struct GetResult<'a> {
        skill: &'a Skill,
    }
    let scope = gate.scope(&catalog.skills, Kind::Resource);
    Ok(Answer::complete(&GetResult {
        skill: skill.item(),
    })
    .cached(ttl_ms, scope))
}

/// `resources/directory/read`: the page `params.cursor` names of the
/// children of the skill directory at `params.uri`.
pub(super) fn directory_read(
    request: &Request,
    catalog: &Catalog,
    gate: Gate<'_>,
    page_size: usize,
    ttl_ms: u64,
) -> Result<Answer, RpcError> {
    let uri = uri_param(request)?;
    let not_a_directory = || not_a_directory(uri);
    let (skill, path) = catalog
        .registry
        .skill_place(uri)
        .ok_or_else(not_a_directory)?;
    let children = skill.item().children(path).ok_or_else(not_a_directory)?;
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Child<'a> {
        uri: &'a str,
        name: &'a str,
        mime_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<usize>,
    }
    let items: Vec<_> = children
        .iter()
        .map(|(uri, name, file)| Child {
            uri,
            name,
            mime_type: file.map_or(DIRECTORY_MIME_TYPE, |file| file.mime_type),
            size: file.map(|file| file.bytes.len()),
        })
        .collect();
    let page_size = page_size.max(1);
    let pages = items.len().div_ceil(page_size).max(1);
    let index = catalog::page_index(request.params.get("cursor"), pages)?;
    let start = (index * page_size).min(items.len());
    let end = (start + page_size).min(items.len());
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DirectoryResult<'a> {
        resources: &'a [Child<'a>],
        #[serde(skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    }
    let result = DirectoryResult {
        resources: &items[start..end],
        next_cursor: (index + 1 < pages).then(|| catalog::encode_cursor(index + 1)),
    };
    let scope = gate.scope(&catalog.skills, Kind::Resource);
    Ok(Answer::complete(&result).cached(ttl_ms, scope))
}

/// `resources/read` of a skill's file: its bytes as read at load, as text
/// when its type is text and it is UTF-8, else Base64; refused if the
/// result would exceed `limit` bytes (the component's output limit).
pub(super) fn read_file(
    uri: &str,
    file: &SkillFile,
    limit: usize,
    ttl_ms: u64,
    scope: &'static str,
) -> Answer {
    let text = is_text(file.mime_type)
        .then(|| std::str::from_utf8(&file.bytes).ok())
        .flatten();
    let result = wire::ReadResourceResult {
        contents: vec![wire::file_contents(uri, file.mime_type, text, &file.bytes)],
    };
    match jsonrpc::encode_within(&result, limit) {
        Ok(members) => {
            Answer::Complete(super::answer::Complete::new(members).cached(ttl_ms, scope))
        }
        Err(error) => Answer::Error(RpcError::internal(format!(
            "Reading resource '{uri}' failed: {}",
            output_failure(error)
        ))),
    }
}

/// Whether a skill file of this type is sent as text.
fn is_text(mime_type: &str) -> bool {
    mime_type.starts_with("text/")
        || matches!(
            mime_type,
            "application/json" | "application/yaml" | "image/svg+xml"
        )
}

/// The `uri` parameter, a string.
fn uri_param(request: &Request) -> Result<&str, RpcError> {
    request
        .params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: uri must be a string"))
}
