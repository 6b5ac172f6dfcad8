//! Method routing for the 2026-07-28 stateless wire, after the envelope
//! checks. Transports hand every decoded request to [`Server::handle`] and
//! write back what it returns.
//!
//! The server answers from a [`Catalog`] (the registry and its encoded
//! lists), swapped whole when the registry is replaced; each request keeps
//! the catalog it started with until it ends.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use super::access::{AccessSettings, Gate, ListView};
use super::answer::{Answer, Reply};
use super::apps;
use super::catalog::{self, Catalog, ListResult, Pages};
use super::completion;
use super::context::{Notifier, ProtocolSettings, RequestContext, Services};
use super::envelope::{self, PROTOCOL_VERSION, SUPPORTED_VERSIONS};
use super::jsonrpc::{self, Request, RpcError};
use super::method::{self, Method};
use super::mrtr::run_round;
use super::prompts::PromptGet;
use super::resources::ResourceRead;
use super::skills;
use super::subscriptions::{self, Audience, ServerChange, Subscriptions};
use super::tasks;
use super::tools::ToolCall;
use crate::access::{Caller, Kind};
use crate::audit;
use crate::metrics::{self, ErrorType};
use crate::quotas::{Quotas, Refused};
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::sealing::StateSealer;
use crate::tasks::runner::{Failure, RoundEnd, TaskRounds};
use crate::tasks::{TaskRecord, Tasks};
use crate::telemetry;

/// The MCP server: everything needed to answer a request.
pub struct Server {
    runtime: Arc<Runtime>,
    sealer: StateSealer,
    settings: ProtocolSettings,
    catalog: RwLock<Arc<Catalog>>,
    subscriptions: Subscriptions,
    /// Set to `true` once, when the server shuts down (ends listen streams).
    shutdown: watch::Sender<bool>,
    server_info: Box<RawValue>,
    /// Tasks (the tasks extension), when this server runs them.
    tasks: Option<Arc<Tasks>>,
    /// The rate limits requests and tool calls are admitted by.
    quotas: Arc<Quotas>,
    /// Who may use what.
    access: AccessSettings,
    /// Turns true once the first load of the components is done.
    loaded: watch::Receiver<bool>,
    /// How long a request that needs the components waits for that load.
    load_wait: Duration,
}

impl Server {
    /// Builds the server over a loaded registry. Fails if something the
    /// registry lists cannot be served (the registry validates it all, so
    /// this is a bug guard).
    pub fn new(
        runtime: Arc<Runtime>,
        registry: Arc<Registry>,
        sealer: StateSealer,
        settings: ProtocolSettings,
    ) -> anyhow::Result<Self> {
        let catalog = Catalog::new(
            registry,
            settings.page_size,
            runtime.limits().max_output_bytes,
            runtime.limits().max_json_depth,
        )?;
        let server_info = RawValue::from_string(
            json!({ "name": "airlock", "version": env!("CARGO_PKG_VERSION") }).to_string(),
        )?;
        Ok(Self {
            runtime,
            sealer,
            settings,
            catalog: RwLock::new(Arc::new(catalog)),
            subscriptions: Subscriptions::default(),
            shutdown: watch::Sender::new(false),
            server_info,
            tasks: None,
            quotas: Arc::default(),
            access: AccessSettings::default(),
            loaded: watch::channel(true).1,
            load_wait: Duration::ZERO,
        })
    }

    /// The same server, answering while its components still load (until
    /// `loaded` turns true; [`Server::replace_registry`] swaps them in and
    /// announces the lists): `server/discover` and `subscriptions/listen`
    /// at once, and every request whose answer depends on the components
    /// ([`Method::needs_components`]) once they are loaded, waiting up to
    /// `wait` for them; past it, the request gets a retryable error (HTTP
    /// 503 with `Retry-After`). Nothing is answered from a registry still
    /// empty.
    pub fn loading(mut self, loaded: watch::Receiver<bool>, wait: Duration) -> Self {
        self.loaded = loaded;
        self.load_wait = wait;
        self
    }

