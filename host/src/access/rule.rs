//! Rules: who is admitted, written as strings in TOML.
//!
//! ```toml
//! allow = ["scope:deploy:write", ["group:ops", "scope:mcp:tools"]]
//! ```
//!
//! A rule is a non-empty list of alternatives, any of which admits a caller
//! (OR); an alternative is a condition, or a non-empty list of conditions
//! that must all hold (AND). A condition is one of `scope:<s>`,
//! `group:<g>`, `principal:<full principal>`, `claim:<name>=<value>`,
//! `authenticated` (anyone but `anonymous`) and `anyone`. Anything else is
//! refused when the rule is read.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;

use super::caller::Caller;

/// One condition on a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The caller has this scope.
    Scope(String),
    /// The caller is in this group.
    Group(String),
    /// The caller is this principal.
    Principal(String),
    /// The caller's claim `name` is (or, for an array, contains) `value`.
    Claim {
        /// The claim's name.
        name: String,
        /// The text it must match.
        value: String,
    },
    /// Anyone but the anonymous caller.
    Authenticated,
    /// Anyone.
    Anyone,
}

impl Condition {
    /// Parses one condition string; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Condition, String> {
        let named = |kind: &str, value: &str| -> Result<String, String> {
            if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "`{text}`: {kind}: needs a name without spaces or control characters"
                ));
            }
            Ok(value.to_owned())
        };
        match text.split_once(':') {
            Some(("scope", scope)) => Ok(Condition::Scope(named("scope", scope)?)),
            Some(("group", group)) => Ok(Condition::Group(named("group", group)?)),
            Some(("principal", principal)) => {
                Ok(Condition::Principal(named("principal", principal)?))
            }
            Some(("claim", claim)) => match claim.split_once('=') {
                Some((name, value)) if !name.is_empty() => Ok(Condition::Claim {
                    name: named("claim", name)?,
                    value: value.to_owned(),
                }),
                _ => Err(format!("`{text}`: write claim:<name>=<value>")),
            },
            None if text == "authenticated" => Ok(Condition::Authenticated),
            None if text == "anyone" => Ok(Condition::Anyone),
            _ => Err(format!(
                "`{text}` is not a condition: use scope:<s>, group:<g>, principal:<p>, \
                 claim:<name>=<value>, authenticated or anyone"
            )),
        }
    }

    /// Whether `caller` meets it.
    pub fn holds(&self, caller: &Caller) -> bool {
        match self {
            Condition::Scope(scope) => caller.scopes.contains(scope),
            Condition::Group(group) => caller.groups.contains(group),
            Condition::Principal(principal) => caller.principal == *principal,
            Condition::Claim { name, value } => caller
                .claims
                .get(name)
                .is_some_and(|values| values.contains(value)),
            Condition::Authenticated => caller.is_authenticated(),
            Condition::Anyone => true,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Scope(scope) => write!(f, "scope:{scope}"),
            Condition::Group(group) => write!(f, "group:{group}"),
            Condition::Principal(principal) => write!(f, "principal:{principal}"),
            Condition::Claim { name, value } => write!(f, "claim:{name}={value}"),
            Condition::Authenticated => f.write_str("authenticated"),
            Condition::Anyone => f.write_str("anyone"),
        }
    }
}

/// Alternatives (OR) of conditions that must all hold (AND).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Vec<toml::Value>")]
pub struct Rule(Vec<Vec<Condition>>);

impl TryFrom<Vec<toml::Value>> for Rule {
    type Error = String;

    fn try_from(alternatives: Vec<toml::Value>) -> Result<Rule, String> {
        if alternatives.is_empty() {
            return Err("an empty rule admits nobody: list at least one alternative".to_owned());
        }
        let condition = |value: &toml::Value| match value {
            toml::Value::String(text) => Condition::parse(text),
            other => Err(format!(
                "expected a condition string, found a {}",
                other.type_str()
            )),
        };
        let alternatives = alternatives
            .iter()
            .map(|alternative| match alternative {
                toml::Value::Array(all) if all.is_empty() => {
                    Err("an empty list of conditions: give at least one".to_owned())
                }
                toml::Value::Array(all) => all.iter().map(condition).collect(),
                one => condition(one).map(|c| vec![c]),
            })
            .collect::<Result<_, _>>()?;
        Ok(Rule(alternatives))
    }
}

