//! How many bytes an item a component lists (a tool, a prompt, a resource,
//! a resource template) takes on a page of its list, measured when the
//! component loads so that what cannot be served within the limits is
//! refused then.
//!
//! The measure is an upper bound of the item's encoding on the wire: every
//! text it carries as a JSON string (quotes and escapes counted), its
//! schemas and `_meta` as given (they are sent verbatim), and a fixed allowance for
//! the members' names, punctuation, numbers and flags. The catalog, which
//! encodes the items, checks that the bound holds for items that carry
//! every member.

use crate::runtime::{wit, wit_prompts, wit_resources};

/// What an item takes besides its texts and schemas, at most: its
/// members' names, punctuation, numbers, flags and annotations.
pub const ITEM_FRAME_BYTES: usize = 320;

/// What each argument of a prompt takes besides its texts, at most.
pub const ARGUMENT_FRAME_BYTES: usize = 64;

/// The bytes of a tool as listed, at most.
pub fn tool(tool: &wit::Tool) -> usize {
    ITEM_FRAME_BYTES
        + string(&tool.name)
        + optional(tool.title.as_deref())
        + string(&tool.description)
        + tool.input_schema.len()
        + tool.output_schema.as_ref().map_or(0, String::len)
        + tool
            .annotations
            .as_ref()
            .map_or(0, |annotations| optional(annotations.title.as_deref()))
        + meta(tool.meta.as_deref())
}

/// The bytes of a prompt as listed, at most.
pub fn prompt(prompt: &wit_prompts::Prompt) -> usize {
    let arguments: usize = prompt
        .arguments
        .iter()
        .map(|argument| {
            ARGUMENT_FRAME_BYTES
                + string(&argument.name)
                + optional(argument.title.as_deref())
                + optional(argument.description.as_deref())
        })
        .sum();
    ITEM_FRAME_BYTES
        + string(&prompt.name)
        + optional(prompt.title.as_deref())
        + string(&prompt.description)
        + arguments
        + meta(prompt.meta.as_deref())
}

/// The bytes of a resource as listed, at most.
pub fn resource(resource: &wit_resources::Resource) -> usize {
    ITEM_FRAME_BYTES
        + string(&resource.uri)
        + string(&resource.name)
        + optional(resource.title.as_deref())
        + optional(resource.description.as_deref())
        + optional(resource.mime_type.as_deref())
        + annotations(resource.annotations.as_ref())
        + meta(resource.meta.as_deref())
}

/// The bytes of a resource template as listed, at most.
pub fn template(template: &wit_resources::ResourceTemplate) -> usize {
    ITEM_FRAME_BYTES
        + string(&template.uri_template)
        + string(&template.name)
        + optional(template.title.as_deref())
        + optional(template.description.as_deref())
        + optional(template.mime_type.as_deref())
        + annotations(template.annotations.as_ref())
        + meta(template.meta.as_deref())
}

/// The texts of annotations (the rest is in the frame: the wire names each
/// role of the audience at most once).
fn annotations(annotations: Option<&wit::Annotations>) -> usize {
    annotations.map_or(0, |a| optional(a.last_modified.as_deref()))
}

/// The bytes of a `_meta` object, sent verbatim.
fn meta(meta: Option<&str>) -> usize {
    meta.map_or(0, str::len)
}

fn optional(text: Option<&str>) -> usize {
    text.map_or(0, string)
}

/// The bytes of `text` as a JSON string, quotes and escapes included.
fn string(text: &str) -> usize {
    let mut counter = Counter(0);
    // Writing into a counter cannot fail, nor can encoding a string.
    let _ = serde_json::to_writer(&mut counter, text);
    counter.0
}

/// A writer that only counts.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_count_their_quotes_and_escapes() {
        assert_eq!(string("abc"), 5);
        assert_eq!(string("a\"b"), 6);
        assert_eq!(string("\u{1}"), 8);
        assert_eq!(string("é"), 4);
    }
}
