//! What the server lists, encoded once per registry: the pages of
//! `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list`, and the tools' `x-mcp-header` annotations.
//!
//! A page holds at most `page_size` items, and its result (`{"tools": [...],
//! "nextCursor": ...}`) is at most the server's output limit
//! (`--max-output`), the bound of every reply: the registry refuses at load
//! an item that would not fit on a page alone.
//!
//! A [`Catalog`] belongs to one [`Registry`] and never changes; when the
//! registry is replaced, the server builds a new catalog and swaps it in, and
//! requests already running keep the one they started with.

use std::collections::HashMap;
use std::hash::Hasher;
use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;
use serde_json::value::RawValue;

use super::jsonrpc::RpcError;
use super::param_headers::{self, ParamHeader};
use super::wire;
use crate::access::{Kind, Rule};
use crate::registry::{Registry, Served};

/// A registry and its pre-encoded lists.
pub(crate) struct Catalog {
    pub(crate) registry: Arc<Registry>,
    pub(crate) tools: Pages,
    pub(crate) prompts: Pages,
    pub(crate) resources: Pages,
    pub(crate) templates: Pages,
    /// The entries of `skills/list`.
    pub(crate) skills: Pages,
    /// The `x-mcp-header` parameters of each tool that has any.
    pub(crate) param_headers: HashMap<String, Vec<ParamHeader>>,
}

impl Catalog {
    /// Encodes everything `registry` lists, at most `page_size` items and
    /// `max_page_bytes` (the output limit) a page, each JSON text at most
    /// `max_json_depth` deep (the registry checked both at load).
    pub(crate) fn new(
        registry: Arc<Registry>,
        page_size: usize,
        max_page_bytes: usize,
        max_json_depth: usize,
    ) -> anyhow::Result<Catalog> {
        let mut tools = Vec::with_capacity(registry.tools().len());
        let mut param_headers = HashMap::new();
        for entry in registry.tools() {
            let tool = &entry.item().listed;
            tools.push(encode(&wire::tool(tool, max_json_depth)?)?);
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
            .map(|p| encode(&wire::prompt(p.item(), max_json_depth)))
            .collect::<anyhow::Result<_>>()?;
        // The `SKILL.md` of a skills directory's skill is listed among the
        // resources, after the components' own (a component lists those it
        // serves itself).
        let directory_skills = || {
            registry
                .skills()
                .iter()
                .filter(|s| !s.item().served_by_component)
        };
        let resources = registry
            .resources()
            .iter()
            .map(|r| encode(&wire::resource(r.item(), max_json_depth)))
            .chain(directory_skills().map(|s| encode(&wire::skill_resource(s.item()))))
            .collect::<anyhow::Result<_>>()?;
        let skills = registry
            .skills()
            .iter()
            .map(|s| encode(&**s.item()))
            .collect::<anyhow::Result<_>>()?;
        let mut resource_rules = rules(registry.resources(), Kind::Resource);
        resource_rules.extend(directory_skills().map(|s| s.access_rule(Kind::Resource).cloned()));
        let templates = registry
            .templates()
            .iter()
            .map(|t| encode(&wire::resource_template(&t.item().listed, max_json_depth)))
            .collect::<anyhow::Result<_>>()?;
        let pages = |items, field| Pages::new(items, page_size, max_page_bytes, field);
        Ok(Catalog {
            tools: pages(tools, TOOLS)?.with_rules(rules(registry.tools(), Kind::Tool)),
            prompts: pages(prompts, PROMPTS)?.with_rules(rules(registry.prompts(), Kind::Prompt)),
            resources: pages(resources, RESOURCES)?.with_rules(resource_rules),
            skills: pages(skills, SKILLS)?.with_rules(rules(registry.skills(), Kind::Resource)),
            templates: pages(templates, TEMPLATES)?
                .with_rules(rules(registry.templates(), Kind::Resource)),
            param_headers,
            registry,
        })
    }
}

/// The rules of `entries`, items of `kind`, in order.
fn rules<T>(entries: &[Served<T>], kind: Kind) -> Vec<Option<Rule>> {
    entries
        .iter()
        .map(|entry| entry.access_rule(kind).cloned())
        .collect()
}

/// One item, encoded once.
fn encode(value: &impl Serialize) -> anyhow::Result<Box<RawValue>> {
    Ok(RawValue::from_string(serde_json::to_string(value)?)?)
}

/// The member of `tools/list` results that holds the tools.
pub(crate) const TOOLS: &str = "tools";
/// The member of `prompts/list` results that holds the prompts.
pub(crate) const PROMPTS: &str = "prompts";
/// The member of `resources/list` results that holds the resources.
pub(crate) const RESOURCES: &str = "resources";
/// The member of `resources/templates/list` results that holds the
/// templates.
pub(crate) const TEMPLATES: &str = "resourceTemplates";
/// The member of `skills/list` results that holds the skills.
pub(crate) const SKILLS: &str = "skills";

/// One list of pre-encoded items, with each item's access rule, cut into
/// pages: once for every caller, or per request for the items one caller
/// may see.
#[derive(Default)]
pub(crate) struct Pages {
    items: Vec<Box<RawValue>>,
    /// Each item's rule, from its manifest (the same order as `items`).
    rules: Vec<Option<Rule>>,
    /// The pages of the whole list, as ranges of `items`.
    pages: Vec<Range<usize>>,
    page_size: usize,
    /// What a page's items may take, in bytes.
    budget: usize,
}

impl Pages {
    /// `items` in pages of at most `page_size` items, each page's result
    /// (its items under `field`, and the next cursor) at most `max_bytes`.
    /// Fails if one item does not fit on a page alone.
    fn new(
        items: Vec<Box<RawValue>>,
        page_size: usize,
        max_bytes: usize,
        field: &str,
    ) -> anyhow::Result<Pages> {
        let budget = max_bytes.saturating_sub(frame_bytes(field));
        for item in &items {
            let bytes = item.get().len();
            anyhow::ensure!(
                bytes <= budget,
                "an item of `{field}` takes {bytes} bytes, more than a page holds within the output limit of {max_bytes} bytes"
            );
        }
        let page_size = page_size.max(1);
        let pages = cut(items.iter().map(|item| item.get().len()), page_size, budget);
        Ok(Pages {
            rules: vec![None; items.len()],
            items,
            pages,
            page_size,
            budget,
        })
    }

