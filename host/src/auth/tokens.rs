//! Static bearer tokens.
//!
//! A tokens file maps secret tokens to names, one
//! `<token> <name> [scope:<s>]... [group:<g>]...` per line (`#` starts a
//! comment line): the scopes and groups are what access rules see of the
//! caller (see [`crate::access`]); a field of another kind is refused. A
//! listed token's principal is
//! `token:<name>`, its own namespace (see [`crate::auth`]), so it never
//! equals the principal of a JWT, of unauthenticated HTTP or of stdio.
//!
//! Tokens are at least 16 characters long. A name is 1 to
//! [`MAX_NAME_CHARS`] characters from the ASCII letters, digits and
//! `.` `_` `-` `@` `+`; the names of the other sources' principals
//! (`anonymous`, `stdio`, and `local`, the stdio principal of earlier
//! versions) are refused in any letter case, so a file cannot suggest it
//! shares their identity. A file breaking these rules stops the start with
//! its path and the line at fault.
//!
//! Tokens are kept only as SHA-256 digests in memory and looked up by
//! digest, so the comparison does not leak how much of a token matched.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use ring::digest::{SHA256, digest};

use super::{TOKEN_PRINCIPAL_PREFIX, bearer_token};
use crate::access::{Caller, MAX_NAMES, Source};

/// Longest name accepted in the tokens file, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// Names a tokens file may not use: other sources' principals.
const RESERVED_NAMES: &[&str] = &["anonymous", "stdio", "local"];

/// Why `name` cannot name a tokens-file principal, if it cannot.
fn name_problem(name: &str) -> Option<String> {
    if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        return Some(format!(
            "the name {name:?} is reserved (anonymous, stdio and local name other callers)"
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | '+');
    if name.chars().count() > MAX_NAME_CHARS || !name.chars().all(allowed) {
        return Some(format!(
            "the name {name:?} is not allowed: use at most {MAX_NAME_CHARS} ASCII letters, \
             digits and . _ - @ +"
        ));
    }
    None
}

/// Tokens → callers.
#[derive(Default)]
pub struct TokenTable {
    by_digest: HashMap<[u8; 32], Arc<Caller>>,
}

impl std::fmt::Debug for TokenTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenTable")
            .field("tokens", &self.by_digest.len())
            .finish()
    }
}

fn token_digest(token: &str) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
    out
}

