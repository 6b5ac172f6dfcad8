//! Checks on what a component describes at load: its tools, prompts,
//! resources and resource templates.
//!
//! These are served to clients verbatim, so anything a client or model would
//! choke on is refused at load time, naming the component file, rather than
//! discovered on a client. So is what would not fit the limits: a schema
//! over `--max-schema`, a schema or `_meta` nested deeper than
//! `--max-json-depth`, an item larger than a page of its list may be
//! (`--max-output`), everything together over `--max-listing`.

use std::collections::HashSet;

use serde_json::Value;

use super::listed_size;
use super::uri_template::UriTemplate;
use crate::guest_json::{check_meta, json_text};
use crate::runtime::{Listing, RuntimeLimits, wit, wit_prompts, wit_resources};
use crate::units::format_size;

/// Bytes a page of a list takes besides its items, at most: its braces,
/// the list's name and the next page's cursor. An item may take what is
/// left of the output limit.
pub const PAGE_FRAME_BYTES: usize = 128;

/// How large what a component lists may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingLimits {
    /// Largest input or output schema of one tool (`--max-schema`).
    pub max_schema_bytes: usize,
    /// Largest page of a list (the server's `--max-output`): every item
    /// must fit on one, with [`PAGE_FRAME_BYTES`].
    pub max_page_bytes: usize,
    /// Most bytes of everything one component lists (`--max-listing`).
    pub max_listing_bytes: usize,
    /// Deepest nesting of a schema or `_meta` (`--max-json-depth`).
    pub max_json_depth: usize,
}

impl ListingLimits {
    /// The limits the server's `limits` set.
    pub fn of(limits: &RuntimeLimits) -> ListingLimits {
        ListingLimits {
            max_schema_bytes: limits.max_schema_bytes,
            max_page_bytes: limits.max_output_bytes,
            max_listing_bytes: limits.max_listing_bytes,
            max_json_depth: limits.max_json_depth,
        }
    }

    /// The largest one item may be.
    fn max_item_bytes(&self) -> usize {
        self.max_page_bytes.saturating_sub(PAGE_FRAME_BYTES)
    }
}

/// Longest tool name allowed.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Whether `name` matches `^[A-Za-z0-9_.-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Checks everything one component lists, against `limits` too; the error
/// says what is wrong with which item. A component must serve at least one
/// thing.
pub(crate) fn validate_listing(listing: &Listing, limits: &ListingLimits) -> Result<(), String> {
    if listing.tools.is_empty()
        && listing.prompts.is_empty()
        && listing.resources.is_empty()
        && listing.templates.is_empty()
    {
        return Err("it lists no tools, prompts, resources or resource templates".to_owned());
    }
    validate_tools(&listing.tools, limits.max_json_depth)?;
    validate_prompts(&listing.prompts)?;
    validate_resources(&listing.resources)?;
    validate_templates(&listing.templates)?;
    validate_metas(listing, limits.max_json_depth)?;
    validate_sizes(listing, limits)
}

/// Checks the `meta` of every item one component lists: each must be a
/// JSON object at most `max_depth` deep (it is sent as the item's `_meta`).
fn validate_metas(listing: &Listing, max_depth: usize) -> Result<(), String> {
    let metas = (listing.tools.iter())
        .map(|t| ("tool", t.name.as_str(), t.meta.as_deref()))
        .chain(
            listing
                .prompts
                .iter()
                .map(|p| ("prompt", p.name.as_str(), p.meta.as_deref())),
        )
        .chain(
            listing
                .resources
                .iter()
                .map(|r| ("resource", r.uri.as_str(), r.meta.as_deref())),
        )
        .chain(listing.templates.iter().map(|t| {
            (
                "resource template",
                t.uri_template.as_str(),
                t.meta.as_deref(),
            )
        }));
    for (what, key, meta) in metas {
        if let Some(meta) = meta {
            check_meta(meta, max_depth).map_err(|why| format!("{what} `{key}`: {why}"))?;
        }
    }
    Ok(())
}