    /// The same server, running tasks kept by `tasks` (and announcing the
    /// tasks extension). Start [`Tasks::run`] beside it, with this server
    /// as its [`TaskRounds`] and [`Server::shutting_down`] as its end.
    pub fn with_tasks(mut self, tasks: Arc<Tasks>) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// The same server, admitting requests by `quotas` (without, only the
    /// tools' own rate limits apply).
    pub fn with_quotas(mut self, quotas: Arc<Quotas>) -> Self {
        self.quotas = quotas;
        self
    }

    /// The same server, admitting callers to what it serves by `access`
    /// (without, every caller may use everything).
    pub fn with_access(mut self, access: AccessSettings) -> Self {
        self.access = access;
        self
    }

    /// Whether some access rule exists: in the server's policy or in a
    /// manifest of the registry served now.
    pub fn has_access_rules(&self) -> bool {
        let catalog = self.catalog();
        !self.access.rules.is_empty()
            || [
                &catalog.tools,
                &catalog.prompts,
                &catalog.resources,
                &catalog.templates,
                &catalog.skills,
            ]
            .iter()
            .any(|pages| pages.has_rules())
    }

    /// `caller` as the server's changes reach it: what it may hear of
    /// them, decided by the registry served when each is delivered.
    pub fn listener<'a>(&'a self, caller: &'a Caller) -> Listener<'a> {
        Listener {
            server: self,
            caller,
        }
    }

