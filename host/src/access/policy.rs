//! Where rules are written, and what they decide for one caller and one
//! item.
//!
//! A component's manifest writes [`ComponentRules`]: `[access] allow` for
//! all it serves, and `allow` in `[tools.NAME]`, `[prompts.NAME]` and
//! `[resources."URI or URI template"]` for one item (an item's rule
//! replaces the component's). The server's access policy
//! (`--access-policy`, [`ServerRules`]) adds a floor every caller must also
//! pass (`[require]`), rules for the items no manifest speaks of
//! (`[default]`), and who may see in listings what it may not use
//! (`[list]`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Context as _;
use serde::Deserialize;

use super::caller::{Caller, Source};
use super::rule::Rule;

/// What kind of item a rule is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A tool.
    Tool,
    /// A prompt.
    Prompt,
    /// A resource or a resource template.
    Resource,
}

impl Kind {
    /// The word for it, in messages and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }
}

/// The rules a component's manifest writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentRules {
    /// `[access] allow`: for everything the component serves.
    pub component: Option<Rule>,
    /// `[tools.NAME] allow`, by tool name.
    pub tools: BTreeMap<String, Rule>,
    /// `[prompts.NAME] allow`, by prompt name.
    pub prompts: BTreeMap<String, Rule>,
    /// `[resources."URI"] allow`, by resource URI or URI template.
    pub resources: BTreeMap<String, Rule>,
}

impl ComponentRules {
    /// Whether the manifest writes no rule.
    pub fn is_empty(&self) -> bool {
        self.component.is_none()
            && self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resources.is_empty()
    }

    /// Whether some rule applies to items of `kind`.
    pub fn covers(&self, kind: Kind) -> bool {
        self.component.is_some() || !self.items(kind).is_empty()
    }

    fn items(&self, kind: Kind) -> &BTreeMap<String, Rule> {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::Resource => &self.resources,
        }
    }

    /// The rule of the item of `kind` keyed `key` (its name, or its URI or
    /// URI template): its own, else the component's.
    pub fn rule(&self, kind: Kind, key: &str) -> Option<&Rule> {
        self.items(kind).get(key).or(self.component.as_ref())
    }

    /// Refuses a rule naming an item the component does not serve: `served`
    /// says whether it serves the item of that kind and key. The error names
    /// the manifest's key.
    pub fn check_served(&self, served: impl Fn(Kind, &str) -> bool) -> Result<(), String> {
        for (kind, table) in [
            (Kind::Tool, "tools"),
            (Kind::Prompt, "prompts"),
            (Kind::Resource, "resources"),
        ] {
            if let Some(key) = self.items(kind).keys().find(|key| !served(kind, key)) {
                return Err(format!(
                    "[{table}.{key:?}] allow: the component serves no {} {key:?}",
                    kind.name()
                ));
            }
        }
        Ok(())
    }
}

/// What a caller may do with one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Use it (call, get, read, complete).
    Use,
    /// See it in listings, but not use it. `step_up`: the scopes a token
    /// would need to use it, when more scopes would admit the caller.
    See {
        /// The scopes to ask for, if more scopes would do.
        step_up: Option<BTreeSet<String>>,
    },
    /// Neither: to this caller the item does not exist.
    Hidden,
}

/// The server's access policy file, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    require: Option<Allow>,
    #[serde(default)]
    default: Defaults,
    list: Option<Allow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Allow {
    allow: Rule,
}

/// `[default]`: the rules of items whose manifest says nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    tools: Option<Rule>,
    prompts: Option<Rule>,
    resources: Option<Rule>,
}

/// The server's access policy (`--access-policy`), and the decisions it
/// makes with an item's rule.
///
/// ```toml
/// [require]                 # every caller must ALSO pass this, for everything
/// allow = ["scope:mcp:tools"]
///
/// [default]                 # items whose manifest writes no rule
/// tools = ["authenticated"]
/// prompts = ["anyone"]
/// resources = ["group:readers"]
///
/// [list]                    # who may see in listings what it may not use
/// allow = ["anyone"]
/// ```
#[derive(Debug, Default)]
pub struct ServerRules {
    require: Option<Rule>,
    defaults: Defaults,
    list: Option<Rule>,
}