/// Checks the sizes of what one component lists: each tool's schemas, each
/// item against a page of its list, and everything together.
fn validate_sizes(listing: &Listing, limits: &ListingLimits) -> Result<(), String> {
    for tool in &listing.tools {
        let schemas = [
            ("input-schema", Some(&tool.input_schema)),
            ("output-schema", tool.output_schema.as_ref()),
        ];
        for (what, schema) in schemas {
            let bytes = schema.map_or(0, String::len);
            if bytes > limits.max_schema_bytes {
                return Err(format!(
                    "tool `{}`: its {what} takes {bytes} bytes, more than the limit of {} (--max-schema)",
                    tool.name,
                    format_size(limits.max_schema_bytes as u64)
                ));
            }
        }
    }
    let items = (listing.tools.iter())
        .map(|t| ("tool", t.name.as_str(), "tools/list", listed_size::tool(t)))
        .chain(listing.prompts.iter().map(|p| {
            let size = listed_size::prompt(p);
            ("prompt", p.name.as_str(), "prompts/list", size)
        }))
        .chain(listing.resources.iter().map(|r| {
            let size = listed_size::resource(r);
            ("resource", r.uri.as_str(), "resources/list", size)
        }))
        .chain(listing.templates.iter().map(|t| {
            let size = listed_size::template(t);
            let key = t.uri_template.as_str();
            ("resource template", key, "resources/templates/list", size)
        }));
    let mut total = 0usize;
    let mut largest = ("", "", 0);
    for (what, key, list, bytes) in items {
        if bytes > limits.max_item_bytes() {
            return Err(format!(
                "{what} `{key}` takes up to {bytes} bytes as listed, more than one page of {list} \
                 may hold within the output limit of {} (--max-output)",
                format_size(limits.max_page_bytes as u64)
            ));
        }
        total = total.saturating_add(bytes);
        if bytes > largest.2 {
            largest = (what, key, bytes);
        }
    }
    if total > limits.max_listing_bytes {
        let (what, key, bytes) = largest;
        return Err(format!(
            "what it lists takes up to {total} bytes, more than the limit of {} (--max-listing); \
             the largest is {what} `{key}` ({bytes} bytes)",
            format_size(limits.max_listing_bytes as u64)
        ));
    }
    Ok(())
}

/// Checks every tool of one component, its schemas at most `max_depth`
/// deep; the error says what is wrong with which tool.
pub fn validate_tools(tools: &[wit::Tool], max_depth: usize) -> Result<(), String> {
    let mut seen = HashSet::new();
    for tool in tools {
        validate_tool(tool, max_depth)?;
        if !seen.insert(tool.name.as_str()) {
            return Err(format!("list-tools returns tool `{}` twice", tool.name));
        }
    }
    Ok(())
}

fn validate_tool(tool: &wit::Tool, max_depth: usize) -> Result<(), String> {
    if !is_valid_tool_name(&tool.name) {
        return Err(format!(
            "tool name {} is invalid: use 1 to {MAX_TOOL_NAME_LEN} characters of A-Z a-z 0-9 _ . -",
            quote_untrusted(&tool.name)
        ));
    }
    let name = &tool.name;
    if tool.description.trim().is_empty() {
        return Err(format!("tool `{name}` has an empty description"));
    }
    // Bounded first: parsing into a `Value` below recurses.
    let schemas = [
        ("input-schema", Some(&tool.input_schema)),
        ("output-schema", tool.output_schema.as_ref()),
    ];
    for (what, schema) in schemas {
        if let Some(schema) = schema {
            json_text(schema, what, max_depth).map_err(|why| format!("tool `{name}`: {why}"))?;
        }
    }
    match serde_json::from_str::<Value>(&tool.input_schema) {
        Err(err) => {
            return Err(format!(
                "tool `{name}`: input-schema is not valid JSON ({err})"
            ));
        }
        Ok(Value::Object(schema)) if schema.get("type") == Some(&Value::from("object")) => {}
        Ok(_) => {
            return Err(format!(
                "tool `{name}`: input-schema must be a JSON object with \"type\": \"object\""
            ));
        }
    }
    if let Some(output_schema) = &tool.output_schema {
        match serde_json::from_str::<Value>(output_schema) {
            Err(err) => {
                return Err(format!(
                    "tool `{name}`: output-schema is not valid JSON ({err})"
                ));
            }
            Ok(Value::Object(_)) => {}
            Ok(_) => return Err(format!("tool `{name}`: output-schema is not a JSON object")),
        }
    }
    Ok(())
}

fn validate_prompts(prompts: &[wit_prompts::Prompt]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for prompt in prompts {
        if !is_valid_tool_name(&prompt.name) {
            return Err(format!(
                "prompt name {} is invalid: use 1 to {MAX_TOOL_NAME_LEN} characters of A-Z a-z 0-9 _ . -",
                quote_untrusted(&prompt.name)
            ));
        }
        let name = &prompt.name;
        if !seen.insert(name.as_str()) {
            return Err(format!("list-prompts returns prompt `{name}` twice"));
        }
        if prompt.description.trim().is_empty() {
            return Err(format!("prompt `{name}` has an empty description"));
        }
        let mut arguments = HashSet::new();
        for argument in &prompt.arguments {
            if !is_valid_tool_name(&argument.name) {
                return Err(format!(
                    "prompt `{name}`: argument name {} is invalid",
                    quote_untrusted(&argument.name)
                ));
            }
            if !arguments.insert(argument.name.as_str()) {
                return Err(format!(
                    "prompt `{name}` declares argument `{}` twice",
                    argument.name
                ));
            }
        }
    }
    Ok(())
}

