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

/// Most scopes, and most groups, one line of the tokens file may give.
pub const MAX_NAMES: usize = 256;

/// How much of a JWT's scopes, groups and claims a caller keeps; the rest
/// is dropped (`--jwt-max-names`, `--jwt-max-claims`,
/// `--jwt-max-claim-values`, `--jwt-max-claim-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerLimits {
    /// Most scopes, and most groups.
    pub names: usize,
    /// Most claims besides the registered ones.
    pub claims: usize,
    /// Most values of one array claim.
    pub claim_values: usize,
    /// Longest scope, group, claim name or claim value, in bytes.
    pub claim_bytes: usize,
}

impl Default for CallerLimits {
    fn default() -> Self {
        CallerLimits {
            names: 256,
            claims: 64,
            claim_values: 64,
            claim_bytes: 1024,
        }
    }
}

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

    /// The same caller with `scopes` (within the default [`CallerLimits`]).
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Caller {
        add_bounded(&mut self.scopes, scopes, &CallerLimits::default());
        self
    }

    /// The same caller with `groups` (within the default [`CallerLimits`]).
    pub fn with_groups<S: Into<String>>(mut self, groups: impl IntoIterator<Item = S>) -> Caller {
        add_bounded(&mut self.groups, groups, &CallerLimits::default());
        self
    }

    /// The same caller with the JWT claims of `claims` that rules can
    /// match: `scope` (space-separated) and `scp` (array or string) add
    /// scopes, `groups` (array or string) adds groups, and every other claim
    /// but the registered ones is kept for `claim:` conditions, all within
    /// `limits`.
    pub fn with_jwt_claims(
        mut self,
        claims: &serde_json::Map<String, Value>,
        limits: &CallerLimits,
    ) -> Caller {
        if let Some(Value::String(scope)) = claims.get("scope") {
            add_bounded(&mut self.scopes, scope.split_whitespace(), limits);
        }
        for (name, set) in [("scp", &mut self.scopes), ("groups", &mut self.groups)] {
            match claims.get(name) {
                Some(Value::String(one)) => add_bounded(set, one.split_whitespace(), limits),
                Some(Value::Array(many)) => {
                    add_bounded(set, many.iter().filter_map(Value::as_str), limits)
                }
                _ => {}
            }
        }
        let scalar = |value: &Value| scalar(value).filter(|text| text.len() <= limits.claim_bytes);
        for (name, value) in claims {
            if self.claims.len() >= limits.claims {
                break;
            }
            if REGISTERED.contains(&name.as_str()) || name.len() > limits.claim_bytes {
                continue;
            }
            let values: Vec<String> = match value {
                Value::Array(items) => items
                    .iter()
                    .filter_map(scalar)
                    .take(limits.claim_values)
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
    Some(text)
}

/// Adds `names` to `set`, up to `limits.names`, each within
/// `limits.claim_bytes`.
fn add_bounded<S: Into<String>>(
    set: &mut BTreeSet<String>,
    names: impl IntoIterator<Item = S>,
    limits: &CallerLimits,
) {
    for name in names {
        if set.len() >= limits.names {
            break;
        }
        let name = name.into();
        if !name.is_empty() && name.len() <= limits.claim_bytes {
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
        let caller = Caller::new("jwt:https://idp#alice", Source::Jwt)
            .with_jwt_claims(&claims, &CallerLimits::default());
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
        let limits = CallerLimits::default();
        claims.insert(
            "long".into(),
            Value::String("x".repeat(limits.claim_bytes + 1)),
        );
        let caller = Caller::new("p", Source::Jwt).with_jwt_claims(&claims, &limits);
        assert_eq!(caller.scopes.len(), limits.names);
        assert_eq!(caller.claims.len(), limits.claims);
        assert!(
            caller
                .claims
                .values()
                .all(|v| v.len() == limits.claim_values)
        );
        assert!(!caller.claims.contains_key("long"));
    }

    #[test]
    fn lower_limits_keep_less() {
        let Value::Object(claims) = json!({
            "scope": "a b c", "groups": ["g1", "g2", "g3"],
            "tenant": "acme", "teams": ["t1", "t2", "t3"], "zone": "eu-west",
            "note": "four", "role": "longer-than-five",
        }) else {
            unreachable!()
        };
        let limits = CallerLimits {
            names: 2,
            claims: 2,
            claim_values: 2,
            claim_bytes: 5,
        };
        let caller = Caller::new("p", Source::Jwt).with_jwt_claims(&claims, &limits);
        assert_eq!(caller.scopes.len(), 2);
        assert_eq!(caller.groups.len(), 2);
        assert_eq!(caller.claims.len(), 2, "{:?}", caller.claims);
        assert!(caller.claims.values().all(|v| v.len() <= 2));
        assert!(!caller.claims.contains_key("role"), "{:?}", caller.claims);
        let all = Caller::new("p", Source::Jwt).with_jwt_claims(&claims, &CallerLimits::default());
        assert_eq!(all.scopes.len(), 3);
        assert_eq!(all.claims["teams"].len(), 3);
        assert!(all.claims.contains_key("role"));
    }
}
