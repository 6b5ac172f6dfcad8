//! The YAML frontmatter of a skill's `SKILL.md`, turned into the JSON
//! object clients get, within bounds that hold before anything is built.
//!
//! A frontmatter comes from a component or the files beside it, so it is
//! read as a stream of parser events and the JSON is built from them, never
//! through a YAML document tree:
//!
//! - an alias (`*name`) is refused where it appears: a few hundred bytes of
//!   anchors and aliases would otherwise expand into gigabytes (an "alias
//!   bomb") before any other limit could look at them;
//! - mappings and sequences nest at most `--max-json-depth` deep (the
//!   frontmatter's own mapping counts), as every JSON value a component
//!   hands the host does;
//! - the JSON built so far is measured as it grows, and refused as soon as
//!   it takes more than a `skills/list` entry may: what the frontmatter
//!   costs in memory is a small multiple of that, whatever the YAML.
//!
//! The parser itself keeps a stack of states, not a call stack, so a deep
//! document cannot overflow the thread's stack while it is refused.

use serde_json::{Map, Number, Value};
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

/// How large and deep a frontmatter may be, as JSON.
#[derive(Debug, Clone, Copy)]
pub struct FrontmatterLimits {
    /// Deepest nesting of mappings and sequences, the frontmatter's own
    /// mapping included (`--max-json-depth`).
    pub max_depth: usize,
    /// Most bytes its JSON may take (what a `skills/list` entry may).
    pub max_bytes: usize,
}

/// The YAML frontmatter at the start of `text` (between `---` lines), as a
/// JSON object; the error says what is wrong with it, for a sentence about
/// the skill ("its frontmatter ...").
pub fn parse(text: &str, limits: FrontmatterLimits) -> Result<Map<String, Value>, String> {
    let yaml = block(text)?;
    to_json(yaml, limits).map_err(|why| format!("its frontmatter {why}"))
}

/// The text between the `---` line that starts `text` and the next one.
fn block(text: &str) -> Result<&str, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || "its SKILL.md does not start with a `---` frontmatter block".to_owned();
    let first_line_end = text.find('\n').ok_or_else(missing)?;
    if text[..first_line_end].trim_end_matches('\r') != "---" {
        return Err(missing());
    }
    let body = &text[first_line_end + 1..];
    let mut offset = 0;
    loop {
        let rest = &body[offset..];
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let line = rest[..line_end].trim_end_matches('\r');
        if line.trim_end_matches([' ', '\t']) == "---" {
            return Ok(&body[..offset]);
        }
        if line_end == rest.len() {
            return Err("its SKILL.md frontmatter has no closing `---`".to_owned());
        }
        offset += line_end + 1;
    }
}

/// The first YAML document of `yaml` as a JSON object, built from the
/// parser's events within `limits`.
fn to_json(yaml: &str, limits: FrontmatterLimits) -> Result<Map<String, Value>, String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut builder = Builder {
        open: Vec::new(),
        root: None,
        bytes: 0,
        limits,
    };
    loop {
        let (event, _) = parser
            .next_token()
            .map_err(|err| format!("is not valid YAML: {err}"))?;
        match event {
            Event::Nothing | Event::StreamStart | Event::DocumentStart => {}
            Event::DocumentEnd | Event::StreamEnd => break,
            Event::Alias(_) => {
                return Err("holds an alias (`*name`); aliases are not accepted".to_owned());
            }
            Event::Scalar(text, style, _, tag) => builder.scalar(text, style, tag.as_ref())?,
            Event::SequenceStart(..) => builder.start(Open::Sequence(Vec::new()))?,
            Event::MappingStart(..) => builder.start(Open::Mapping(Map::new(), None))?,
            Event::SequenceEnd | Event::MappingEnd => builder.end()?,
        }
    }
    match builder.root {
        Some(Value::Object(map)) => Ok(map),
        _ => Err("is not a YAML mapping".to_owned()),
    }
}

/// A mapping or sequence whose end has not been seen yet.
enum Open {
    Sequence(Vec<Value>),
    /// Its entries, and the key of the entry whose value comes next.
    Mapping(Map<String, Value>, Option<String>),
}

/// The JSON of a frontmatter, built one event at a time.
struct Builder {
    /// The mappings and sequences open now, the innermost last.
    open: Vec<Open>,
    /// The whole value, once its end was seen.
    root: Option<Value>,
    /// What the JSON built so far takes, at least: its texts, quotes,
    /// brackets, colons and commas (escapes are not counted).
    bytes: usize,
    limits: FrontmatterLimits,
}

