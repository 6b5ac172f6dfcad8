//! Static bearer tokens.
//!
//! A tokens file maps secret tokens to principals, one `<token> <principal>`
//! per line (`#` starts a comment). The principal is what a sealed
//! `requestState` is bound to, so a token minted for one caller is useless to
//! another. Tokens are kept only as SHA-256 digests in memory and looked up
//! by digest, so the comparison does not leak how much of a token matched.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use ring::digest::{SHA256, digest};

use super::{JWT_PRINCIPAL_PREFIX, bearer_token};

/// Tokens → principals.
#[derive(Default)]
pub struct TokenTable {
    by_digest: HashMap<[u8; 32], String>,
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

    /// Parses `<token> <principal>` lines.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut table = TokenTable::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(token), Some(principal), None) =
                (fields.next(), fields.next(), fields.next())
            else {
                bail!("line {}: expected `<token> <principal>`", number + 1);
            };
            if token.len() < 16 {
                bail!(
                    "line {}: tokens must be at least 16 characters long",
                    number + 1
                );
            }
            if principal.starts_with(JWT_PRINCIPAL_PREFIX) {
                bail!(
                    "line {}: principals starting with `{JWT_PRINCIPAL_PREFIX}` are reserved for JWT callers",
                    number + 1
                );
            }
            if table
                .by_digest
                .insert(token_digest(token), principal.to_owned())
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
    }

    /// The principal of a bearer token, if it is listed.
    pub fn lookup(&self, token: &str) -> Option<&str> {
        self.by_digest.get(&token_digest(token)).map(String::as_str)
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
            Some("alice")
        );
        assert_eq!(
            table.authenticate(Some("bearer  bob-token-0123456789 ")),
            Some("bob")
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
            "lonely-token-0123456789",
        ] {
            let error = TokenTable::parse(bad).unwrap_err().to_string();
            assert!(!error.contains("token-0123456789"), "{error}");
        }
        assert!(TokenTable::parse("same-token-0123456789 a\nsame-token-0123456789 b").is_err());
        // JWT principals have their own namespace.
        assert!(TokenTable::parse("some-token-0123456789 jwt:https://idp#alice").is_err());
        assert!(
            !format!(
                "{:?}",
                TokenTable::parse("secret-token-0123456789 a").unwrap()
            )
            .contains("secret")
        );
    }
}
