//! Test-only guest for the metrics tests: a component whose tools get new
//! names each time it is listed, as a catalogue that renames its tools does.
//!
//! It lists `rename`, which reports its tool list as changed
//! (`notify::list_changed`), so that the host lists it again, and
//! [`RENAMED`] more tools named `r<stamp>_<i>`, where the stamp is the wall
//! clock at the listing, in microseconds: every listing names them anew.
//! Each of those answers with its own name.
//!
//! Never deploy it.

use std::time::{SystemTime, UNIX_EPOCH};

use airlock_guest::notify::{self, ListKind};
use airlock_guest::{Call, Outcome, Tool, Tools};

/// How many renamed tools each listing has.
const RENAMED: usize = 5;

/// The first letter of every renamed tool.
const PREFIX: &str = "r";

struct Renaming;

impl Tools for Renaming {
    fn list() -> Vec<Tool> {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros();
        let renamed = (0..RENAMED).map(|i| {
            Tool::new(
                format!("{PREFIX}{stamp}_{i}"),
                "Answers with its own name; renamed at every listing.",
            )
        });
        std::iter::once(Tool::new(
            "rename",
            "Reports the tool list as changed: the other tools get new names.",
        ))
        .chain(renamed)
        .collect()
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "rename" => {
                notify::list_changed(ListKind::Tools);
                Outcome::text("renaming")
            }
            name if is_renamed(name) => Outcome::text(name),
            other => Outcome::unknown_tool(other),
        }
    }
}

/// Whether `name` is one a listing gives: `r<digits>_<digits>`.
fn is_renamed(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('_'))
        .is_some_and(|(stamp, i)| {
            [stamp, i]
                .iter()
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
}

airlock_guest::export!(Renaming);