    /// The same list, its items ruled by `rules` (in the same order).
    fn with_rules(mut self, rules: Vec<Option<Rule>>) -> Pages {
        debug_assert_eq!(rules.len(), self.items.len());
        self.rules = rules;
        self
    }

    /// Whether some item of the list has a rule of its manifest.
    pub(crate) fn has_rules(&self) -> bool {
        self.rules.iter().any(Option::is_some)
    }

    /// The rule of item `index`, if its manifest writes one.
    pub(crate) fn rule(&self, index: usize) -> Option<&Rule> {
        self.rules.get(index).and_then(Option::as_ref)
    }

    /// Feeds the items `visible` keeps (by index) to `hasher`; says whether
    /// it kept any.
    pub(crate) fn digest(&self, hasher: &mut impl Hasher, visible: impl Fn(usize) -> bool) -> bool {
        let mut any = false;
        for (i, item) in self.items.iter().enumerate() {
            if visible(i) {
                any = true;
                hasher.write(item.get().as_bytes());
                hasher.write_u8(0xff);
            }
        }
        any
    }

    /// Whether both lists hold the same items in the same order.
    pub(crate) fn same_as(&self, other: &Pages) -> bool {
        self.items.len() == other.items.len()
            && self
                .items
                .iter()
                .zip(&other.items)
                .all(|(a, b)| a.get() == b.get())
    }

    /// The page a request's `params.cursor` names (the first page if it has
    /// none), and the cursor of the next page, if any. An unknown cursor is
    /// -32602.
    pub(crate) fn page(&self, cursor: Option<&Value>) -> Result<Page<'_>, RpcError> {
        let index = page_index(cursor, self.pages.len())?;
        Ok(Page {
            items: self
                .pages
                .get(index)
                .map(|range| {
                    self.items[range.clone()]
                        .iter()
                        .map(AsRef::as_ref)
                        .collect()
                })
                .unwrap_or_default(),
            next_cursor: (index + 1 < self.pages.len()).then(|| encode_cursor(index + 1)),
        })
    }

    /// [`Pages::page`] of the list of the items `visible` keeps (by index),
    /// cut into pages as the whole list is.
    pub(crate) fn visible_page(
        &self,
        cursor: Option<&Value>,
        visible: impl Fn(usize) -> bool,
    ) -> Result<Page<'_>, RpcError> {
        let kept: Vec<&RawValue> = (0..self.items.len())
            .filter(|&i| visible(i))
            .map(|i| self.items[i].as_ref())
            .collect();
        let pages = cut(
            kept.iter().map(|item| item.get().len()),
            self.page_size,
            self.budget,
        );
        let index = page_index(cursor, pages.len())?;
        Ok(Page {
            items: pages
                .get(index)
                .map(|range| kept[range.clone()].to_vec())
                .unwrap_or_default(),
            next_cursor: (index + 1 < pages.len()).then(|| encode_cursor(index + 1)),
        })
    }
}