impl Rule {
    /// Parses a rule from condition strings, one alternative each (tests
    /// and programmatic rules).
    pub fn any_of(conditions: &[&str]) -> Result<Rule, String> {
        Rule::try_from(
            conditions
                .iter()
                .map(|c| toml::Value::String((*c).to_owned()))
                .collect::<Vec<_>>(),
        )
    }

    /// Whether one alternative admits `caller`.
    pub fn admits(&self, caller: &Caller) -> bool {
        self.0
            .iter()
            .any(|all| all.iter().all(|condition| condition.holds(caller)))
    }

    /// The scopes of the alternative that would admit `caller` with the
    /// fewest scopes added (every other condition of it already holds):
    /// all the scopes it needs, held or not. `None` when more scopes would
    /// admit it by no alternative.
    pub fn step_up(&self, caller: &Caller) -> Option<BTreeSet<String>> {
        self.0
            .iter()
            .filter(|all| {
                all.iter()
                    .all(|c| matches!(c, Condition::Scope(_)) || c.holds(caller))
            })
            .map(|all| {
                let scopes: BTreeSet<String> = all
                    .iter()
                    .filter_map(|c| match c {
                        Condition::Scope(scope) => Some(scope.clone()),
                        _ => None,
                    })
                    .collect();
                let missing = scopes
                    .iter()
                    .filter(|s| !caller.scopes.contains(*s))
                    .count();
                (missing, scopes)
            })
            .min_by_key(|(missing, _)| *missing)
            .map(|(_, scopes)| scopes)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, all) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" or ")?;
            }
            for (j, condition) in all.iter().enumerate() {
                if j > 0 {
                    f.write_str(" and ")?;
                }
                write!(f, "{condition}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::caller::Source;
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        allow: Rule,
    }

    fn rule(text: &str) -> Result<Rule, String> {
        toml::from_str::<Doc>(&format!("allow = {text}"))
            .map(|doc| doc.allow)
            .map_err(|e| e.message().to_owned())
    }

    fn alice() -> Caller {
        Caller::new("token:alice", Source::Token)
            .with_scopes(["mcp:tools"])
            .with_groups(["ops"])
    }

    #[test]
    fn alternatives_are_or_and_lists_are_and() {
        let r = rule(r#"["scope:deploy:write", ["group:ops", "scope:mcp:tools"]]"#).unwrap();
        assert!(r.admits(&alice()));
        let no_group = Caller::new("token:bob", Source::Token).with_scopes(["mcp:tools"]);
        assert!(!r.admits(&no_group));
        assert!(r.admits(&no_group.clone().with_scopes(["deploy:write"])));
        assert_eq!(
            r.to_string(),
            "scope:deploy:write or group:ops and scope:mcp:tools"
        );
    }

    #[test]
    fn every_condition_kind_is_checked() {
        let mut caller = alice();
        caller.claims.insert("tenant".into(), vec!["acme".into()]);
        for (condition, expected) in [
            ("scope:mcp:tools", true),
            ("scope:other", false),
            ("group:ops", true),
            ("group:dev", false),
            ("principal:token:alice", true),
            ("principal:token:bob", false),
            ("claim:tenant=acme", true),
            ("claim:tenant=other", false),
            ("claim:missing=acme", false),
            ("authenticated", true),
            ("anyone", true),
        ] {
            assert_eq!(
                Condition::parse(condition).unwrap().holds(&caller),
                expected,
                "{condition}"
            );
        }
        assert!(!Condition::Authenticated.holds(&Caller::anonymous()));
        assert!(Condition::Anyone.holds(&Caller::anonymous()));
    }

    #[test]
    fn malformed_rules_are_refused() {
        for bad in [
            "[]",
            "[[]]",
            r#"["role:admin"]"#,
            r#"["scope:"]"#,
            r#"["scope:a b"]"#,
            r#"["claim:tenant"]"#,
            r#"["claim:=x"]"#,
            r#"["Anyone"]"#,
            "[1]",
            r#"[["scope:a", 2]]"#,
            r#""scope:a""#,
        ] {
            assert!(rule(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn step_up_names_the_scopes_of_the_nearest_alternative() {
        let r = rule(r#"[["group:admins", "scope:a"], ["scope:mcp:tools", "scope:deploy:write"]]"#)
            .unwrap();
        let scopes = r.step_up(&alice()).unwrap();
        assert_eq!(
            scopes.into_iter().collect::<Vec<_>>(),
            ["deploy:write", "mcp:tools"]
        );
        let only_groups = rule(r#"["group:admins"]"#).unwrap();
        assert_eq!(only_groups.step_up(&alice()), None);
    }
}
