//! The caller of a request, as authentication found it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The principal of every request when HTTP authentication is off.
pub const ANONYMOUS: &str = "anonymous";

/// The principal of a stdio connection: whoever started the process.
pub const STDIO: &str = "stdio";

/// The prefix of every tokens-file principal (`token:<name>`).
pub const TOKEN_PRINCIPAL_PREFIX: &str = "token:";

/// The prefix of every JWT principal (`jwt:<iss>#<sub>`).
pub const JWT_PRINCIPAL_PREFIX: &str = "jwt:";

/// Most scopes, and most groups, kept of one caller; the rest are dropped.
pub const MAX_NAMES: usize = 256;

/// Most JWT claims (besides the registered ones) kept of one caller.
pub const MAX_CLAIMS: usize = 64;

/// Most values kept of one array claim.
pub const MAX_CLAIM_VALUES: usize = 64;

/// Longest claim name or value kept, in bytes; longer ones are dropped.
pub const MAX_CLAIM_BYTES: usize = 1024;

/// Where a caller's identity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A token of the tokens file.
    Token,
    /// A JWT access token.
    Jwt,
    /// HTTP with authentication off.
    Anonymous,
    /// The stdio transport: whoever started the process.
    Stdio,
}

/// Who sent a request: its principal and what rules can ask of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The principal (`token:<name>`, `jwt:<iss>#<sub>`, `anonymous`,
    /// `stdio`).
    pub principal: String,
    /// Where it came from.
    pub source: Source,
    /// Its scopes.
    pub scopes: BTreeSet<String>,
    /// Its groups.
    pub groups: BTreeSet<String>,
    /// Its other JWT claims, each as the texts it matches: a string as it
    /// is, a number or a boolean as JSON writes it, an array as its
    /// elements of those kinds.
    pub claims: BTreeMap<String, Vec<String>>,
}

impl Caller {
    /// A caller of `source` with no scopes, groups or claims.
    pub fn new(principal: impl Into<String>, source: Source) -> Caller {
        Caller {
            principal: principal.into(),
            source,
            scopes: BTreeSet::new(),
            groups: BTreeSet::new(),
            claims: BTreeMap::new(),
        }
    }

    /// Every request of HTTP with authentication off.
    pub fn anonymous() -> Caller {
        Caller::new(ANONYMOUS, Source::Anonymous)
    }

    /// The stdio process.
    pub fn stdio() -> Caller {
        Caller::new(STDIO, Source::Stdio)
    }

    /// The same caller with `scopes` (at most [`MAX_NAMES`]).
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Caller {
        add_bounded(&mut self.scopes, scopes);
        self
    }

    /// The same caller with `groups` (at most [`MAX_NAMES`]).
    pub fn with_groups<S: Into<String>>(mut self, groups: impl IntoIterator<Item = S>) -> Caller {
        add_bounded(&mut self.groups, groups);
        self
    }

    /// The same caller with the JWT claims of `claims` that rules can
    /// match: `scope` (space-separated) and `scp` (array or string) add
    /// scopes, `groups` (array or string) adds groups, and every other claim
    /// but the registered ones is kept (bounded) for `claim:` conditions.
    pub fn with_jwt_claims(mut self, claims: &serde_json::Map<String, Value>) -> Caller {
        if let Some(Value::String(scope)) = claims.get("scope") {
            add_bounded(&mut self.scopes, scope.split_whitespace());
        }
        for (name, set) in [("scp", &mut self.scopes), ("groups", &mut self.groups)] {
            match claims.get(name) {
                Some(Value::String(one)) => add_bounded(set, one.split_whitespace()),
                Some(Value::Array(many)) => add_bounded(set, many.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
        for (name, value) in claims {
            if self.claims.len() >= MAX_CLAIMS {
                break;
            }
            if REGISTERED.contains(&name.as_str()) || name.len() > MAX_CLAIM_BYTES {
                continue;
            }
            let values: Vec<String> = match value {
                Value::Array(items) => items
                    .iter()
                    .filter_map(scalar)
                    .take(MAX_CLAIM_VALUES)
                    .collect(),
                other => scalar(other).into_iter().collect(),
            };
            if !values.is_empty() {
                self.claims.insert(name.clone(), values);
            }
        }
        self
    }

    /// Whether the caller authenticated (anyone but [`Source::Anonymous`]).
    pub fn is_authenticated(&self) -> bool {
        self.source != Source::Anonymous
    }
}

/// The registered JWT claims: checked by authentication, or read as
/// scopes and groups, never matched by `claim:`.
const REGISTERED: &[&str] = &[
    "iss", "sub", "aud", "exp", "nbf", "iat", "jti", "scope", "scp", "groups",
];

/// A claim value as the text a `claim:` condition compares: strings,
/// numbers and booleans; anything else never matches.
fn scalar(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        _ => return None,
    };
    (text.len() <= MAX_CLAIM_BYTES).then_some(text)
}

fn add_bounded<S: Into<String>>(set: &mut BTreeSet<String>, names: impl IntoIterator<Item = S>) {
    for name in names {
        if set.len() >= MAX_NAMES {
            break;
        }
        let name = name.into();
        if !name.is_empty() && name.len() <= MAX_CLAIM_BYTES {
            set.insert(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jwt_claims_give_scopes_groups_and_bounded_claims() {
        let Value::Object(claims) = json!({
            "iss": "https://idp", "sub": "alice", "exp": 1,
            "scope": "mcp:tools  deploy:write", "scp": ["extra"], "groups": "ops",
            "tenant": "acme", "level": 3, "admin": true, "teams": ["a", 2, {"x": 1}],
            "nested": {"a": 1}, "nothing": null,
        }) else {
            unreachable!()
        };
        let caller = Caller::new("jwt:https://idp#alice", Source::Jwt).with_jwt_claims(&claims);
        assert_eq!(
            caller.scopes.iter().collect::<Vec<_>>(),
            ["deploy:write", "extra", "mcp:tools"]
        );
        assert_eq!(caller.groups.iter().collect::<Vec<_>>(), ["ops"]);
        assert_eq!(caller.claims["tenant"], ["acme"]);
        assert_eq!(caller.claims["level"], ["3"]);
        assert_eq!(caller.claims["admin"], ["true"]);
        assert_eq!(caller.claims["teams"], ["a", "2"]);
        assert!(!caller.claims.contains_key("nested"));
        assert!(!caller.claims.contains_key("nothing"));
        assert!(!caller.claims.contains_key("sub"));
    }

    #[test]
    fn what_is_kept_is_bounded() {
        let mut claims = serde_json::Map::new();
        let many: Vec<String> = (0..1000).map(|i| format!("s{i}")).collect();
        claims.insert("scope".into(), Value::String(many.join(" ")));
        for i in 0..1000 {
            claims.insert(format!("c{i}"), json!(vec![i; 1000]));
        }
        claims.insert(
            "long".into(),
            Value::String("x".repeat(MAX_CLAIM_BYTES + 1)),
        );
        let caller = Caller::new("p", Source::Jwt).with_jwt_claims(&claims);
        assert_eq!(caller.scopes.len(), MAX_NAMES);
        assert!(caller.claims.len() <= MAX_CLAIMS);
        assert!(caller.claims.values().all(|v| v.len() <= MAX_CLAIM_VALUES));
        assert!(!caller.claims.contains_key("long"));
    }
}
