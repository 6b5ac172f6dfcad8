//! Test-only guest for Airlock's subscription and relist tests.
//!
//! Lists two resources, `watch://alpha` and `watch://beta`, and a template,
//! `watch://items/{name}` (any item reads as its name), and offers tools
//! that report changes when a test decides:
//!
//! - `touch {uri}` reports the resource at `uri` as updated
//!   (`notify::resource_updated`);
//! - `relist {times}` reports its tool list as changed `times` times
//!   (`notify::list_changed`), a storm of reports for one call;
//! - `hold {ms, relist?}` reports its tool list as changed first if
//!   `relist` is true, then holds for `ms` milliseconds, and answers when it
//!   ran: `{"start": …, "end": …}`, wall-clock milliseconds since the Unix
//!   epoch, so a test can tell whether two calls overlapped.
//!
//! It also serves a skill itself, as resources: `skill://watching/SKILL.md`
//! (how to use `touch`), which Airlock reads once when it lists the
//! component.
//!
//! Listing its tools takes a while ([`LISTING_TAKES`]), as listing a real
//! catalogue would: listing it again once per report would add up.
//!
//! Never deploy it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use airlock_guest::notify::{self, ListKind};
use airlock_guest::{
    Call, Error, Outcome, ReadOutcome, Resource, ResourceContents, ResourceRead, ResourceTemplate,
    Resources, ServedSkill, Tool, Tools, json,
};
use serde::Deserialize;

/// The resources this component lists.
const URIS: [&str; 2] = ["watch://alpha", "watch://beta"];

/// The template of the resources it reads without listing them.
const ITEMS: &str = "watch://items/{name}";

/// The skill it serves.
const WATCHING: ServedSkill = ServedSkill::new(
    "watching",
    "---\nname: watching\ndescription: How to make a watched resource report an update\n---\nCall `touch` with the resource's `uri`.\n",
);

/// How long listing the tools takes.
const LISTING_TAKES: Duration = Duration::from_millis(25);

struct Watcher;

#[derive(Deserialize)]
struct Touch {
    uri: String,
}

#[derive(Deserialize)]
struct Relist {
    times: u32,
}

#[derive(Deserialize)]
struct Hold {
    ms: u64,
    #[serde(default)]
    relist: bool,
}

impl Tools for Watcher {
    fn list() -> Vec<Tool> {
        std::thread::sleep(LISTING_TAKES);
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
            Tool::new(
                "relist",
                "Reports the tool list as changed `times` times, then returns `reported <times>`.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": { "times": { "type": "integer", "minimum": 0 } },
                "required": ["times"]
            })),
            Tool::new(
                "hold",
                "Reports the tool list as changed if `relist`, holds for `ms` milliseconds, \
                 then returns {\"start\", \"end\"}: when it ran, in Unix milliseconds.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "ms": { "type": "integer", "minimum": 0 },
                    "relist": { "type": "boolean" }
                },
                "required": ["ms"]
            })),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "touch" => touch(&call).into(),
            "relist" => relist(&call).into(),
            "hold" => hold(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

fn touch(call: &Call) -> Result<Outcome, Error> {
    let Touch { uri } = call.args()?;
    notify::resource_updated(&uri);
    Ok(Outcome::text(format!("touched {uri}")))
}

fn relist(call: &Call) -> Result<Outcome, Error> {
    let Relist { times } = call.args()?;
    for _ in 0..times {
        notify::list_changed(ListKind::Tools);
    }
    Ok(Outcome::text(format!("reported {times}")))
}

fn hold(call: &Call) -> Result<Outcome, Error> {
    let Hold { ms, relist } = call.args()?;
    let start = unix_millis();
    if relist {
        notify::list_changed(ListKind::Tools);
    }
    std::thread::sleep(Duration::from_millis(ms));
    let end = unix_millis();
    Ok(Outcome::text(
        json!({ "start": start, "end": end }).to_string(),
    ))
}

/// The wall clock, in milliseconds since the Unix epoch.
fn unix_millis() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

impl Resources for Watcher {
    fn list() -> Vec<Resource> {
        let mut resources: Vec<Resource> = URIS
            .iter()
            .map(|uri| {
                Resource::new(*uri, uri.trim_start_matches("watch://"))
                    .description("A resource the tests report as updated with `touch`")
                    .mime_type("text/plain")
            })
            .collect();
        resources.push(WATCHING.resource());
        resources
    }

    fn templates() -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(ITEMS, "items")
                .description("Resources the tests report as updated with `touch`, one per name")
                .mime_type("text/plain"),
        ]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        if let Some(skill) = WATCHING.read(&read) {
            skill
        } else if URIS.contains(&read.uri()) || read.template() == Some(ITEMS) {
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