/// Whether `uri` starts with an RFC 3986 scheme (`scheme:`).
fn has_scheme(uri: &str) -> bool {
    uri.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    })
}

/// Longest resource URI or template allowed.
pub const MAX_URI_LEN: usize = 2048;

fn validate_uri(uri: &str, what: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_LEN || !has_scheme(uri) || uri.chars().any(char::is_whitespace) {
        return Err(format!(
            "{what} {} is not an absolute URI (scheme:..., no spaces, at most {MAX_URI_LEN} bytes)",
            quote_untrusted(uri)
        ));
    }
    Ok(())
}

fn validate_resources(resources: &[wit_resources::Resource]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for resource in resources {
        validate_uri(&resource.uri, "resource URI")?;
        if !seen.insert(resource.uri.as_str()) {
            return Err(format!(
                "list-resources returns resource `{}` twice",
                resource.uri
            ));
        }
        if resource.name.trim().is_empty() {
            return Err(format!("resource `{}` has an empty name", resource.uri));
        }
    }
    Ok(())
}

fn validate_templates(templates: &[wit_resources::ResourceTemplate]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for template in templates {
        let uri_template = &template.uri_template;
        validate_uri(uri_template, "resource template")?;
        UriTemplate::parse(uri_template)
            .map_err(|why| format!("resource template {}: {why}", quote_untrusted(uri_template)))?;
        if !seen.insert(uri_template.as_str()) {
            return Err(format!(
                "list-resource-templates returns `{uri_template}` twice"
            ));
        }
        if template.name.trim().is_empty() {
            return Err(format!(
                "resource template `{uri_template}` has an empty name"
            ));
        }
    }
    Ok(())
}