impl Builder {
    /// Counts `bytes` more of JSON, refusing what goes past the limit.
    fn count(&mut self, bytes: usize) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_bytes {
            return Err(format!(
                "takes more than {} bytes as JSON, more than its skills/list entry may (--max-output)",
                self.limits.max_bytes
            ));
        }
        Ok(())
    }

    /// Whether the next node is the key of a mapping's entry.
    fn at_key(&self) -> bool {
        matches!(self.open.last(), Some(Open::Mapping(_, None)))
    }

    /// A mapping or sequence starts.
    fn start(&mut self, container: Open) -> Result<(), String> {
        if self.at_key() {
            return Err("has a key that is not a string".to_owned());
        }
        if self.open.len() == self.limits.max_depth {
            return Err(format!(
                "nests mappings and sequences deeper than {} levels (--max-json-depth)",
                self.limits.max_depth
            ));
        }
        // Its brackets, and the comma before it.
        self.count(3)?;
        self.open.push(container);
        Ok(())
    }

    /// The innermost open mapping or sequence ends.
    fn end(&mut self) -> Result<(), String> {
        let value = match self.open.pop() {
            Some(Open::Sequence(items)) => Value::Array(items),
            Some(Open::Mapping(entries, _)) => Value::Object(entries),
            None => return Err("is not valid YAML: an end without a start".to_owned()),
        };
        self.add(value)
    }

    /// A scalar: a key, or a value.
    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        tag: Option<&Tag>,
    ) -> Result<(), String> {
        self.count(text.len() + 3)?;
        let resolved = resolve(text, style, tag);
        if let Some(Open::Mapping(entries, key @ None)) = self.open.last_mut() {
            let Yaml::String(text) = resolved else {
                return Err("has a key that is not a string".to_owned());
            };
            if entries.contains_key(&text) {
                return Err(format!("has the key `{text}` twice"));
            }
            *key = Some(text);
            return Ok(());
        }
        self.add(scalar_json(resolved)?)
    }

    /// Puts a finished value into the innermost open mapping or sequence
    /// (or makes it the whole value).
    fn add(&mut self, value: Value) -> Result<(), String> {
        match self.open.last_mut() {
            None => self.root = Some(value),
            Some(Open::Sequence(items)) => items.push(value),
            Some(Open::Mapping(entries, key)) => {
                let key = key
                    .take()
                    .ok_or_else(|| "has a key that is not a string".to_owned())?;
                entries.insert(key, value);
            }
        }
        Ok(())
    }
}

