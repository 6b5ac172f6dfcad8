//! `subscriptions/listen`: long-lived streams of change notifications.
//!
//! Changes (a list changed after a reload or a component's report, a
//! resource a component reported as updated) are published once to
//! [`Subscriptions`]; every open listen stream receives them and forwards
//! the ones its filter asked for and its caller may hear of (its
//! [`Audience`]), each tagged with the listen request's id. The filter
//! itself is never checked against what the caller may see: a URI or task
//! id it may not see is acknowledged as an unknown one is.
//! The acknowledgement always comes first. A stream ends when the client
//! goes away (the transport drops the request) or the server shuts down
//! (then it ends with its `SubscriptionsListenResult`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::access::ListView;
use super::answer::{Answer, Complete};
use super::context::Notifier;
use super::jsonrpc::{self, Request, RpcError};
use super::tasks;
use crate::tasks::{TaskEvent, Tasks};

/// The `_meta` key that tags every notification of a listen stream.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Most resource URIs one listen request may subscribe to.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1000;

/// How many changes may wait for a slow stream before it is told that it
/// missed some (it then gets every list-changed notification it asked for).
const BACKLOG: usize = 256;

/// What one caller may hear of the server's changes, asked of the
/// registry served when each change is delivered: rules (and so what the
/// caller may see) can change after it subscribed.
pub trait Audience: Sync {
    /// What the caller sees now of the list `change` names (`None`: not a
    /// list change, or no access rule applies).
    fn list_view(&self, change: &ServerChange) -> Option<ListView>;

    /// Whether the caller may read the resource at `uri` now: what
    /// `resources/read` would decide.
    fn may_read(&self, uri: &str) -> bool;

    /// Whether the caller should hear of `change`: an update of a
    /// resource only when it may read that resource; a list change only
    /// when its view of the list changed since `views` last looked (which
    /// remembers its view now).
    fn hears(&self, views: &mut ListViews, change: &ServerChange) -> bool {
        match change {
            ServerChange::ResourceUpdated(uri) => self.may_read(uri),
            list => views.passes(list, self.list_view(list)),
        }
    }
}

/// What one caller last saw of each list, so that it hears of a list
/// change only when its own view changed: a listing it may see more or
/// less of, or (the lists being the same) a change a component reported,
/// when it sees part of that list. Where no access rule applies, every
/// change passes.
#[derive(Debug, Default)]
pub struct ListViews(HashMap<&'static str, ListView>);

impl ListViews {
    /// The views of every list as `audience` sees them now.
    pub fn new(audience: &dyn Audience) -> ListViews {
        let views = ServerChange::ALL_LISTS
            .iter()
            .filter_map(|change| Some((change.method(), audience.list_view(change)?)))
            .collect();
        ListViews(views)
    }

    /// Whether the caller should hear of `change`, given its view of the
    /// list now (`None`: no rule applies, or not a list change); remembers
    /// that view.
    fn passes(&mut self, change: &ServerChange, now: Option<ListView>) -> bool {
        let Some(now) = now else {
            return true;
        };
        match self.0.insert(change.method(), now) {
            Some(before) => before.visible != now.visible || (before.whole == now.whole && now.any),
            None => true,
        }
    }
}

/// A change listeners may be told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerChange {
    /// `tools/list` would answer differently.
    ToolsListChanged,
    /// `prompts/list` would answer differently.
    PromptsListChanged,
    /// `resources/list` or `resources/templates/list` would answer
    /// differently.
    ResourcesListChanged,
    /// The resource at this URI changed.
    ResourceUpdated(Arc<str>),
}

impl ServerChange {
    /// Every list change: what a listener that missed some must assume.
    pub const ALL_LISTS: [ServerChange; 3] = [
        ServerChange::ToolsListChanged,
        ServerChange::PromptsListChanged,
        ServerChange::ResourcesListChanged,
    ];

    /// The notification that announces this change.
    pub fn method(&self) -> &'static str {
        match self {
            ServerChange::ToolsListChanged => "notifications/tools/list_changed",
            ServerChange::PromptsListChanged => "notifications/prompts/list_changed",
            ServerChange::ResourcesListChanged => "notifications/resources/list_changed",
            ServerChange::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The notification's params: the URI of an updated resource.
    pub fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        if let ServerChange::ResourceUpdated(uri) = self {
            params.insert("uri".to_owned(), json!(&**uri));
        }
        params
    }
}

/// Where changes are published, and listen streams subscribe.
pub struct Subscriptions {
    sender: broadcast::Sender<ServerChange>,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Subscriptions {
            sender: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Subscriptions {
    /// A receiver of every change published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ServerChange> {
        self.sender.subscribe()
    }

    /// Tells every open listen stream (that asked for it) about `change`.
    pub fn publish(&self, change: ServerChange) {
        // No receivers is not an error: nobody is listening.
        let _ = self.sender.send(change);
    }
}

/// Most task ids one listen request may watch.
pub const MAX_TASK_SUBSCRIPTIONS: usize = 1000;

/// The tasks a listen stream may report on (the tasks extension): whose
/// they are, and whether the request declared the extension.
pub struct TaskWatch<'a> {
    /// Where tasks live.
    pub tasks: &'a Tasks,
    /// Who listens: only their own tasks are reported.
    pub principal: &'a str,
    /// Whether the listen request declared the tasks extension.
    pub declared: bool,
    /// Whether the listener may use a tool now (by the registry served when
    /// the task changes): a task is reported only while it may use the
    /// task's tool.
    pub may_use_tool: &'a (dyn Fn(&str) -> bool + Send + Sync),
}