impl ServerRules {
    /// Reads the policy file at `path`; the error names the file, the line
    /// and the key.
    pub fn load(path: &Path) -> anyhow::Result<ServerRules> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read access policy {}", path.display()))?;
        ServerRules::parse(&text, path).map_err(anyhow::Error::msg)
    }

    /// Parses policy text read from `file`.
    pub fn parse(text: &str, file: &Path) -> Result<ServerRules, String> {
        let parsed: PolicyFile =
            toml::from_str(text).map_err(|err| crate::toml_error::toml_error(&err, text, file))?;
        Ok(ServerRules {
            require: parsed.require.map(|a| a.allow),
            defaults: parsed.default,
            list: parsed.list.map(|a| a.allow),
        })
    }

    /// Whether the policy writes no rule.
    pub fn is_empty(&self) -> bool {
        self.require.is_none()
            && self.default_rule(Kind::Tool).is_none()
            && self.default_rule(Kind::Prompt).is_none()
            && self.default_rule(Kind::Resource).is_none()
            && self.list.is_none()
    }

    fn default_rule(&self, kind: Kind) -> Option<&Rule> {
        match kind {
            Kind::Tool => self.defaults.tools.as_ref(),
            Kind::Prompt => self.defaults.prompts.as_ref(),
            Kind::Resource => self.defaults.resources.as_ref(),
        }
    }

    /// Whether what a caller may use of `kind` can depend on who it is,
    /// when `manifests` says whether some manifest has a rule for that kind.
    pub fn covers(&self, kind: Kind, manifests: bool) -> bool {
        manifests || self.require.is_some() || self.default_rule(kind).is_some()
    }

    /// What `caller` may do with an item of `kind` whose manifest rule (its
    /// own or its component's) is `rule`. On stdio, everything.
    pub fn decide(&self, kind: Kind, rule: Option<&Rule>, caller: &Caller) -> Decision {
        if caller.source == Source::Stdio {
            return Decision::Use;
        }
        let effective = rule.or(self.default_rule(kind));
        let failed: Vec<&Rule> = [self.require.as_ref(), effective]
            .into_iter()
            .flatten()
            .filter(|rule| !rule.admits(caller))
            .collect();
        if failed.is_empty() {
            return Decision::Use;
        }
        if !self.list.as_ref().is_some_and(|list| list.admits(caller)) {
            return Decision::Hidden;
        }
        let step_up = failed
            .iter()
            .map(|rule| rule.step_up(caller))
            .try_fold(BTreeSet::new(), |mut all, scopes| {
                all.extend(scopes?);
                Some(all)
            })
            .filter(|scopes| !scopes.is_empty());
        Decision::See { step_up }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Result<ServerRules, String> {
        ServerRules::parse(text, Path::new("access.toml"))
    }

    fn caller(scopes: &[&str]) -> Caller {
        Caller::new("token:alice", Source::Token).with_scopes(scopes.iter().copied())
    }

    #[test]
    fn no_rule_lets_everyone_use_everything() {
        let rules = ServerRules::default();
        assert!(rules.is_empty());
        assert_eq!(
            rules.decide(Kind::Tool, None, &Caller::anonymous()),
            Decision::Use
        );
        assert!(!rules.covers(Kind::Tool, false));
    }

    #[test]
    fn require_is_a_floor_item_rules_cannot_lower() {
        let rules = policy(
            "[require]\nallow = [\"scope:mcp:tools\"]\n[list]\nallow = [\"authenticated\"]\n",
        )
        .unwrap();
        let open = Rule::any_of(&["anyone"]).unwrap();
        assert_eq!(
            rules.decide(Kind::Tool, Some(&open), &caller(&[])),
            Decision::See {
                step_up: Some(BTreeSet::from(["mcp:tools".to_owned()]))
            }
        );
        assert_eq!(
            rules.decide(Kind::Tool, Some(&open), &caller(&["mcp:tools"])),
            Decision::Use
        );
        let deploy = Rule::any_of(&["scope:deploy"]).unwrap();
        assert_eq!(
            rules.decide(Kind::Tool, Some(&deploy), &caller(&[])),
            Decision::See {
                step_up: Some(BTreeSet::from([
                    "deploy".to_owned(),
                    "mcp:tools".to_owned()
                ]))
            },
            "both rules' scopes, asked at once"
        );
        assert_eq!(
            rules.decide(Kind::Tool, Some(&open), &Caller::anonymous()),
            Decision::Hidden
        );
        assert_eq!(
            rules.decide(Kind::Tool, Some(&deploy), &Caller::stdio()),
            Decision::Use
        );
    }

    #[test]
    fn defaults_apply_where_manifests_say_nothing() {
        let rules =
            policy("[default]\ntools = [\"authenticated\"]\n[list]\nallow = [\"anyone\"]\n")
                .unwrap();
        assert_eq!(rules.decide(Kind::Tool, None, &caller(&[])), Decision::Use);
        assert_eq!(
            rules.decide(Kind::Tool, None, &Caller::anonymous()),
            Decision::See { step_up: None }
        );
        assert_eq!(
            rules.decide(Kind::Prompt, None, &Caller::anonymous()),
            Decision::Use
        );
        assert!(rules.covers(Kind::Tool, false) && !rules.covers(Kind::Prompt, false));
        let own = Rule::any_of(&["anyone"]).unwrap();
        assert_eq!(
            rules.decide(Kind::Tool, Some(&own), &Caller::anonymous()),
            Decision::Use
        );
    }

    #[test]
    fn bad_policies_are_refused_naming_file_line_and_key() {
        for (text, line) in [
            ("[require]\nallow = [\"role:x\"]\n", 2),
            ("[default]\ntool = [\"anyone\"]\n", 2),
            ("[lists]\nallow = [\"anyone\"]\n", 1),
            ("[list]\nallow = []\n", 2),
        ] {
            let error = policy(text).unwrap_err();
            assert!(
                error.starts_with(&format!("access.toml:{line}: ")),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn rules_of_items_not_served_are_refused() {
        let mut rules = ComponentRules::default();
        rules
            .tools
            .insert("deploy".into(), Rule::any_of(&["anyone"]).unwrap());
        assert!(rules.check_served(|_, key| key == "deploy").is_ok());
        let error = rules.check_served(|_, _| false).unwrap_err();
        assert!(
            error.contains("[tools.\"deploy\"]") && error.contains("no tool"),
            "{error}"
        );
    }
}