    /// The tasks this server runs, if it runs them.
    pub fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.as_ref()
    }

    /// Whether the tool (`tools/call`) or prompt (`prompts/get`) that
    /// `params` names is served now.
    pub fn serves_named(&self, method: &str, params: &serde_json::Map<String, Value>) -> bool {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return false;
        };
        let registry = self.registry();
        match method {
            "tools/call" => registry.find(name).is_some(),
            "prompts/get" => registry.find_prompt(name).is_some(),
            _ => false,
        }
    }

    /// The registry being served now.
    pub fn registry(&self) -> Arc<Registry> {
        self.catalog().registry.clone()
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Serves `registry` from now on (requests already running finish with
    /// the old one) and tells listeners which lists changed, plus `also`
    /// (changes a component reported, announced even if the lists look the
    /// same).
    pub fn replace_registry(
        &self,
        registry: Registry,
        also: &[ServerChange],
    ) -> anyhow::Result<()> {
        let new = Arc::new(Catalog::new(
            Arc::new(registry),
            self.settings.page_size,
            self.runtime.limits().max_output_bytes,
            self.runtime.limits().max_json_depth,
        )?);
        let old = std::mem::replace(
            &mut *self
                .catalog
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            new.clone(),
        );
        let registry = &new.registry;
        metrics::forget_names(|name| match name {
            metrics::Name::Tool(tool) => registry.find(tool).is_some(),
            metrics::Name::Prompt(prompt) => registry.find_prompt(prompt).is_some(),
        });
        let mut changes = Vec::new();
        if !new.tools.same_as(&old.tools) {
            changes.push(ServerChange::ToolsListChanged);
        }
        if !new.prompts.same_as(&old.prompts) {
            changes.push(ServerChange::PromptsListChanged);
        }
        if !new.resources.same_as(&old.resources) || !new.templates.same_as(&old.templates) {
            changes.push(ServerChange::ResourcesListChanged);
        }
        for also in also {
            if !changes.contains(also) {
                changes.push(also.clone());
            }
        }
        for change in changes {
            tracing::debug!(?change, "announcing");
            self.subscriptions.publish(change);
        }
        Ok(())
    }

    /// Tells listeners that the resource at `uri` changed.
    pub fn resource_updated(&self, uri: &str) {
        self.subscriptions
            .publish(ServerChange::ResourceUpdated(uri.into()));
    }

    /// Ends every `subscriptions/listen` stream (with its final result), so
    /// that the transports can finish; call it when shutting down.
    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
    }

    /// `{name, version}` of this server.
    pub fn server_info(&self) -> &RawValue {
        &self.server_info
    }

    /// The protocol's settings.
    pub fn settings(&self) -> &ProtocolSettings {
        &self.settings
    }

    /// A receiver of every change of what the server serves, from now on.
    pub fn changes(&self) -> broadcast::Receiver<ServerChange> {
        self.subscriptions.subscribe()
    }

    /// A receiver that turns `true` when the server shuts down.
    pub fn shutting_down(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    fn services(&self) -> Services<'_> {
        Services {
            runtime: &self.runtime,
            sealer: &self.sealer,
            settings: &self.settings,
            tasks: self.tasks.as_deref(),
        }
    }

    /// What this server can do, as `server/discover` and `initialize` say.
    pub fn capabilities(&self) -> Value {
        json!({
            "tools": { "listChanged": true },
            "prompts": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "completions": {},
            "logging": {},
        })
    }

    /// `ttlMs` of `server/discover`, the lists and skills: 0 until the first
    /// load is done, so that a client does not keep what a server still
    /// loading its components says of them (only discover and the server
    /// card answer before then; the lists wait for the load).
    pub fn list_ttl_ms(&self) -> u64 {
        if *self.loaded.borrow() {
            self.settings.list_ttl_ms
        } else {
            0
        }
    }

    /// [`Server::capabilities`] as `server/discover` says them: with the
    /// extensions of the 2026-07-28 wire, for what is loaded now.
    pub fn discovered_capabilities(&self) -> Value {
        let mut capabilities = self.capabilities();
        let mut extensions = serde_json::Map::new();
        if self.tasks.is_some() {
            extensions.insert(envelope::TASKS_EXTENSION.to_owned(), json!({}));
        }
        if !self.registry().skills().is_empty() {
            extensions.insert(skills::EXTENSION.to_owned(), skills::declared());
        }
        if apps::served(&self.registry()) {
            extensions.insert(apps::EXTENSION.to_owned(), apps::declared());
        }
        if !extensions.is_empty() {
            capabilities["extensions"] = Value::Object(extensions);
        }
        capabilities
    }

    /// Answers one request in the 2026-07-28 shape. Notifications produced
    /// while it runs (progress, log messages) go to `notifier`, in order,
    /// before the reply.
    pub async fn handle(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Reply {
        self.answer(request, context, notifier)
            .await
            .encode(&request.id, &self.server_info)
    }

    /// Answers one request, typed: the entry point of the 2026-07-28
    /// pipeline for anything that puts the answer on the wire itself. With
    /// traces, the request has its span.
    pub async fn answer(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Answer {
        let incoming = || telemetry::Incoming {
            method: &request.method,
            id: &request.id,
            params: &request.params,
            protocol_version: request
                .params
                .get("_meta")
                .and_then(|meta| meta.get(envelope::META_PROTOCOL_VERSION))
                .and_then(Value::as_str),
            via: match context.headers {
                Some(headers) => telemetry::Via::http(headers.all),
                None => telemetry::Via::Stdio,
            },
            session: None,
            target_served: self.serves_named(&request.method, &request.params),
        };
        let requested = audit::Requested {
            method: &request.method,
            params: &request.params,
            id: &request.id,
            principal: context.principal,
        };
        let answered = || {
            crate::logging::in_request_span(&request.id, || {
                audit::request(requested, || {
                    self.answer_untraced(request, context, notifier)
                })
            })
        };
        telemetry::serve(incoming, answered, traced_outcome).await
    }

    /// [`Server::answer`], without its span.
    async fn answer_untraced(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Answer {
        let started = metrics::started();
        // Boxed: routing holds a fresh instance's whole call state, and
        // every future that contains this one (the HTTP handler's, the
        // spawned task's) would otherwise be that large and be copied, whole,
        // each time it is moved (into a task, into a response future). One
        // allocation per request instead.
        let answer = match Box::pin(self.route(request, context, notifier)).await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::debug!(method = %request.method, code = error.code, message = %error.message, "request failed");
                Answer::Error(error)
            }
        };
        if let Some(started) = started {
            self.count(started, request, &answer);
        }
        answer
    }

    /// Counts an answered request in the metrics.
    fn count(&self, started: std::time::Instant, request: &Request, answer: &Answer) {
        let registry = self.registry();
        let operation = operation(request, answer, |name| match name {
            metrics::Name::Tool(tool) => registry.find(tool).is_some(),
            metrics::Name::Prompt(prompt) => registry.find_prompt(prompt).is_some(),
        });
        metrics::operation(started, operation);
    }

    async fn route(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Result<Answer, RpcError> {
        self.quotas.admit(context.principal).map_err(over_quota)?;
        let meta =
            envelope::check_envelope(&request.method, &request.params, context.headers.as_ref())?;
        let Some(method) = Method::parse(&request.method) else {
            return Err(unknown_method(&request.method));
        };
        if method.needs_components() {
            self.components_loaded().await?;
        }
        let catalog = self.catalog();
        let catalog = &*catalog;
        let gate = Gate {
            settings: &self.access,
            catalog,
            caller: context.caller,
        };
        gate.check(method, &request.params)?;
        match method {
            Method::ServerDiscover => Ok(self.discover()),
            Method::ToolsList => {
                self.list(request, &catalog.tools, catalog::TOOLS, Kind::Tool, gate)
            }
            Method::ToolsCall => {
                self.admit_call(request, catalog, context.principal)?;
                run_round::<ToolCall>(self.services(), request, catalog, &meta, context, notifier)
                    .await
            }
            Method::PromptsList => self.list(
                request,
                &catalog.prompts,
                catalog::PROMPTS,
                Kind::Prompt,
                gate,
            ),
            Method::PromptsGet => {
                run_round::<PromptGet>(self.services(), request, catalog, &meta, context, notifier)
                    .await
            }
            Method::ResourcesList => self.list(
                request,
                &catalog.resources,
                catalog::RESOURCES,
                Kind::Resource,
                gate,
            ),
            Method::ResourceTemplatesList => self.list(
                request,
                &catalog.templates,
                catalog::TEMPLATES,
                Kind::Resource,
                gate,
            ),
            Method::ResourcesRead => {
                let uri = request.params.get("uri").and_then(Value::as_str);
                if let Some((skill, file)) =
                    uri.and_then(|uri| catalog.registry.find_skill_file(uri))
                {
                    let scope = gate.scope(&catalog.skills, Kind::Resource);
                    return Ok(skills::read_file(
                        &file.uri,
                        file,
                        skill.max_output_bytes(),
                        self.settings.read_ttl_ms,
                        scope,
                    ));
                }
                let services = self.services();
                run_round::<ResourceRead>(services, request, catalog, &meta, context, notifier)
                    .await
            }
            Method::SkillsList => self.list(
                request,
                &catalog.skills,
                catalog::SKILLS,
                Kind::Resource,
                gate,
            ),
            Method::SkillsGet => skills::get(request, catalog, gate, self.list_ttl_ms()),
            Method::ResourcesDirectoryRead => skills::directory_read(
                request,
                catalog,
                gate,
                self.settings.page_size,
                self.list_ttl_ms(),
            ),
            Method::CompletionComplete => {
                completion::complete(&self.runtime, request, catalog).await
            }
            Method::SubscriptionsListen => {
                // Asked at each change, of the registry served then: a rule
                // a reload brings applies to a stream already open.
                let listener = self.listener(context.caller);
                let may_use_tool = |tool: &str| listener.may_use_tool(tool);
                let tasks = self.tasks.as_deref().map(|tasks| subscriptions::TaskWatch {
                    tasks,
                    principal: context.principal,
                    declared: meta.capabilities.tasks,
                    may_use_tool: &may_use_tool,
                });
                subscriptions::listen(
                    &self.subscriptions,
                    self.shutting_down(),
                    request,
                    notifier,
                    tasks,
                    &listener,
                )
                .await
            }
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
                let Some(running) = self.tasks.as_deref() else {
                    return Err(RpcError::method_not_found(&request.method));
                };
                tasks::check_request(request, &meta, context.headers.as_ref())?;
                let principal = context.principal;
                match method {
                    Method::TasksGet => tasks::get(running, request, principal, &gate).await,
                    Method::TasksUpdate => {
                        tasks::update(running, self.services(), request, principal, &gate).await
                    }
                    _ => tasks::cancel(running, request, principal, &gate).await,
                }
            }
        }
    }

    /// Waits, up to the load wait, until the first load of the components
    /// is done (at once when it is).
    async fn components_loaded(&self) -> Result<(), RpcError> {
        if *self.loaded.borrow() {
            return Ok(());
        }
        let mut loaded = self.loaded.clone();
        match tokio::time::timeout(self.load_wait, loaded.wait_for(|loaded| *loaded)).await {
            Ok(Ok(_)) => Ok(()),
            // Past the wait, or the load was abandoned (the server stops then).
            Ok(Err(_)) | Err(_) => Err(still_loading()),
        }
    }

    /// Admits a `tools/call` by its tool's rate limit, if the tool has one
    /// (an unknown tool is left to the call to refuse).
    fn admit_call(
        &self,
        request: &Request,
        catalog: &Catalog,
        principal: &str,
    ) -> Result<(), RpcError> {
        let Some(name) = request.params.get("name").and_then(Value::as_str) else {
            return Ok(());
        };
        match catalog
            .registry
            .find(name)
            .and_then(|tool| tool.rate_limit())
        {
            Some(limit) => self
                .quotas
                .admit_call(principal, name, limit)
                .map_err(over_quota),
            None => Ok(()),
        }
    }

    /// `tools/list`, `prompts/list`, `resources/list` and
    /// `resources/templates/list`: the page of `pages` (items of `kind`) the
    /// request's cursor names, of the items the caller may see (`gate`), as
    /// `{field: [...]}`; cacheable by everyone unless it depends on who
    /// asks.
    fn list(
        &self,
        request: &Request,
        pages: &Pages,
        field: &'static str,
        kind: Kind,
        gate: Gate<'_>,
    ) -> Result<Answer, RpcError> {
        let (page, scope) = gate.list(pages, kind, request.params.get("cursor"))?;
        Ok(Answer::complete(&ListResult { field, page }).cached(self.list_ttl_ms(), scope))
    }

    /// `server/discover`: the versions and capabilities of this server.
    fn discover(&self) -> Answer {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Discover<'a> {
            supported_versions: &'static [&'static str],
            capabilities: Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            instructions: Option<&'a str>,
        }
        let discover = Discover {
            supported_versions: SUPPORTED_VERSIONS,
            capabilities: self.discovered_capabilities(),
            instructions: self.settings.instructions.as_deref(),
        };
        Answer::complete(&discover).cached(self.list_ttl_ms(), "public")
    }
}

