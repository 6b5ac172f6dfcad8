//! Test-only guest for the MCP Apps tests: a tool `show` naming the App
//! `ui://app-meta/app.html`, which it serves, with `_meta` texts the tests
//! choose, sent as they are (object or not, large or small) so the tests
//! can see the host refuse what it must:
//!
//! - the tool's listed `_meta` is [`LISTED_META`], an object of 2 KiB (over
//!   a server's `--max-output 1KiB`); the tests stamp copies of the
//!   component with other JSON of the same length in its place (listing
//!   runs with nothing granted, so it cannot read the environment);
//! - the App's `_meta` as read is the environment variable `READ_META` (the
//!   manifest's `[env]`), or `{"ui":{}}`.
//!
//! Never deploy it.

use airlock_guest::apps::APP_MIME_TYPE;
use airlock_guest::{
    Call, Outcome, ReadOutcome, Resource, ResourceContents, ResourceRead, Resources, Tool, Tools,
};

/// The App this component serves.
const APP_URI: &str = "ui://app-meta/app.html";

struct AppMeta;

/// The tool's listed `_meta`, which the tests replace in copies.
const LISTED_META: &str = include_str!("listed-meta.json");

/// [`LISTED_META`], read from the component's memory where the copies
/// stamp it (used directly, the compiler might fold it into the code).
fn listed_meta() -> Option<String> {
    Some(std::hint::black_box(LISTED_META).to_owned())
}

/// The App's `_meta` as read: `READ_META`, or an empty `ui`.
fn read_meta() -> Option<String> {
    Some(std::env::var("READ_META").unwrap_or_else(|_| r#"{"ui":{}}"#.to_owned()))
}

impl Tools for AppMeta {
    fn list() -> Vec<Tool> {
        vec![Tool {
            meta: listed_meta(),
            ..Tool::new("show", "Shows the App.")
        }]
    }

    fn call(_: Call) -> Outcome {
        Outcome::text("shown")
    }
}

impl Resources for AppMeta {
    fn list() -> Vec<Resource> {
        vec![Resource::new(APP_URI, "app").mime_type(APP_MIME_TYPE)]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        (read.uri() == APP_URI)
            .then(|| ResourceContents {
                meta: read_meta(),
                ..ResourceContents::app(APP_URI, "<!doctype html><title>app</title>")
            })
            .into()
    }
}

airlock_guest::export! {
    tools: AppMeta,
    resources: AppMeta,
}
