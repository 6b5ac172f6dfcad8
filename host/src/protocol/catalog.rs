//! What the server lists, encoded once per registry: the pages of
//! `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list`, and the tools' `x-mcp-header` annotations.
//!
//! A [`Catalog`] belongs to one [`Registry`] and never changes; when the
//! registry is replaced, the server builds a new catalog and swaps it in, and
//! requests already running keep the one they started with.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;
use serde_json::value::RawValue;

use super::jsonrpc::RpcError;
use super::param_headers::{self, ParamHeader};
use super::wire;
use crate::registry::Registry;

/// A registry and its pre-encoded lists.
pub(crate) struct Catalog {
    pub(crate) registry: Arc<Registry>,
    pub(crate) tools: Pages,
    pub(crate) prompts: Pages,
    pub(crate) resources: Pages,
    pub(crate) templates: Pages,
    /// The `x-mcp-header` parameters of each tool that has any.
    pub(crate) param_headers: HashMap<String, Vec<ParamHeader>>,
}

impl Catalog {
    /// Encodes everything `registry` lists, `page_size` items a page.
    pub(crate) fn new(registry: Arc<Registry>, page_size: usize) -> anyhow::Result<Catalog> {
        let mut tools = Vec::with_capacity(registry.tools().len());
        let mut param_headers = HashMap::new();
        for entry in registry.tools() {
            let tool = entry.item();
            tools.push(encode(&wire::tool(tool)?)?);
            let schema: Value = serde_json::from_str(&tool.input_schema)?;
            match param_headers::annotations(&schema) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => {
                    param_headers.insert(tool.name.clone(), found);
                }
                Err(problem) => tracing::warn!(
                    tool = %tool.name, file = %entry.source().display(), %problem,
                    "ignoring invalid x-mcp-header annotations (HTTP clients will drop this tool)"
                ),
            }
        }
        let prompts = registry
            .prompts()
            .iter()
            .map(|p| encode(&wire::prompt(p.item())))
            .collect::<anyhow::Result<_>>()?;
        let resources = registry
            .resources()
            .iter()
            .map(|r| encode(&wire::resource(r.item())))
            .collect::<anyhow::Result<_>>()?;
        let templates = registry
            .templates()
            .iter()
            .map(|t| encode(&wire::resource_template(&t.item().listed)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Catalog {
            tools: Pages::new(tools, page_size),
            prompts: Pages::new(prompts, page_size),
            resources: Pages::new(resources, page_size),
            templates: Pages::new(templates, page_size),
            param_headers,
            registry,
        })
    }
}

/// One item, encoded once.
fn encode(value: &impl Serialize) -> anyhow::Result<Box<RawValue>> {
    Ok(RawValue::from_string(serde_json::to_string(value)?)?)
}

/// One list, cut into pages of pre-encoded items.
#[derive(Default)]
pub(crate) struct Pages(Vec<Vec<Box<RawValue>>>);

impl Pages {
    fn new(items: Vec<Box<RawValue>>, page_size: usize) -> Pages {
        let mut items = items.into_iter().peekable();
        let mut pages = Vec::new();
        while items.peek().is_some() {
            pages.push(items.by_ref().take(page_size.max(1)).collect());
        }
        Pages(pages)
    }

    /// Whether both lists hold the same items in the same order.
    pub(crate) fn same_as(&self, other: &Pages) -> bool {
        let items = |pages: &Pages| -> Vec<String> {
            pages
                .0
                .iter()
                .flatten()
                .map(|item| item.get().to_owned())
                .collect()
        };
        items(self) == items(other)
    }

    /// The page a request's `params.cursor` names (the first page if it has
    /// none), and the cursor of the next page, if any. An unknown cursor is
    /// -32602.
    pub(crate) fn page(&self, cursor: Option<&Value>) -> Result<Page<'_>, RpcError> {
        let index = match cursor {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => decode_cursor(cursor)
                .filter(|page| *page < self.0.len())
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("Invalid params: unknown cursor '{cursor}'"))
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: cursor must be a string",
                ));
            }
        };
        Ok(Page {
            items: self.0.get(index).map(Vec::as_slice).unwrap_or_default(),
            next_cursor: (index + 1 < self.0.len()).then(|| encode_cursor(index + 1)),
        })
    }
}

/// One page of a list.
pub(crate) struct Page<'a> {
    pub(crate) items: &'a [Box<RawValue>],
    pub(crate) next_cursor: Option<String>,
}

/// A list result's own members: `{<field>: [...], nextCursor?}` (the
/// server marks it cacheable by everyone).
pub(crate) struct ListResult<'a> {
    pub(crate) field: &'static str,
    pub(crate) page: Page<'a>,
}

impl Serialize for ListResult<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.field, self.page.items)?;
        if let Some(cursor) = &self.page.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// Cursors are opaque to clients: `page-<n>` in Base64url.
fn encode_cursor(page: usize) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("page-{page}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("page-")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Box<RawValue>> {
        (0..n)
            .map(|i| RawValue::from_string(i.to_string()).unwrap())
            .collect()
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(3)), Some(3));
        assert_eq!(decode_cursor("not a cursor"), None);
        assert_eq!(decode_cursor(""), None);
    }

    #[test]
    fn pages_follow_their_cursors() {
        let pages = Pages::new(items(5), 2);
        let first = pages.page(None).unwrap();
        assert_eq!(first.items.len(), 2);
        let second = pages
            .page(Some(&Value::String(first.next_cursor.unwrap())))
            .unwrap();
        let third = pages
            .page(Some(&Value::String(second.next_cursor.unwrap())))
            .unwrap();
        assert_eq!(third.items.len(), 1);
        assert!(third.next_cursor.is_none());
        assert!(pages.page(Some(&Value::String("bogus".into()))).is_err());
        assert!(pages.page(Some(&Value::from(3))).is_err());
        assert!(pages.page(Some(&Value::String(encode_cursor(9)))).is_err());
        let empty = Pages::new(items(0), 2);
        assert!(empty.page(None).unwrap().items.is_empty());
        assert!(pages.same_as(&Pages::new(items(5), 3)));
        assert!(!pages.same_as(&Pages::new(items(4), 2)));
    }
}