impl TokenTable {
    /// Reads a tokens file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read tokens file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid tokens file {}", path.display()))
    }

    /// Parses `<token> <name> [scope:<s>]... [group:<g>]...` lines.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut table = TokenTable::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(token), Some(name)) = (fields.next(), fields.next()) else {
                bail!(
                    "line {}: expected `<token> <name> [scope:<s>]... [group:<g>]...`",
                    number + 1
                );
            };
            if token.len() < 16 {
                bail!(
                    "line {}: tokens must be at least 16 characters long",
                    number + 1
                );
            }
            if let Some(problem) = name_problem(name) {
                bail!("line {}: {problem}", number + 1);
            }
            let mut caller = Caller::new(format!("{TOKEN_PRINCIPAL_PREFIX}{name}"), Source::Token);
            for field in fields {
                let (set, value) = match field.split_once(':') {
                    Some(("scope", scope)) if !scope.is_empty() => (&mut caller.scopes, scope),
                    Some(("group", group)) if !group.is_empty() => (&mut caller.groups, group),
                    _ => bail!(
                        "line {}: {field:?} is neither scope:<s> nor group:<g>",
                        number + 1
                    ),
                };
                if set.len() >= MAX_NAMES {
                    bail!(
                        "line {}: more than {MAX_NAMES} scopes or groups",
                        number + 1
                    );
                }
                set.insert(value.to_owned());
            }
            if table
                .by_digest
                .insert(token_digest(token), Arc::new(caller))
                .is_some()
            {
                bail!("line {}: this token is already listed", number + 1);
            }
        }
        if table.by_digest.is_empty() {
            bail!("no tokens");
        }
        Ok(table)
    }

    /// The principal of an `Authorization` header value, if it carries a
    /// known bearer token.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<&str> {
        self.lookup(bearer_token(authorization)?)
            .map(|caller| caller.principal.as_str())
    }

    /// The caller of a bearer token, if it is listed.
    pub fn lookup(&self, token: &str) -> Option<&Arc<Caller>> {
        self.by_digest.get(&token_digest(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_bearer_tokens_to_principals() {
        let table =
            TokenTable::parse("# team\nalice-token-0123456789 alice\n\nbob-token-0123456789 bob\n")
                .unwrap();
        assert_eq!(
            table.authenticate(Some("Bearer alice-token-0123456789")),
            Some("token:alice")
        );
        assert_eq!(
            table.authenticate(Some("bearer  bob-token-0123456789 ")),
            Some("token:bob")
        );
        assert_eq!(
            table.authenticate(Some("Bearer alice-token-012345678")),
            None
        );
        assert_eq!(
            table.authenticate(Some("Basic alice-token-0123456789")),
            None
        );
        assert_eq!(table.authenticate(None), None);
    }

    #[test]
    fn refuses_bad_files_without_echoing_tokens() {
        for bad in [
            "",
            "# only a comment",
            "short alice",
            "a-long-enough-token-1 alice extra",
            "a-long-enough-token-1 alice scope:",
            "a-long-enough-token-1 alice role:admin",
            "lonely-token-0123456789",
        ] {
            let error = TokenTable::parse(bad).unwrap_err().to_string();
            assert!(!error.contains("token-0123456789"), "{error}");
        }
        assert!(TokenTable::parse("same-token-0123456789 a\nsame-token-0123456789 b").is_err());
        assert!(
            !format!(
                "{:?}",
                TokenTable::parse("secret-token-0123456789 a").unwrap()
            )
            .contains("secret")
        );
    }

    #[test]
    fn reserved_and_ambiguous_names_are_refused_with_their_line() {
        let long = "a".repeat(MAX_NAME_CHARS + 1);
        for name in [
            "anonymous",
            "stdio",
            "local",
            "Anonymous",
            "STDIO",
            "a:b",
            "token:alice",
            "jwt:https://idp#alice",
            "team#1",
            "ctl\u{1}name",
            "caf\u{e9}",
            "a/b",
            &long,
        ] {
            let text = format!("good-token-0123456789 alice\nbad-token-0123456789 {name}\n");
            let error = TokenTable::parse(&text).unwrap_err().to_string();
            assert!(error.starts_with("line 2: "), "{name:?}: {error}");
            assert!(error.contains(&format!("{name:?}")), "{name:?}: {error}");
            assert!(!error.contains("token-0123456789"), "{error}");
        }
        let fine = "alice.smith_2-ops+ci@example.com";
        let table = TokenTable::parse(&format!("some-token-0123456789 {fine}")).unwrap();
        assert_eq!(
            table
                .lookup("some-token-0123456789")
                .map(|c| c.principal.as_str()),
            Some(format!("token:{fine}").as_str())
        );
        let longest = "b".repeat(MAX_NAME_CHARS);
        assert!(TokenTable::parse(&format!("some-token-0123456789 {longest}")).is_ok());
    }

    #[test]
    fn scopes_and_groups_follow_the_name() {
        let table = TokenTable::parse(
            "ops-token-0123456789 ops scope:deploy:write group:ops scope:mcp:tools\n\
             old-token-0123456789 old\n",
        )
        .unwrap();
        let ops = table.lookup("ops-token-0123456789").unwrap();
        assert_eq!(
            (ops.principal.as_str(), ops.source),
            ("token:ops", Source::Token)
        );
        assert_eq!(
            ops.scopes.iter().collect::<Vec<_>>(),
            ["deploy:write", "mcp:tools"]
        );
        assert_eq!(ops.groups.iter().collect::<Vec<_>>(), ["ops"]);
        let old = table.lookup("old-token-0123456789").unwrap();
        assert!(old.scopes.is_empty() && old.groups.is_empty());
        let error = TokenTable::parse("ok-token-0123456789 a\nbad-token-0123456789 b tier:gold\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("line 2: ") && error.contains("tier:gold"),
            "{error}"
        );
    }

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("airlock-tokens-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens");
        std::fs::write(&path, "some-token-0123456789 stdio\n").unwrap();
        let error = format!("{:#}", TokenTable::load(&path).unwrap_err());
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            error.contains(&path.display().to_string()) && error.contains("line 1"),
            "{error}"
        );
    }
}