/// A guest-supplied string, quoted and escaped, cut to a readable length.
fn quote_untrusted(s: &str) -> String {
    const MAX: usize = 80;
    let cut: String = s.chars().take(MAX).collect();
    if cut.len() < s.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default depth limit.
    const DEPTH: usize = crate::guest_json::DEFAULT_MAX_DEPTH;

    /// The server's default limits.
    fn limits() -> ListingLimits {
        ListingLimits::of(&RuntimeLimits::default())
    }

    fn tool(name: &str) -> wit::Tool {
        wit::Tool {
            name: name.into(),
            title: None,
            description: "does things".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            annotations: None,
            task_support: wit::TaskSupport::Never,
            meta: None,
        }
    }

    #[test]
    fn names() {
        for ok in ["a", "sha256", "A-b_c.d", &"x".repeat(64)] {
            assert!(is_valid_tool_name(ok), "{ok}");
        }
        for bad in ["", "with space", "é", "a/b", &"x".repeat(65)] {
            assert!(!is_valid_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn accepts_good_tools() {
        let mut with_output = tool("b");
        with_output.output_schema = Some(r#"{"type":"object","properties":{}}"#.into());
        assert_eq!(validate_tools(&[tool("a"), with_output], DEPTH), Ok(()));
    }

    #[test]
    fn rejects_bad_tools() {
        let cases: Vec<(wit::Tool, &str)> = vec![
            (tool("bad name"), "is invalid"),
            (
                wit::Tool {
                    description: "  ".into(),
                    ..tool("a")
                },
                "empty description",
            ),
            (
                wit::Tool {
                    input_schema: "{".into(),
                    ..tool("a")
                },
                "not valid JSON",
            ),
            (
                wit::Tool {
                    input_schema: r#"{"type":"string"}"#.into(),
                    ..tool("a")
                },
                "\"type\": \"object\"",
            ),
            (
                wit::Tool {
                    input_schema: "[]".into(),
                    ..tool("a")
                },
                "\"type\": \"object\"",
            ),
            (
                wit::Tool {
                    output_schema: Some("true".into()),
                    ..tool("a")
                },
                "output-schema is not a JSON object",
            ),
        ];
        for (tool, expected) in cases {
            let err = validate_tools(&[tool], DEPTH).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
        let err = validate_tools(&[tool("a"), tool("a")], DEPTH).unwrap_err();
        assert!(err.contains("twice"), "{err}");
    }

    fn prompt(name: &str) -> wit_prompts::Prompt {
        wit_prompts::Prompt {
            name: name.into(),
            title: None,
            description: "a prompt".into(),
            arguments: vec![],
            meta: None,
        }
    }

    fn resource(uri: &str) -> wit_resources::Resource {
        wit_resources::Resource {
            uri: uri.into(),
            name: "r".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            meta: None,
        }
    }

    fn template(uri_template: &str) -> wit_resources::ResourceTemplate {
        wit_resources::ResourceTemplate {
            uri_template: uri_template.into(),
            name: "t".into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            meta: None,
        }
    }

    #[test]
    fn every_listed_meta_must_be_a_json_object() {
        let meta = |text: &str| Some(text.to_owned());
        for bad in ["[1]", "\"ui\"", "{oops"] {
            let listings = [
                Listing {
                    tools: vec![wit::Tool {
                        meta: meta(bad),
                        ..tool("t")
                    }],
                    ..Listing::default()
                },
                Listing {
                    prompts: vec![wit_prompts::Prompt {
                        meta: meta(bad),
                        ..prompt("p")
                    }],
                    ..Listing::default()
                },
                Listing {
                    resources: vec![wit_resources::Resource {
                        meta: meta(bad),
                        ..resource("ui://r")
                    }],
                    ..Listing::default()
                },
                Listing {
                    templates: vec![wit_resources::ResourceTemplate {
                        meta: meta(bad),
                        ..template("ui://{x}")
                    }],
                    ..Listing::default()
                },
            ];
            for listing in listings {
                let err = validate_listing(&listing, &limits()).unwrap_err();
                assert!(err.contains("_meta"), "{bad}: {err}");
            }
        }
        let good = Listing {
            tools: vec![wit::Tool {
                meta: meta(r#"{"ui":{"resourceUri":"ui://r"}}"#),
                ..tool("t")
            }],
            ..Listing::default()
        };
        assert_eq!(validate_listing(&good, &limits()), Ok(()));
    }

    /// An object holding arrays, `depth` levels in all.
    fn nested(depth: usize) -> String {
        let inner = depth - 1;
        format!("{{\"n\":{}0{}}}", "[".repeat(inner), "]".repeat(inner))
    }

    #[test]
    fn every_listed_schema_and_meta_is_bounded_in_depth_naming_the_item() {
        let limits = ListingLimits {
            max_json_depth: 8,
            ..limits()
        };
        let schema =
            |depth: usize| format!(r#"{{"type":"object","default":{}}}"#, nested(depth - 1));
        let meta = |depth: usize| Some(nested(depth));
        let listings = |depth: usize| {
            [
                Listing {
                    tools: vec![wit::Tool {
                        input_schema: schema(depth),
                        ..tool("t")
                    }],
                    ..Listing::default()
                },
                Listing {
                    tools: vec![wit::Tool {
                        output_schema: Some(schema(depth)),
                        ..tool("t")
                    }],
                    ..Listing::default()
                },
                Listing {
                    tools: vec![wit::Tool {
                        meta: meta(depth),
                        ..tool("t")
                    }],
                    ..Listing::default()
                },
                Listing {
                    prompts: vec![wit_prompts::Prompt {
                        meta: meta(depth),
                        ..prompt("p")
                    }],
                    ..Listing::default()
                },
                Listing {
                    resources: vec![wit_resources::Resource {
                        meta: meta(depth),
                        ..resource("ui://r")
                    }],
                    ..Listing::default()
                },
                Listing {
                    templates: vec![wit_resources::ResourceTemplate {
                        meta: meta(depth),
                        ..template("ui://{x}")
                    }],
                    ..Listing::default()
                },
            ]
        };
        for listing in listings(8) {
            assert_eq!(validate_listing(&listing, &limits), Ok(()));
        }
        let named = [
            "tool `t`: input-schema",
            "tool `t`: output-schema",
            "tool `t`: _meta",
            "prompt `p`: _meta",
            "resource `ui://r`: _meta",
            "resource template `ui://{x}`: _meta",
        ];
        // One level over, and far past what serde_json itself parses.
        for depth in [9, 100_000] {
            for (listing, named) in listings(depth).iter().zip(named) {
                let err = validate_listing(listing, &limits).unwrap_err();
                assert_eq!(
                    err,
                    format!(
                        "{named} nests arrays and objects deeper than 8 levels (--max-json-depth)"
                    )
                );
            }
        }
    }

    #[test]
    fn a_large_meta_counts_against_the_page_limit() {
        let limits = limits();
        let big = format!(r#"{{"k":"{}"}}"#, "x".repeat(limits.max_page_bytes));
        let listing = Listing {
            tools: vec![wit::Tool {
                meta: Some(big),
                ..tool("t")
            }],
            ..Listing::default()
        };
        let err = validate_listing(&listing, &limits).unwrap_err();
        assert!(err.contains("--max-output"), "{err}");
    }

    #[test]
    fn a_component_must_serve_something() {
        let err = validate_listing(&Listing::default(), &limits()).unwrap_err();
        assert!(err.contains("lists no tools, prompts"), "{err}");
        let only_a_template = Listing {
            templates: vec![template("notes://{id}")],
            ..Listing::default()
        };
        assert_eq!(validate_listing(&only_a_template, &limits()), Ok(()));
    }

    #[test]
    fn rejects_bad_prompts_resources_and_templates() {
        let argument = |name: &str| wit_prompts::PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: true,
        };
        let cases: Vec<(Listing, &str)> = vec![
            (
                Listing {
                    prompts: vec![prompt("no spaces please")],
                    ..Listing::default()
                },
                "prompt name",
            ),
            (
                Listing {
                    prompts: vec![prompt("p"), prompt("p")],
                    ..Listing::default()
                },
                "prompt `p` twice",
            ),
            (
                Listing {
                    prompts: vec![wit_prompts::Prompt {
                        description: String::new(),
                        ..prompt("p")
                    }],
                    ..Listing::default()
                },
                "empty description",
            ),
            (
                Listing {
                    prompts: vec![wit_prompts::Prompt {
                        arguments: vec![argument("a"), argument("a")],
                        ..prompt("p")
                    }],
                    ..Listing::default()
                },
                "argument `a` twice",
            ),
            (
                Listing {
                    resources: vec![resource("no-scheme")],
                    ..Listing::default()
                },
                "not an absolute URI",
            ),
            (
                Listing {
                    resources: vec![resource("a://x"), resource("a://x")],
                    ..Listing::default()
                },
                "twice",
            ),
            (
                Listing {
                    templates: vec![template("a://{?q}")],
                    ..Listing::default()
                },
                "not supported",
            ),
            (
                Listing {
                    templates: vec![template("a://{x}"), template("a://{x}")],
                    ..Listing::default()
                },
                "twice",
            ),
        ];
        for (listing, expected) in cases {
            let err = validate_listing(&listing, &limits()).unwrap_err();
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn sizes_are_bounded_naming_the_item_and_the_limit() {
        let limits = ListingLimits {
            max_schema_bytes: 1000,
            max_page_bytes: 4096,
            max_listing_bytes: 8192,
            max_json_depth: DEPTH,
        };
        let padded = |bytes: usize| {
            let frame = r#"{"type":"object","description":""}"#.len();
            format!(
                r#"{{"type":"object","description":"{}"}}"#,
                "x".repeat(bytes - frame)
            )
        };
        let with_schema = |name: &str, bytes: usize| Listing {
            tools: vec![wit::Tool {
                input_schema: padded(bytes),
                ..tool(name)
            }],
            ..Listing::default()
        };
        assert_eq!(validate_listing(&with_schema("a", 1000), &limits), Ok(()));
        let err = validate_listing(&with_schema("big", 1001), &limits).unwrap_err();
        assert!(
            err.contains("tool `big`: its input-schema takes 1001 bytes")
                && err.contains("(--max-schema)"),
            "{err}"
        );
        let described = |name: &str, bytes: usize| wit::Tool {
            description: "d".repeat(bytes),
            ..tool(name)
        };
        let one = |tool: wit::Tool| Listing {
            tools: vec![tool],
            ..Listing::default()
        };
        let err = validate_listing(&one(described("long", 4000)), &limits).unwrap_err();
        assert!(
            err.contains("tool `long` takes up to") && err.contains("one page of tools/list"),
            "{err}"
        );
        let prompt_too = Listing {
            prompts: vec![wit_prompts::Prompt {
                description: "d".repeat(4000),
                ..prompt("p")
            }],
            ..Listing::default()
        };
        let err = validate_listing(&prompt_too, &limits).unwrap_err();
        assert!(
            err.contains("prompt `p`") && err.contains("prompts/list"),
            "{err}"
        );
        let many = Listing {
            tools: (0..4)
                .map(|i| described(&format!("t{i}"), 2000 + i))
                .collect(),
            ..Listing::default()
        };
        let err = validate_listing(&many, &limits).unwrap_err();
        assert!(
            err.contains("more than the limit of 8KiB (--max-listing)")
                && err.contains("the largest is tool `t3`"),
            "{err}"
        );
    }
}