/// What one listen request asked for.
#[derive(Debug, Default, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
    task_ids: Vec<String>,
}

impl Filter {
    /// Reads `params.notifications`.
    fn parse(params: &Map<String, Value>) -> Result<Filter, RpcError> {
        let notifications = params
            .get("notifications")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                RpcError::invalid_params("Invalid params: missing notifications (an object)")
            })?;
        let flag = |name: &str| match notifications.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(value)) => Ok(*value),
            Some(_) => Err(RpcError::invalid_params(format!(
                "Invalid params: notifications.{name} must be a boolean"
            ))),
        };
        let uris = match notifications.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(uris)) if uris.len() <= MAX_RESOURCE_SUBSCRIPTIONS => uris
                .iter()
                .map(|uri| uri.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    RpcError::invalid_params(
                        "Invalid params: notifications.resourceSubscriptions must hold strings",
                    )
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: notifications.resourceSubscriptions must be an array of at most {MAX_RESOURCE_SUBSCRIPTIONS} URIs"
                )));
            }
        };
        let task_ids = match notifications.get("taskIds") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(ids)) if ids.len() <= MAX_TASK_SUBSCRIPTIONS => ids
                .iter()
                .map(|id| id.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    RpcError::invalid_params(
                        "Invalid params: notifications.taskIds must hold strings",
                    )
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: notifications.taskIds must be an array of at most {MAX_TASK_SUBSCRIPTIONS} ids"
                )));
            }
        };
        Ok(Filter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            uris,
            task_ids,
        })
    }

    /// The filter as the acknowledgement echoes it: what will be honoured.
    fn acknowledged(&self) -> Value {
        let mut honoured = Map::new();
        for (name, wanted) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if wanted {
                honoured.insert(name.to_owned(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() {
            honoured.insert("resourceSubscriptions".to_owned(), json!(self.uris));
        }
        if !self.task_ids.is_empty() {
            honoured.insert("taskIds".to_owned(), json!(self.task_ids));
        }
        Value::Object(honoured)
    }

    /// The notification method for `change`, if this filter wants it.
    fn wants(&self, change: &ServerChange) -> Option<&'static str> {
        let wanted = match change {
            ServerChange::ToolsListChanged => self.tools,
            ServerChange::PromptsListChanged => self.prompts,
            ServerChange::ResourcesListChanged => self.resources,
            ServerChange::ResourceUpdated(uri) => {
                self.uris.iter().any(|subscribed| covers(subscribed, uri))
            }
        };
        wanted.then(|| change.method())
    }
}

/// Whether a subscription to `subscribed` covers an update of `uri`: the
/// same URI, or a sub-resource of it (`subscribed` followed by `/`).
pub(crate) fn covers(subscribed: &str, uri: &str) -> bool {
    uri.strip_prefix(subscribed)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || subscribed.ends_with('/'))
}