/// Items of these sizes (in bytes, each within `budget`), in pages of at
/// most `page_size` items and `budget` bytes with their commas.
fn cut(sizes: impl Iterator<Item = usize>, page_size: usize, budget: usize) -> Vec<Range<usize>> {
    let mut pages = Vec::new();
    let mut start = 0;
    let mut used = 0;
    let mut end = 0;
    for bytes in sizes {
        let count = end - start;
        // A comma before every item but the first of a page.
        let full = count >= page_size || used + 1 + bytes > budget;
        if count > 0 && full {
            pages.push(start..end);
            start = end;
            used = 0;
        }
        used += bytes + usize::from(end > start);
        end += 1;
    }
    if end > start {
        pages.push(start..end);
    }
    pages
}

/// The page a cursor names, of `pages` pages.
pub(crate) fn page_index(cursor: Option<&Value>, pages: usize) -> Result<usize, RpcError> {
    match cursor {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(text)) => {
            decode_cursor(text)
                .filter(|page| *page < pages)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("Invalid params: unknown cursor '{text}'"))
                })
        }
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: cursor must be a string",
        )),
    }
}

/// One page of a list.
pub(crate) struct Page<'a> {
    pub(crate) items: Vec<&'a RawValue>,
    pub(crate) next_cursor: Option<String>,
}

/// A list result's own members: `{<field>: [...], nextCursor?}`.
pub(crate) struct ListResult<'a> {
    pub(crate) field: &'static str,
    pub(crate) page: Page<'a>,
}

impl Serialize for ListResult<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.field, &self.page.items)?;
        if let Some(cursor) = &self.page.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// What the result of a page of `field` takes besides its items, at most:
