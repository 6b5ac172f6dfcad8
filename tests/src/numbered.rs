//! Many distinct components from one: copies of the `numbered` test guest,
//! each stamped with its own number in place of the three placeholder digits
//! of its tool's name (`numbered_000`). Each copy has other bytes (so its own
//! compile-cache entry) and serves a tool of its own name, as a directory of
//! different tools would.

use crate::paths::component;
use crate::stamp::replace_once;

/// The tool name of the built guest; its last three digits are replaced.
const PLACEHOLDER: &[u8] = b"numbered_000";

/// Copies of the `numbered` guest, numbered `0..count`.
pub fn numbered_components(count: usize) -> Vec<Vec<u8>> {
    let guest = std::fs::read(component("numbered")).expect("read the numbered component");
    (0..count).map(|number| stamp(&guest, number)).collect()
}

/// The tool the copy numbered `number` serves.
pub fn numbered_tool(number: usize) -> String {
    format!("numbered_{number:03}")
}

/// `guest` with `number` (at most 999) in place of its placeholder digits.
fn stamp(guest: &[u8], number: usize) -> Vec<u8> {
    let name = numbered_tool(number);
    assert!(number < 1000, "at most 1000 copies");
    replace_once(guest, PLACEHOLDER, name.as_bytes())
}
