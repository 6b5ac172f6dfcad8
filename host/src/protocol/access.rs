//! Access rules in the 2026-07-28 pipeline: each request's item is checked
//! once, before its method runs, against what the registry holds; listings
//! show a caller only what it may use (or see, by the policy's `[list]`).
//!
//! An item the caller may not see does not exist for it: its refusal is
//! the unknown item's error. An item it may see but not use is refused with
//! [`ACCESS_DENIED`](jsonrpc::codes::ACCESS_DENIED) and HTTP 403; when a
//! token with more scopes would be admitted, the 403 carries the
//! `insufficient_scope` challenge naming them, so that an OAuth client can
//! ask its authorization server for them and try again. Every refusal goes
//! through [`refused`].

use std::hash::{DefaultHasher, Hasher};

use serde_json::{Map, Value, json};

use super::catalog::{Catalog, Page, Pages};
use super::jsonrpc::{RpcError, codes};
use super::method::Method;
use super::outcome::Outcome;
use crate::access::{Caller, Decision, Kind, Rule, ServerRules};
use crate::audit;
use crate::metrics;

/// The server's access settings: its policy, and where its OAuth
/// protected-resource metadata is (named in step-up challenges).
#[derive(Debug, Default)]
pub struct AccessSettings {
    /// The server's access policy (`--access-policy`).
    pub rules: ServerRules,
    /// The protected-resource metadata URL, when `--oauth-resource` is set.
    pub resource_metadata: Option<String>,
}

/// What one caller sees of one list (of tools, prompts, or resources and
/// templates), by digest: enough to tell whether a change of the list
/// changed what that caller sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListView {
    /// A digest of every item of the list.
    pub whole: u64,
    /// A digest of the items the caller may see.
    pub visible: u64,
    /// Whether the caller may see any item of it.
    pub any: bool,
}

/// One caller's view of one catalog.
#[derive(Clone, Copy)]
pub(super) struct Gate<'a> {
    pub(super) settings: &'a AccessSettings,
    pub(super) catalog: &'a Catalog,
    pub(super) caller: &'a Caller,
}

impl<'a> Gate<'a> {
    fn decide(&self, kind: Kind, rule: Option<&Rule>) -> Decision {
        self.settings.rules.decide(kind, rule, self.caller)
    }

