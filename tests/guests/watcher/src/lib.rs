//! Test-only guest for Airlock's subscription tests.
//!
//! Lists two resources, `watch://alpha` and `watch://beta`, and offers one
//! tool, `touch {uri}`, that reports the resource at `uri` as updated
//! (`notify::resource_updated`), so a test decides when an update happens.
//! Never deploy it.

use airlock_guest::{
    Call, Error, Outcome, ReadOutcome, Resource, ResourceContents, ResourceRead, Resources, Tool,
    Tools, json, notify,
};
use serde::Deserialize;

/// The resources this component lists.
const URIS: [&str; 2] = ["watch://alpha", "watch://beta"];

struct Watcher;

#[derive(Deserialize)]
struct Touch {
    uri: String,
}

impl Tools for Watcher {
    fn list() -> Vec<Tool> {
        vec![
            Tool::new(
                "touch",
                "Reports the resource at `uri` as updated, then returns `touched <uri>`.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": { "uri": { "type": "string" } },
                "required": ["uri"]
            })),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "touch" => touch(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

fn touch(call: &Call) -> Result<Outcome, Error> {
    let Touch { uri } = call.args()?;
    notify::resource_updated(&uri);
    Ok(Outcome::text(format!("touched {uri}")))
}

impl Resources for Watcher {
    fn list() -> Vec<Resource> {
        URIS.iter()
            .map(|uri| {
                Resource::new(*uri, uri.trim_start_matches("watch://"))
                    .description("A resource the tests report as updated with `touch`")
                    .mime_type("text/plain")
            })
            .collect()
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        if URIS.contains(&read.uri()) {
            ResourceContents::text(read.uri(), format!("contents of {}", read.uri()))
                .mime_type("text/plain")
                .into()
        } else {
            ReadOutcome::NotFound
        }
    }
}

airlock_guest::export! {
    tools: Watcher,
    resources: Watcher,
}