/// One caller as the server's changes reach it (see [`Server::listener`]):
/// each question is asked of the registry served when it is asked, with
/// the caller captured when it subscribed.
pub struct Listener<'a> {
    server: &'a Server,
    caller: &'a Caller,
}

impl Listener<'_> {
    /// Answers `question` with the caller's gate to the catalog served now.
    fn ask<T>(&self, question: impl FnOnce(&Gate<'_>) -> T) -> T {
        let catalog = self.server.catalog();
        question(&Gate {
            settings: &self.server.access,
            catalog: &catalog,
            caller: self.caller,
        })
    }

    /// Whether the caller may use tool `name` now (an unknown one: no).
    pub fn may_use_tool(&self, name: &str) -> bool {
        self.ask(|gate| gate.may_use_tool(name))
    }
}

impl Audience for Listener<'_> {
    fn list_view(&self, change: &ServerChange) -> Option<ListView> {
        if !self.server.has_access_rules() {
            return None;
        }
        self.ask(|gate| {
            let catalog = gate.catalog;
            let lists = match change {
                ServerChange::ToolsListChanged => vec![(&catalog.tools, Kind::Tool)],
                ServerChange::PromptsListChanged => vec![(&catalog.prompts, Kind::Prompt)],
                ServerChange::ResourcesListChanged => vec![
                    (&catalog.resources, Kind::Resource),
                    (&catalog.templates, Kind::Resource),
                ],
                ServerChange::ResourceUpdated(_) => return None,
            };
            Some(gate.view(&lists))
        })
    }

    /// With no access rule anywhere, every update passes (as every read
    /// would).
    fn may_read(&self, uri: &str) -> bool {
        !self.server.has_access_rules() || self.ask(|gate| gate.may_read(uri))
    }
}