    /// Checks the item a request of `method` names, if it names one the
    /// registry holds (an unknown one is left to the method to refuse).
    pub(super) fn check(
        &self,
        method: Method,
        params: &Map<String, Value>,
    ) -> Result<(), RpcError> {
        let text = |name: &str| params.get(name).and_then(Value::as_str);
        let registry = &self.catalog.registry;
        match method {
            Method::ToolsCall => match text("name") {
                Some(name) => self.tool(name, || unknown_tool(name)),
                None => Ok(()),
            },
            Method::PromptsGet => match text("name").and_then(|name| registry.find_prompt(name)) {
                Some(prompt) => self.item(
                    Kind::Prompt,
                    prompt.key(),
                    prompt.access_rule(Kind::Prompt),
                    || unknown_prompt(prompt.key()),
                ),
                None => Ok(()),
            },
            Method::ResourcesRead => match text("uri") {
                Some(uri) => match self.read(uri) {
                    Some((key, decision)) => {
                        self.decided(Kind::Resource, key, decision, || resource_not_found(uri))
                    }
                    None => Ok(()),
                },
                None => Ok(()),
            },
            Method::SkillsGet => match text("uri") {
                Some(uri) => self.skill(uri, || unknown_skill(uri)),
                None => Ok(()),
            },
            Method::ResourcesDirectoryRead => match text("uri") {
                Some(uri) => self.skill(uri, || not_a_directory(uri)),
                None => Ok(()),
            },
            Method::CompletionComplete => {
                let reference = params.get("ref");
                let field =
                    |name: &str| reference.and_then(|r| r.get(name)).and_then(Value::as_str);
                match (field("type"), field("name"), field("uri")) {
                    (Some("ref/prompt"), Some(name), _) => match registry.find_prompt(name) {
                        Some(prompt) => {
                            self.item(Kind::Prompt, name, prompt.access_rule(Kind::Prompt), || {
                                unknown_prompt(name)
                            })
                        }
                        None => Ok(()),
                    },
                    (Some("ref/resource"), _, Some(uri)) => {
                        let template = registry.templates().iter().find(|t| &**t.key() == uri);
                        let unseen = || unknown_template(uri);
                        match template {
                            Some(template) => self.item(
                                Kind::Resource,
                                uri,
                                template.access_rule(Kind::Resource),
                                unseen,
                            ),
                            None => match registry.resolve_resource(uri) {
                                Some((served, _)) => self.item(
                                    Kind::Resource,
                                    uri,
                                    served.access_rule(Kind::Resource),
                                    unseen,
                                ),
                                None => Ok(()),
                            },
                        }
                    }
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Checks that the caller may use tool `name`; `unseen`: the error of
    /// a tool that does not exist, for the caller that may not see it.
    pub(super) fn tool(
        &self,
        name: &str,
        unseen: impl FnOnce() -> RpcError,
    ) -> Result<(), RpcError> {
        match self.catalog.registry.find(name) {
            Some(tool) => self.item(Kind::Tool, name, tool.access_rule(Kind::Tool), unseen),
            None => Ok(()),
        }
    }

    /// What decides a `resources/read` of `uri` for the caller: the key
    /// of the skill it is a file of, else the URI itself when a component
    /// reads it (by its listing or a template), with the decision of that
    /// item's rule. `None` when nothing serves the URI.
    fn read<'u>(&self, uri: &'u str) -> Option<(&'u str, Decision)>
    where
        'a: 'u,
    {
        let registry = &self.catalog.registry;
        if registry.find_skill_file(uri).is_some() {
            let (skill, _) = registry.skill_place(uri)?;
            return Some((
                &**skill.key(),
                self.decide(Kind::Resource, skill.access_rule(Kind::Resource)),
            ));
        }
        let (served, _) = registry.resolve_resource(uri)?;
        Some((
            uri,
            self.decide(Kind::Resource, served.access_rule(Kind::Resource)),
        ))
    }

    /// Whether the caller may read the resource at `uri` now: what
    /// `resources/read` decides, without its refusal (no log line, no
    /// count). A URI nothing serves: no.
    pub(super) fn may_read(&self, uri: &str) -> bool {
        self.read(uri)
            .is_some_and(|(_, decision)| decision == Decision::Use)
    }

    /// Checks that the caller may use the skill `uri` is a place in (its
    /// `SKILL.md`, a file or a directory of it), by the skill's rule;
    /// `unseen`: the error of a place that does not exist.
    fn skill(&self, uri: &str, unseen: impl FnOnce() -> RpcError) -> Result<(), RpcError> {
        match self.catalog.registry.skill_place(uri) {
            Some((skill, _)) => self.item(
                Kind::Resource,
                skill.key(),
                skill.access_rule(Kind::Resource),
                unseen,
            ),
            None => Ok(()),
        }
    }

    /// The `cacheScope` of what a caller gets of `pages` (items of
    /// `kind`): `private` when it may depend on who asks.
    pub(super) fn scope(&self, pages: &Pages, kind: Kind) -> &'static str {
        if self.settings.rules.covers(kind, pages.has_rules()) {
            "private"
        } else {
            "public"
        }
    }

    /// Whether the caller may use tool `name` (an unknown one: no).
    pub(super) fn may_use_tool(&self, name: &str) -> bool {
        self.catalog.registry.find(name).is_some_and(|tool| {
            self.decide(Kind::Tool, tool.access_rule(Kind::Tool)) == Decision::Use
        })
    }

    fn item(
        &self,
        kind: Kind,
        key: &str,
        rule: Option<&Rule>,
        unseen: impl FnOnce() -> RpcError,
    ) -> Result<(), RpcError> {
        self.decided(kind, key, self.decide(kind, rule), unseen)
    }

    /// Admits the caller to the item of `kind` keyed `key` if `decision`
    /// lets it use the item; otherwise its refusal (see [`refused`]).
    fn decided(
        &self,
        kind: Kind,
        key: &str,
        decision: Decision,
        unseen: impl FnOnce() -> RpcError,
    ) -> Result<(), RpcError> {
        match decision {
            Decision::Use => Ok(()),
            decision => Err(refused(
                self.settings,
                self.caller,
                kind,
                key,
                decision,
                unseen,
            )),
        }
    }

    /// What the caller sees now of `lists` (items of a kind each), taken
    /// as one list.
    pub(super) fn view(&self, lists: &[(&Pages, Kind)]) -> ListView {
        let (mut whole, mut visible) = (DefaultHasher::new(), DefaultHasher::new());
        let mut any = false;
        for &(pages, kind) in lists {
            pages.digest(&mut whole, |_| true);
            any |= pages.digest(&mut visible, |i| {
                self.decide(kind, pages.rule(i)) != Decision::Hidden
            });
        }
        ListView {
            whole: whole.finish(),
            visible: visible.finish(),
            any,
        }
    }

    /// The page of `pages` (items of `kind`) the cursor names, of the items
    /// the caller may see, and its `cacheScope`: `private` when what the
    /// caller sees of this kind may depend on who it is.
    pub(super) fn list<'p>(
        &self,
        pages: &'p Pages,
        kind: Kind,
        cursor: Option<&Value>,
    ) -> Result<(Page<'p>, &'static str), RpcError> {
        if self.scope(pages, kind) == "public" {
            return Ok((pages.page(cursor)?, "public"));
        }
        let page = pages.visible_page(cursor, |i| {
            self.decide(kind, pages.rule(i)) != Decision::Hidden
        })?;
        Ok((page, "private"))
    }
}

/// The error of a request refused by an access rule, and its log line and
/// count: `caller` may not use the item of `kind` keyed `key`, as
/// `decision` says. An item it may not see gets `unseen()`, the error of an
/// item that does not exist; one it may see gets -31403 and HTTP 403, with
/// the `insufficient_scope` challenge when more scopes would admit it.
pub(crate) fn refused(
    settings: &AccessSettings,
    caller: &Caller,
    kind: Kind,
    key: &str,
    decision: Decision,
    unseen: impl FnOnce() -> RpcError,
) -> RpcError {
    metrics::access_refused(kind.name());
    let reason = match &decision {
        Decision::Use => unreachable!("a caller that may use an item is not refused"),
        Decision::Hidden => "may not see it",
        Decision::See { step_up: None } => "may not use it",
        Decision::See { step_up: Some(_) } => "lacks scopes",
    };
    audit::refused(&caller.principal, kind.name(), Some(key), reason);
    let step_up = match decision {
        Decision::Use => unreachable!("checked above"),
        Decision::Hidden => {
            tracing::info!(principal = %caller.principal, kind = kind.name(), item = %key, reason, "access refused");
            // Told apart from an unknown item only here, for the operator.
            return unseen().with_outcome(Outcome::Denied);
        }
        Decision::See { step_up } => step_up,
    };
    let what = kind.name();
    let Some(scopes) = step_up else {
        tracing::info!(principal = %caller.principal, kind = what, item = %key, reason, "access refused");
        return RpcError::new(
            codes::ACCESS_DENIED,
            format!("Forbidden: this caller may not use {what} '{key}'"),
        )
        .with_status(403)
        .with_data(json!({ "kind": what, "name": key }));
    };
    let missing: Vec<&str> = scopes
        .iter()
        .filter(|scope| !caller.scopes.contains(*scope))
        .map(String::as_str)
        .collect();
    let needed = scopes
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    tracing::info!(principal = %caller.principal, kind = what, item = %key, reason, missing = %missing.join(" "), "access refused");
    let mut challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\"");
    if let Some(url) = &settings.resource_metadata {
        challenge.push_str(&format!(", resource_metadata=\"{url}\""));
    }
    RpcError::new(
        codes::ACCESS_DENIED,
        format!(
            "Forbidden: {what} '{key}' needs the scope {}, which this token lacks",
            missing.join(", ")
        ),
    )
    .with_status(403)
    .with_data(
        json!({ "kind": what, "name": key, "requiredScopes": scopes, "missingScopes": missing }),
    )
    .with_challenge(challenge)
}

/// The error of `tools/call` naming a tool that does not exist.
pub(super) fn unknown_tool(name: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown tool: {name}")).with_outcome(Outcome::Unknown)
}

/// The error of `prompts/get` (and of completing one) naming a prompt
/// that does not exist.
pub(super) fn unknown_prompt(name: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown prompt: {name}")).with_outcome(Outcome::Unknown)
}

/// The error of completing a resource template that does not exist.
pub(super) fn unknown_template(uri: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown resource template: {uri}"))
        .with_outcome(Outcome::Unknown)
}

/// The error of `resources/read` naming a resource that does not exist:
/// -32602 with `data.uri` (SEP-2164).
pub(super) fn resource_not_found(uri: &str) -> RpcError {
    RpcError::invalid_params(format!("Resource not found: {uri}"))
        .with_data(json!({ "uri": uri }))
        .with_outcome(Outcome::Unknown)
}

/// The error of `skills/get` naming no skill served: -32602.
pub(super) fn unknown_skill(uri: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown skill: {uri}"))
        .with_data(json!({ "uri": uri }))
        .with_outcome(Outcome::Unknown)
}

/// The error of `resources/directory/read` naming no directory served:
/// -32602.
pub(super) fn not_a_directory(uri: &str) -> RpcError {
    RpcError::invalid_params(format!("Not a directory: {uri}"))
        .with_data(json!({ "uri": uri }))
        .with_outcome(Outcome::Unknown)
}
