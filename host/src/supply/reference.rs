//! Parsing the references of the components file. The general parser
//! (`Reference::try_from`) matches one large regular expression, whose
//! compilation takes longer (about 100 ms) than the rest of a start from a
//! warm pull cache. References of the usual form, `host[:port]/path[:tag]
//! [@sha256:<hex>]` with a registry host named, are split here, by the
//! same grammar; anything else (a Docker Hub short name, another digest
//! algorithm, a character this strict reading does not take) goes to the
//! general parser, so every reference means what it always meant.

use oci_client::{ParseError, Reference};

/// The longest repository path (as the general parser bounds it).
const MAX_REPOSITORY_LEN: usize = 255;

/// The longest tag.
const MAX_TAG_LEN: usize = 128;

/// `text` as a reference: read here if it has the usual form, else by the
/// general parser.
pub(super) fn parse(text: &str) -> Result<Reference, ParseError> {
    usual(text).map_or_else(|| Reference::try_from(text), Ok)
}

/// `text` as a reference if it has the usual form, else `None`.
fn usual(text: &str) -> Option<Reference> {
    let (name, digest) = match text.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (text, None),
    };
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:")?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
    }
    let (registry, path) = name.split_once('/')?;
    let (repository, tag) = match path.rsplit_once(':') {
        Some((repository, tag)) => (repository, Some(tag)),
        None => (path, None),
    };
    if !is_registry(registry)
        || repository.len() > MAX_REPOSITORY_LEN
        || !repository.split('/').all(is_path_component)
        || !tag.is_none_or(is_tag)
    {
        return None;
    }
    let (registry, repository) = (registry.to_owned(), repository.to_owned());
    Some(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag.to_owned(), digest.to_owned())
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest.to_owned()),
        (tag, None) => {
            Reference::with_tag(registry, repository, tag.unwrap_or("latest").to_owned())
        }
    })
}

/// A registry named by host (with a dot, or `localhost`) or with a port,
/// other than Docker Hub's (whose short names the general parser expands).
fn is_registry(registry: &str) -> bool {
    let (host, port) = match registry.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (registry, None),
    };
    let labels_ok = host.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    });
    let port_ok =
        port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    let named = host.contains('.') || port.is_some() || host == "localhost";
    labels_ok && port_ok && named && !matches!(host, "docker.io" | "index.docker.io")
}

/// One component of a repository path: lowercase letters and digits in
/// runs joined by `.`, `_`, `__` or dashes.
fn is_path_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !component.starts_with(alnum) || !component.ends_with(alnum) {
        return false;
    }
    component
        .split(alnum)
        .filter(|separator| !separator.is_empty())
        .all(|separator| {
            matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-')
        })
        && component
            .chars()
            .all(|c| alnum(c) || matches!(c, '.' | '_' | '-'))
}

/// A tag: a word character, then at most 127 word characters, dots and
/// dashes (ASCII).
fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_TAG_LEN
        && word(bytes[0])
        && bytes.iter().all(|b| word(*b) || matches!(b, b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:4f1c3a5e6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70";

    #[test]
    fn the_usual_references_read_as_the_general_parser_reads_them() {
        let usual_ones = [
            "registry.example.com/tools/hash:1.0".to_owned(),
            "registry.example.com/tools/hash".to_owned(),
            "127.0.0.1:5000/tools/hash:1".to_owned(),
            "localhost/a/b/c:v1_2-3.4".to_owned(),
            "localhost:5000/dev/scratch:latest".to_owned(),
            "ghcr.io/org/my-tool__x.y:_t".to_owned(),
            format!("registry.example.com/tools/search@{DIGEST}"),
            format!("registry.example.com/tools/search:2@{DIGEST}"),
            "r.example/a--b/c_d:T".to_owned(),
        ];
        for text in &usual_ones {
            let read = usual(text).unwrap_or_else(|| panic!("{text} is read here"));
            assert_eq!(Ok(read), Reference::try_from(text.as_str()), "{text}");
        }
    }

    #[test]
    fn other_references_go_to_the_general_parser() {
        let others = [
            "hash:1".to_owned(),
            "org/hash:1".to_owned(),
            "docker.io/org/hash:1".to_owned(),
            "index.docker.io/hash".to_owned(),
            "Registry.example.com/Tools/hash:1".to_owned(),
            "registry.example.com/tools/Hash:1".to_owned(),
            "registry.example.com/tools/a..b:1".to_owned(),
            "registry.example.com/tools/a._b".to_owned(),
            "registry.example.com/tools/-a".to_owned(),
            "registry.example.com//a".to_owned(),
            "-r.example/a".to_owned(),
            "r.example:/a".to_owned(),
            "r.example/a:".to_owned(),
            "r.example/a:.t".to_owned(),
            format!("r.example/a:{}", "t".repeat(129)),
            format!("r.example/{}", "a".repeat(256)),
            "r.example/a@sha256:abc".to_owned(),
            format!("r.example/a@{}", DIGEST.to_uppercase()),
            format!("r.example/a@sha512:{}", "0".repeat(128)),
            "".to_owned(),
        ];
        for text in &others {
            assert_eq!(usual(text), None, "{text} is not read here");
            assert_eq!(
                parse(text),
                Reference::try_from(text.as_str()),
                "{text} means what the general parser says"
            );
        }
    }
}