/// What a scalar is, by YAML 1.2's core schema: quoted and block scalars,
/// and those tagged `!!str` or with a tag of their own, are strings; a
/// plain one may be null, a boolean or a number.
fn resolve(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Yaml {
    const CORE_SCHEMA: &str = "tag:yaml.org,2002:";
    let as_string = match tag {
        _ if style != TScalarStyle::Plain => true,
        None => false,
        Some(tag) => tag.handle != CORE_SCHEMA || tag.suffix == "str",
    };
    if as_string {
        Yaml::String(text)
    } else {
        Yaml::from_str(&text)
    }
}

/// A resolved scalar as JSON.
fn scalar_json(yaml: Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("holds a number JSON cannot carry: {text}"))?,
        Yaml::Array(_) | Yaml::Hash(_) | Yaml::Alias(_) | Yaml::BadValue => {
            return Err("holds a value that is not a scalar where a scalar was".to_owned());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: FrontmatterLimits = FrontmatterLimits {
        max_depth: 64,
        max_bytes: 1 << 20,
    };

    fn frontmatter(yaml: &str) -> Result<Value, String> {
        parse(&format!("---\n{yaml}---\n# Body\n"), LIMITS).map(Value::Object)
    }

    #[test]
    fn a_frontmatter_becomes_the_json_of_its_yaml() {
        let yaml = "\
name: demo
description: 'Shows: how'
metadata:
  version: 2
  ratio: 0.5
  hex: 0x1f
  on: true
  none: ~
  tags: [a, \"b\", 3]
  text: !!str 12
  mine: !local 12
  long: |
    two
    lines
";
        assert_eq!(
            frontmatter(yaml).unwrap(),
            json!({"name": "demo", "description": "Shows: how", "metadata": {
                "version": 2, "ratio": 0.5, "hex": 31, "on": true, "none": null,
                "tags": ["a", "b", 3], "text": "12", "mine": "12", "long": "two\nlines\n"
            }})
        );
        // A byte order mark and CRLF line ends.
        let crlf = parse("\u{feff}---\r\nname: x\r\n---\r\n", LIMITS).unwrap();
        assert_eq!(Value::Object(crlf), json!({"name": "x"}));
    }

    #[test]
    fn what_is_not_a_mapping_with_string_keys_is_refused() {
        for (yaml, why) in [
            ("- a\n- b\n", "is not a YAML mapping"),
            ("just text\n", "is not a YAML mapping"),
            ("", "is not a YAML mapping"),
            ("1: one\n", "a key that is not a string"),
            ("? [a]\n: b\n", "a key that is not a string"),
            ("? {a: 1}\n: b\n", "a key that is not a string"),
            ("a: 1\na: 2\n", "the key `a` twice"),
            ("a: .inf\n", "a number JSON cannot carry"),
            ("a: [\n", "is not valid YAML"),
            ("a: b: c\n", "is not valid YAML"),
        ] {
            let err = frontmatter(yaml).unwrap_err();
            assert!(err.starts_with("its frontmatter "), "{yaml:?}: {err}");
            assert!(err.contains(why), "{yaml:?}: {err}");
        }
        for text in ["no frontmatter\n", "---\nname: x\n", "---"] {
            assert!(parse(text, LIMITS).unwrap_err().contains("---"), "{text:?}");
        }
    }

    #[test]
    fn an_alias_is_refused_before_it_expands() {
        // Nine levels of nine aliases: 9^9 strings once expanded.
        let mut bomb = String::from("name: bomb\ndescription: d\na0: &a0 [x,x,x,x,x,x,x,x,x]\n");
        for level in 1..9 {
            let previous = format!("*a{}", level - 1);
            let aliases = [previous.as_str(); 9].join(",");
            bomb.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
        }
        assert!(bomb.len() < 512, "{}", bomb.len());
        let err = frontmatter(&bomb).unwrap_err();
        assert!(err.contains("alias"), "{err}");
        // An anchor alone is harmless, and taken as the value it names.
        assert_eq!(
            frontmatter("name: &n demo\n").unwrap(),
            json!({"name": "demo"})
        );
        assert!(
            frontmatter("a: &x 1\nb: *x\n")
                .unwrap_err()
                .contains("alias")
        );
    }

    #[test]
    fn nesting_is_bounded_by_the_json_depth() {
        let limits = FrontmatterLimits {
            max_depth: 4,
            ..LIMITS
        };
        let flow = |depth: usize| {
            format!(
                "---\na: {}{}\n---\n",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            )
        };
        // The mapping and three sequences.
        assert!(parse(&flow(4), limits).is_ok());
        let err = parse(&flow(5), limits).unwrap_err();
        assert_eq!(
            err,
            "its frontmatter nests mappings and sequences deeper than 4 levels (--max-json-depth)"
        );
        // Block mappings, far deeper than the limit (and than the flow
        // levels the scanner allows): refused without recursion.
        let mut deep = String::from("---\n");
        for level in 0..300 {
            deep.push_str(&" ".repeat(level));
            deep.push_str("a:\n");
        }
        deep.push_str("---\n");
        assert!(
            parse(&deep, LIMITS)
                .unwrap_err()
                .contains("deeper than 64 levels")
        );
    }

    #[test]
    fn the_json_it_would_take_is_bounded_as_it_is_built() {
        let limits = FrontmatterLimits {
            max_bytes: 1000,
            ..LIMITS
        };
        let refused = |yaml: &str| parse(&format!("---\n{yaml}\n---\n"), limits).unwrap_err();
        // A huge scalar, many small items, many keys.
        for yaml in [
            format!("a: {}", "x".repeat(2000)),
            format!("a: [{}]", ["1"; 600].join(",")),
            (0..200).map(|i| format!("k{i}: {i}\n")).collect(),
        ] {
            let err = refused(&yaml);
            assert!(err.contains("more than 1000 bytes as JSON"), "{err}");
        }
        assert!(parse("---\na: [1, 2]\n---\n", limits).is_ok());
    }
}