/// The rounds of this server's tasks, as its [`Tasks`] runner runs them.
impl TaskRounds for Server {
    fn run_round<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, RoundEnd> {
        Box::pin(async move {
            let catalog = self.catalog();
            let end = tasks::run_round(self.services(), &catalog, record).await;
            metrics::task_round(end.outcome());
            end
        })
    }

    fn failure(&self, why: &Failure) -> Value {
        tasks::failure(why)
    }
}

/// How long a client refused while the components load is asked to wait
/// before it tries again (`Retry-After`, `data.retryAfterMs`).
const LOADING_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The error for a request that needs the components when they are still
/// loading past the load wait: -32603 with HTTP 503, `Retry-After` and
/// `data.reason` `loading`; retrying later succeeds.
fn still_loading() -> RpcError {
    tracing::debug!("request refused: the components are still loading");
    RpcError::unavailable(format!(
        "Server not ready: its components are still loading; try again in {} s",
        LOADING_RETRY_AFTER.as_secs()
    ))
    .with_data(json!({
        "reason": "loading",
        "retryAfterMs": LOADING_RETRY_AFTER.as_millis(),
    }))
    .with_retry_after(LOADING_RETRY_AFTER)
}

/// The error for a request over a rate limit: HTTP 429 with `Retry-After`,
/// and the limit and the wait in `data`.
fn over_quota(refused: Refused) -> RpcError {
    tracing::debug!(%refused, "request refused");
    let (kind, limit) = match refused.tool {
        Some(_) => (metrics::Limit::ToolRate, "tool-rate-limit"),
        None => (metrics::Limit::Rate, "rate-limit"),
    };
    metrics::limit_hit(kind);
    audit::over_quota(limit);
    let mut data = json!({
        "limit": limit,
        "rate": refused.limit.rate.to_string(),
        "burst": refused.limit.burst,
        "retryAfterMs": refused.retry_after_ms(),
    });
    if let Some(tool) = &refused.tool {
        data["tool"] = json!(tool);
    }
    RpcError::quota_exceeded(refused.to_string())
        .with_data(data)
        .with_retry_after(refused.retry_after)
}

