//! RFC 6570 URI templates, the subset resource templates may use: literal
//! text, simple expansions (`{name}`) and reserved expansions (`{+name}`).
//!
//! The host matches a `resources/read` URI against every template to find
//! the component that serves it, and hands that component the variables'
//! values, so guests never parse templates themselves. Other operators
//! (`{?q}`, `{/p}`, `{#f}`, ...), lists of variables and modifiers are
//! refused when the component loads, naming the template.

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{name}`: one or more characters other than `/ ? #`.
    Simple(String),
    /// `{+name}`: one or more characters of any kind.
    Reserved(String),
}

impl UriTemplate {
    /// Parses `template`; the error says what is not supported.
    pub fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(at) if rest.as_bytes()[at] == b'}' => {
                    return Err("a `}` without its `{`".to_owned());
                }
                Some(at) => {
                    if at > 0 {
                        parts.push(Part::Literal(rest[..at].to_owned()));
                    }
                    let end = rest[at..]
                        .find('}')
                        .ok_or_else(|| "a `{` without its `}`".to_owned())?;
                    parts.push(expression(&rest[at + 1..at + end])?);
                    rest = &rest[at + end + 1..];
                }
            }
        }
        let variables: Vec<&str> = parts.iter().filter_map(Part::variable).collect();
        for (i, name) in variables.iter().enumerate() {
            if variables[..i].contains(name) {
                return Err(format!("variable `{name}` appears twice"));
            }
        }
        for pair in parts.windows(2) {
            if pair[0].variable().is_some() && pair[1].variable().is_some() {
                return Err("two expressions with no literal text between them".to_owned());
            }
        }
        Ok(UriTemplate { parts })
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(Part::variable)
    }

    /// The values of the variables if `uri` matches, percent-decoded, in
    /// order.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        if !match_parts(&self.parts, uri, &mut values) {
            return None;
        }
        values
            .into_iter()
            .map(|(name, raw)| Some((name.to_owned(), percent_decode(raw)?)))
            .collect()
    }
}

impl Part {
    fn variable(&self) -> Option<&str> {
        match self {
            Part::Literal(_) => None,
            Part::Simple(name) | Part::Reserved(name) => Some(name),
        }
    }
}

fn expression(inner: &str) -> Result<Part, String> {
    let (reserved, name) = match inner.strip_prefix('+') {
        Some(name) => (true, name),
        None => (false, inner),
    };
    if name.is_empty() {
        return Err(format!("empty expression `{{{inner}}}`"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
    {
        return Err(format!(
            "expression `{{{inner}}}` is not supported: use `{{name}}` or `{{+name}}` with a name of A-Z a-z 0-9 _ ."
        ));
    }
    let name = name.to_owned();
    Ok(if reserved {
        Part::Reserved(name)
    } else {
        Part::Simple(name)
    })
}

/// Matches `parts` against all of `uri`, collecting raw variable values.
fn match_parts<'t, 'u>(
    parts: &'t [Part],
    uri: &'u str,
    values: &mut Vec<(&'t str, &'u str)>,
) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(text) => uri
            .strip_prefix(text.as_str())
            .is_some_and(|uri| match_parts(rest, uri, values)),
        Part::Simple(name) | Part::Reserved(name) => {
            let reserved = matches!(first, Part::Reserved(_));
            // Candidate ends, shortest first; a simple value stops at the
            // first `/ ? #`.
            let limit = if reserved {
                uri.len()
            } else {
                uri.find(['/', '?', '#']).unwrap_or(uri.len())
            };
            for end in (1..=limit).filter(|&end| uri.is_char_boundary(end)) {
                values.push((name, &uri[..end]));
                if match_parts(rest, &uri[end..], values) {
                    return true;
                }
                values.pop();
            }
            false
        }
    }
}

/// Decodes `%XX` escapes; `None` if one is malformed or the result is not
/// UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    if !raw.contains('%') {
        return Some(raw.to_owned());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().matches(uri)
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_owned(), value.to_owned())
    }

    #[test]
    fn simple_expansions_match_one_segment() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![pair("id", "123")])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/datax"),
            None
        );
        assert_eq!(
            vars("db://{table}/{row}", "db://users/42"),
            Some(vec![pair("table", "users"), pair("row", "42")])
        );
        assert_eq!(
            vars("note://{name}", "note://caf%C3%A9%20menu"),
            Some(vec![pair("name", "café menu")])
        );
        assert_eq!(vars("note://{name}", "note://bad%zz"), None);
    }

    #[test]
    fn reserved_expansions_span_segments() {
        assert_eq!(
            vars("file:///{+path}", "file:///src/main.rs"),
            Some(vec![pair("path", "src/main.rs")])
        );
        assert_eq!(
            vars("repo://{+path}/raw", "repo://a/b/raw"),
            Some(vec![pair("path", "a/b")])
        );
        assert_eq!(vars("file:///{+path}", "file:///"), None);
    }

    #[test]
    fn unsupported_templates_are_refused_with_a_reason() {
        for (template, why) in [
            ("a://{?q}", "not supported"),
            ("a://{x,y}", "not supported"),
            ("a://{x*}", "not supported"),
            ("a://{}", "empty"),
            ("a://{x", "without its `}`"),
            ("a://x}", "without its `{`"),
            ("a://{x}{y}", "no literal text"),
            ("a://{x}/{x}", "twice"),
        ] {
            let err = UriTemplate::parse(template).unwrap_err();
            assert!(err.contains(why), "{template}: {err}");
        }
        let parsed = UriTemplate::parse("a://{x}/b/{+y}").unwrap();
        assert_eq!(parsed.variables().collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(vars("a://fixed", "a://fixed"), Some(vec![]));
    }
}