/// Serves one `subscriptions/listen` until the client leaves or the
/// server shuts down (`shutdown` turns true). Of the changes its filter
/// asked for, the caller hears those `audience` lets it hear when each
/// comes.
pub(super) async fn listen(
    subscriptions: &Subscriptions,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    request: &Request,
    notifier: Option<&Notifier>,
    tasks: Option<TaskWatch<'_>>,
    audience: &dyn Audience,
) -> Result<Answer, RpcError> {
    let filter = Filter::parse(&request.params)?;
    let tasks = match tasks {
        _ if filter.task_ids.is_empty() => None,
        Some(watch) if watch.declared => Some(watch),
        Some(_) => return Err(super::tasks::extension_required("Listening to taskIds")),
        None => {
            return Err(RpcError::invalid_params(
                "Invalid params: this server runs no tasks (notifications.taskIds)",
            ));
        }
    };
    let Some(out) = notifier else {
        return Err(RpcError::invalid_request(
            "subscriptions/listen answers with a stream: send Accept: text/event-stream",
        ));
    };
    // Subscribe before acknowledging, so nothing published after the
    // acknowledgement is missed.
    let mut changes = subscriptions.subscribe();
    let mut views = ListViews::new(audience);
    let mut task_events = tasks.as_ref().map(|watch| watch.tasks.events());
    let tag = json!({ SUBSCRIPTION_ID: request.id });
    let note = |method: &str, mut params: Map<String, Value>| {
        params.insert("_meta".to_owned(), tag.clone());
        jsonrpc::encode_notification(method, &Value::Object(params))
    };
    let mut ack = Map::new();
    ack.insert("notifications".to_owned(), filter.acknowledged());
    if out
        .send(note("notifications/subscriptions/acknowledged", ack))
        .await
        .is_err()
    {
        return Ok(listen_result(request));
    }
    loop {
        let mut changed_task = None;
        let mut messages = tokio::select! {
            change = changes.recv() => match change {
                Ok(change) => filter
                    .wants(&change)
                    .filter(|_| audience.hears(&mut views, &change))
                    .map(|method| note(method, change.params()))
                    .into_iter()
                    .collect::<Vec<_>>(),
                // Missed some: each list it watches may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => ServerChange::ALL_LISTS
                    .iter()
                    .filter(|change| filter.wants(change).is_some())
                    .filter(|change| audience.hears(&mut views, change))
                    .map(|change| note(change.method(), Map::new()))
                    .collect(),
                Err(broadcast::error::RecvError::Closed) => break,
            },
            event = next_task_event(&mut task_events) => match event {
                Ok(TaskEvent::Changed(id)) if filter.task_ids.contains(&id) => {
                    changed_task = Some(id);
                    Vec::new()
                }
                Err(broadcast::error::RecvError::Closed) => {
                    task_events = None;
                    Vec::new()
                }
                // Missed some: a poller learns the rest with tasks/get.
                _ => Vec::new(),
            },
            _ = shutdown.wait_for(|down| *down) => break,
            () = out.closed() => break,
        };
        if let (Some(id), Some(watch)) = (changed_task, &tasks)
            && let Some(Value::Object(task)) =
                tasks::notification(watch.tasks, &id, watch.principal, watch.may_use_tool).await
        {
            messages.push(note("notifications/tasks", task));
        }
        for message in messages {
            if out.send(message).await.is_err() {
                return Ok(listen_result(request));
            }
        }
    }
    Ok(listen_result(request))
}

/// The next task event, or never when the stream watches no task.
async fn next_task_event(
    events: &mut Option<broadcast::Receiver<TaskEvent>>,
) -> Result<TaskEvent, broadcast::error::RecvError> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// The `SubscriptionsListenResult` that ends a stream: no members but the
/// subscription id in its `_meta`.
fn listen_result(request: &Request) -> Answer {
    let mut result = Complete::new("{}".to_owned());
    result
        .meta
        .insert(SUBSCRIPTION_ID.to_owned(), request.id.clone());
    Answer::Complete(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(notifications: Value) -> Result<Filter, RpcError> {
        Filter::parse(
            json!({ "notifications": notifications })
                .as_object()
                .unwrap(),
        )
    }

    #[test]
    fn filters_parse_and_choose() {
        let f = filter(json!({"promptsListChanged": true, "resourceSubscriptions": ["a://x"]}))
            .unwrap();
        assert_eq!(f.wants(&ServerChange::ToolsListChanged), None);
        assert_eq!(
            f.wants(&ServerChange::PromptsListChanged),
            Some("notifications/prompts/list_changed")
        );
        assert!(
            f.wants(&ServerChange::ResourceUpdated("a://x".into()))
                .is_some()
        );
        assert!(
            f.wants(&ServerChange::ResourceUpdated("a://x/y".into()))
                .is_some()
        );
        assert!(
            f.wants(&ServerChange::ResourceUpdated("a://xy".into()))
                .is_none()
        );
        assert_eq!(
            f.acknowledged(),
            json!({"promptsListChanged": true, "resourceSubscriptions": ["a://x"]})
        );
        assert!(Filter::parse(&Map::new()).is_err());
        assert!(filter(json!({"toolsListChanged": "yes"})).is_err());
        assert!(filter(json!({"resourceSubscriptions": [1]})).is_err());
        assert_eq!(filter(json!({})).unwrap(), Filter::default());
    }

    /// A caller that may read only `a://open`, and sees `visible` of every
    /// list (of `whole`).
    struct Reader {
        whole: u64,
        visible: u64,
    }

    impl Audience for Reader {
        fn list_view(&self, _: &ServerChange) -> Option<ListView> {
            Some(ListView {
                whole: self.whole,
                visible: self.visible,
                any: self.visible != 0,
            })
        }

        fn may_read(&self, uri: &str) -> bool {
            uri == "a://open"
        }
    }

    #[test]
    fn a_caller_hears_of_updates_it_may_read_and_of_changes_of_its_view() {
        let mut reader = Reader {
            whole: 1,
            visible: 1,
        };
        let mut views = ListViews::new(&reader);
        let updated = |uri: &str| ServerChange::ResourceUpdated(uri.into());
        assert!(reader.hears(&mut views, &updated("a://open")));
        assert!(!reader.hears(&mut views, &updated("a://hidden")));
        assert!(!reader.hears(&mut views, &updated("a://open/below")));
        // A list the caller sees the same of, changed by a reload: not
        // told; what it sees changed: told.
        reader.whole = 2;
        assert!(!reader.hears(&mut views, &ServerChange::ToolsListChanged));
        reader.visible = 2;
        assert!(reader.hears(&mut views, &ServerChange::ToolsListChanged));
    }
}