/// `{"<field>":[`, `]`, the longest `,"nextCursor":"…"` and `}`.
fn frame_bytes(field: &str) -> usize {
    format!(r#"{{"{field}":[],"nextCursor":""}}"#).len() + encode_cursor(usize::MAX).len()
}

/// Cursors are opaque to clients: `page-<n>` in Base64url.
pub(crate) fn encode_cursor(page: usize) -> String {
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
    use crate::registry::listed_size;
    use crate::registry::validate::PAGE_FRAME_BYTES;
    use crate::runtime::{wit, wit_prompts, wit_resources};

    /// The default depth limit.
    const DEPTH: usize = crate::guest_json::DEFAULT_MAX_DEPTH;

    fn items(n: usize) -> Vec<Box<RawValue>> {
        (0..n)
            .map(|i| RawValue::from_string(i.to_string()).unwrap())
            .collect()
    }

    fn pages(items: Vec<Box<RawValue>>, page_size: usize) -> Pages {
        Pages::new(items, page_size, 1 << 20, TOOLS).unwrap()
    }

    /// Every page of `pages`, in order, as its result is encoded.
    fn encoded(pages: &Pages, field: &'static str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let page = pages.page(cursor.as_ref()).unwrap();
            let next = page.next_cursor.clone();
            out.push(serde_json::to_string(&ListResult { field, page }).unwrap());
            match next {
                Some(next) => cursor = Some(Value::String(next)),
                None => return out,
            }
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(3)), Some(3));
        assert_eq!(decode_cursor("not a cursor"), None);
        assert_eq!(decode_cursor(""), None);
    }

    #[test]
    fn pages_follow_their_cursors() {
        let pages = pages(items(5), 2);
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
        let empty = Pages::new(items(0), 2, 1 << 20, TOOLS).unwrap();
        assert!(empty.page(None).unwrap().items.is_empty());
        assert!(pages.same_as(&Pages::new(items(5), 3, 1 << 20, TOOLS).unwrap()));
        assert!(!pages.same_as(&Pages::new(items(4), 2, 1 << 20, TOOLS).unwrap()));
    }

    #[test]
    fn a_page_never_exceeds_the_output_limit() {
        // Items of many sizes, some close to what a page holds alone.
        let limit = 1024;
        let sizes = [10, 500, 300, 871, 1, 200, 200, 200, 700, 3, 880];
        let items: Vec<Box<RawValue>> = sizes
            .iter()
            .map(|&n| RawValue::from_string(format!("\"{}\"", "x".repeat(n))).unwrap())
            .collect();
        let all: Vec<String> = items.iter().map(|i| i.get().to_owned()).collect();
        for field in [TOOLS, PROMPTS, RESOURCES, TEMPLATES] {
            let pages = Pages::new(items.clone(), 100, limit, field).unwrap();
            let pages = encoded(&pages, field);
            assert!(pages.len() > 1, "{field}: one page");
            let mut seen = Vec::new();
            for page in &pages {
                assert!(
                    page.len() <= limit,
                    "{field}: a page of {} bytes",
                    page.len()
                );
                let value: Value = serde_json::from_str(page).unwrap();
                seen.extend(
                    value[field]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(Value::to_string),
                );
            }
            assert_eq!(seen, all, "{field}: every item, in order, once");
        }
        // One item larger than a page alone is a bug of the caller.
        let huge = vec![RawValue::from_string(format!("\"{}\"", "x".repeat(limit))).unwrap()];
        assert!(Pages::new(huge, 100, limit, TOOLS).is_err());
    }

    #[test]
    fn the_page_frame_the_registry_allows_for_is_enough() {
        for field in [TOOLS, PROMPTS, RESOURCES, TEMPLATES] {
            assert!(frame_bytes(field) <= PAGE_FRAME_BYTES, "{field}");
        }
    }

    /// A text that escapes to six times its length.
    fn escaped(n: usize) -> String {
        "\u{1}".repeat(n)
    }

    #[test]
    fn the_size_the_registry_measures_bounds_the_encoding() {
        let annotations = wit::Annotations {
            audience: vec![wit::Role::User, wit::Role::Assistant, wit::Role::User],
            priority: Some(-1.234_567_890_123_456_7e-308),
            last_modified: Some(escaped(3)),
        };
        let tool = wit::Tool {
            name: "t".repeat(64),
            title: Some(escaped(5)),
            description: escaped(7),
            input_schema: r#"{ "type" : "object" }"#.to_owned(),
            output_schema: Some(r#"{"type":"object"}"#.to_owned()),
            annotations: Some(wit::ToolAnnotations {
                title: Some(escaped(2)),
                read_only_hint: Some(false),
                destructive_hint: Some(false),
                idempotent_hint: Some(false),
                open_world_hint: Some(false),
            }),
            meta: Some(r#"{ "ui" : { "resourceUri" : "ui://x" } }"#.to_owned()),
            task_support: wit::TaskSupport::Optional,
        };
        let listed = encode(&wire::tool(&tool, DEPTH).unwrap()).unwrap();
        assert!(
            listed.get().len() <= listed_size::tool(&tool),
            "{}",
            listed.get()
        );
        let prompt = wit_prompts::Prompt {
            name: "p".repeat(64),
            title: Some(escaped(5)),
            description: escaped(7),
            arguments: (0..5)
                .map(|i| wit_prompts::PromptArgument {
                    name: format!("a{i}"),
                    title: Some(escaped(1)),
                    description: Some(escaped(2)),
                    required: false,
                })
                .collect(),
            meta: Some(r#"{"k":1}"#.to_owned()),
        };
        let listed = encode(&wire::prompt(&prompt, DEPTH)).unwrap();
        assert!(
            listed.get().len() <= listed_size::prompt(&prompt),
            "{}",
            listed.get()
        );
        let resource = wit_resources::Resource {
            uri: format!("a://{}", escaped(4)),
            name: escaped(3),
            title: Some(escaped(5)),
            description: Some(escaped(7)),
            mime_type: Some(escaped(2)),
            size: Some(u64::MAX),
            annotations: Some(annotations.clone()),
            meta: Some(r#"{"k":1}"#.to_owned()),
        };
        let listed = encode(&wire::resource(&resource, DEPTH)).unwrap();
        assert!(
            listed.get().len() <= listed_size::resource(&resource),
            "{}",
            listed.get()
        );
        let template = wit_resources::ResourceTemplate {
            uri_template: format!("a://{{x}}{}", escaped(4)),
            name: escaped(3),
            title: Some(escaped(5)),
            description: Some(escaped(7)),
            mime_type: Some(escaped(2)),
            annotations: Some(annotations),
            meta: Some(r#"{"k":1}"#.to_owned()),
        };
        let listed = encode(&wire::resource_template(&template, DEPTH)).unwrap();
        assert!(
            listed.get().len() <= listed_size::template(&template),
            "{}",
            listed.get()
        );
    }
}