/// `request` answered with `answer`, as metrics count it: labelled only
/// with what Airlock serves (a known method, a tool or prompt that
/// `loaded` says is loaded, a supported version, an error code of
/// Airlock's, the answer's own outcome), never with what a client made up.
fn operation<'r>(
    request: &'r Request,
    answer: &Answer,
    loaded: impl Fn(metrics::Name<'_>) -> bool,
) -> metrics::Operation<'r> {
    let method = Method::parse(&request.method);
    let name = request.params.get("name").and_then(Value::as_str);
    let (tool, prompt) = match method {
        Some(Method::ToolsCall) => (name.filter(|n| loaded(metrics::Name::Tool(n))), None),
        Some(Method::PromptsGet) => (None, name.filter(|n| loaded(metrics::Name::Prompt(n)))),
        _ => (None, None),
    };
    let error = match answer.error_code() {
        Some(code) if jsonrpc::codes::ANSWERED.contains(&code) => Some(ErrorType::Code(code)),
        Some(_) => Some(ErrorType::Other),
        None if answer.is_tool_error() => Some(ErrorType::Tool),
        None => None,
    };
    let version = request
        .params
        .get("_meta")
        .and_then(|meta| meta.get(envelope::META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    metrics::Operation {
        method: method.map(Method::name),
        tool,
        prompt,
        error,
        version: SUPPORTED_VERSIONS
            .iter()
            .copied()
            .find(|v| Some(*v) == version),
        outcome: answer.outcome().label(),
    }
}

/// How `answer` ends its request's span.
fn traced_outcome(answer: &Answer) -> telemetry::Outcome {
    match answer {
        Answer::Error(error) => telemetry::Outcome::Error {
            code: error.code,
            message: error.message.clone(),
        },
        answer if answer.is_tool_error() => telemetry::Outcome::ToolError,
        _ => telemetry::Outcome::Ok,
    }
}

fn unknown_method(method: &str) -> RpcError {
    if method::REMOVED.contains(&method) {
        RpcError::new(
            jsonrpc::codes::METHOD_NOT_FOUND,
            format!("Method not found: {method} does not exist in MCP {PROTOCOL_VERSION}"),
        )
        .with_status(404)
    } else {
        RpcError::method_not_found(method)
    }
}

#[cfg(test)]
mod tests {
    use super::super::outcome::Outcome;
    use super::*;

    #[test]
    fn removed_methods_say_so() {
        let e = unknown_method("ping");
        assert_eq!(
            (e.code, e.http_status),
            (jsonrpc::codes::METHOD_NOT_FOUND, 404)
        );
        assert!(e.message.contains("does not exist in MCP 2026-07-28"));
        assert_eq!(unknown_method("x/y").message, "Method not found: x/y");
    }

    fn request(method: &str, params: Value) -> Request {
        let Value::Object(params) = params else {
            panic!("params must be an object")
        };
        Request {
            id: json!(1),
            method: method.to_owned(),
            params,
        }
    }

    fn meta() -> Value {
        json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" })
    }

    /// Only `sha256` (a tool) and `greet` (a prompt) are loaded.
    fn loaded(name: metrics::Name<'_>) -> bool {
        matches!(
            name,
            metrics::Name::Tool("sha256") | metrics::Name::Prompt("greet")
        )
    }

    fn complete(members: &str) -> Answer {
        Answer::Complete(super::super::answer::Complete::new(members.to_owned()))
    }

    #[test]
    fn a_loaded_tool_is_a_label_and_success_has_no_error_type() {
        let call = request("tools/call", json!({"name": "sha256", "_meta": meta()}));
        assert_eq!(
            operation(&call, &complete(r#"{"content":[]}"#), loaded),
            metrics::Operation {
                method: Some("tools/call"),
                tool: Some("sha256"),
                prompt: None,
                error: None,
                version: Some("2026-07-28"),
                outcome: "ok",
            }
        );
    }

    #[test]
    fn names_methods_versions_and_codes_a_client_makes_up_are_not_label_values() {
        let call = request(
            "tools/call",
            json!({"name": "no-such-tool", "_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}),
        );
        let unknown = Answer::Error(super::super::access::unknown_tool("no-such-tool"));
        let counted = operation(&call, &unknown, loaded);
        assert_eq!(counted.tool, None);
        assert_eq!(counted.error, Some(ErrorType::Code(-32602)));
        assert_eq!(counted.version, None);
        assert_eq!(counted.outcome, "unknown");

        let odd = request("x/made-up", json!({"name": "sha256"}));
        let own_code = Answer::Error(RpcError::new(12345, "a code of a component's own"));
        let counted = operation(&odd, &own_code, loaded);
        assert_eq!(counted.method, None);
        assert_eq!(counted.tool, None, "only tools/call names a tool");
        assert_eq!(counted.error, Some(ErrorType::Other));
        assert_eq!(
            counted.outcome, "failed",
            "only a component has codes of its own"
        );
    }

    #[test]
    fn a_prompt_is_named_only_by_prompts_get() {
        let get = request("prompts/get", json!({"name": "greet"}));
        let counted = operation(&get, &complete("{}"), loaded);
        assert_eq!((counted.prompt, counted.tool), (Some("greet"), None));
        let get = request("prompts/get", json!({"name": "sha256"}));
        assert_eq!(
            operation(&get, &complete("{}"), loaded).prompt,
            None,
            "a tool, not a prompt"
        );
    }

    #[test]
    fn a_result_marked_as_the_tools_failure_is_a_tool_error() {
        let call = request("tools/call", json!({"name": "sha256"}));
        let failed = Answer::Complete(
            super::super::answer::Complete::new(r#"{"content":[],"isError":true}"#.to_owned())
                .with_outcome(Outcome::Failed),
        );
        assert_eq!(
            operation(&call, &failed, loaded).error,
            Some(ErrorType::Tool)
        );
        assert_eq!(operation(&call, &failed, loaded).outcome, "failed");
        assert!(matches!(
            traced_outcome(&failed),
            telemetry::Outcome::ToolError
        ));
        let says_so_in_its_content = complete(r#"{"structuredContent":{"isError":true}}"#);
        assert_eq!(
            operation(&call, &says_so_in_its_content, loaded).error,
            None
        );
    }

    #[test]
    fn refusals_are_outcomes_of_their_own_not_the_tools_failure() {
        let call = request("tools/call", json!({"name": "sha256"}));
        let outcome = |answer: Answer| operation(&call, &answer, loaded).outcome;
        // Arguments refused before the tool ran: `isError` on the wire (the
        // conventions' `tool_error`), but no failure of the tool.
        let refused_arguments = Answer::Complete(
            super::super::answer::Complete::new(r#"{"content":[],"isError":true}"#.to_owned())
                .with_outcome(Outcome::Invalid),
        );
        assert_eq!(
            operation(&call, &refused_arguments, loaded).error,
            Some(ErrorType::Tool)
        );
        assert_eq!(outcome(refused_arguments), "invalid");
        // Refused by a rule: whether the caller may see the tool (-31403)
        // or not (answered as if it did not exist), a refusal by rule.
        let refused = |decision| {
            super::super::access::refused(
                &AccessSettings::default(),
                &Caller::stdio(),
                Kind::Tool,
                "sha256",
                decision,
                || super::super::access::unknown_tool("sha256"),
            )
        };
        let hidden = refused(crate::access::Decision::Hidden);
        assert_eq!(hidden.code, jsonrpc::codes::INVALID_PARAMS, "{hidden:?}");
        assert_eq!(outcome(Answer::Error(hidden)), "denied");
        let forbidden = refused(crate::access::Decision::See { step_up: None });
        assert_eq!(
            forbidden.code,
            jsonrpc::codes::ACCESS_DENIED,
            "{forbidden:?}"
        );
        assert_eq!(outcome(Answer::Error(forbidden)), "denied");
        assert_eq!(
            outcome(Answer::Error(RpcError::quota_exceeded("over"))),
            "over_quota"
        );
        assert_eq!(
            outcome(Answer::Error(RpcError::unavailable("busy"))),
            "unavailable"
        );
    }
}
