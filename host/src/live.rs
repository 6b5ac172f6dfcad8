//! Keeping what the server serves current while it runs: reloading the
//! tools directory when its components change, and acting on the changes
//! components report (`notify-list-changed`, `notify-resource-updated`).
//!
//! A component may report updates only of resources it serves (it lists
//! them, or a read of them reaches it through its templates). One task does
//! both, one change at a time, so two updates can never race
//! to replace the registry. A reload that fails (two components now serve
//! the same name) changes nothing: the server keeps serving the previous
//! set and the log says why.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::protocol::Server;
use crate::protocol::subscriptions::ServerChange;
use crate::registry::reload::Watcher;
use crate::runtime::{Change, ListKind, Runtime};

/// Where the components come from, and how often to look for changes.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The tools directory.
    pub dir: PathBuf,
    /// The compile cache, if any.
    pub cache_dir: Option<PathBuf>,
    /// How often to look at the directory; `None` never reloads.
    pub reload_every: Option<Duration>,
}

/// Starts the task. It runs until the returned handle is aborted (or the
/// runtime's change channel was already taken, then only reloads).
pub fn spawn(
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    options: LiveOptions,
) -> tokio::task::JoinHandle<()> {
    let changes = runtime.take_changes();
    tokio::spawn(run(server, runtime, options, changes))
}

async fn run(
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    options: LiveOptions,
    mut changes: Option<mpsc::Receiver<Change>>,
) {
    let mut watcher = options
        .reload_every
        .map(|every| Watcher::new(options.dir.clone(), every));
    loop {
        tokio::select! {
            () = async { watcher.as_mut().expect("guarded").changed().await }, if watcher.is_some() => {
                reload(&server, &runtime, &options).await;
            }
            change = async { changes.as_mut().expect("guarded").recv().await }, if changes.is_some() => {
                match change {
                    Some(change) => apply(&server, &runtime, change).await,
                    None => changes = None,
                }
            }
            else => return,
        }
    }
}

async fn reload(server: &Server, runtime: &Arc<Runtime>, options: &LiveOptions) {
    tracing::info!(dir = %options.dir.display(), "the tools directory changed: reloading");
    let current = server.registry();
    match current
        .reload(runtime, &options.dir, options.cache_dir.as_deref())
        .await
    {
        Ok(registry) => {
            let counts = (
                registry.tools().len(),
                registry.prompts().len(),
                registry.resources().len(),
                registry.templates().len(),
            );
            match server.replace_registry(registry, None) {
                Ok(()) => tracing::info!(
                    tools = counts.0,
                    prompts = counts.1,
                    resources = counts.2,
                    templates = counts.3,
                    "reloaded"
                ),
                Err(error) => refused(&error),
            }
        }
        Err(error) => refused(&error),
    }
}

fn refused(error: &anyhow::Error) {
    tracing::error!("reload refused, still serving the previous set: {error:#}");
}

async fn apply(server: &Server, runtime: &Runtime, change: Change) {
    match change {
        Change::ResourceUpdated { component, uri } => {
            // Only the component a read of `uri` would reach may say it changed.
            let served_by_it = server
                .registry()
                .resolve_resource(&uri)
                .is_some_and(|(reader, _)| reader.source() == &*component);
            if served_by_it {
                server.resource_updated(&uri);
            } else {
                tracing::debug!(file = %component.display(), uri, "ignoring an update of a resource this component does not serve");
            }
        }
        Change::ListChanged { component, kind } => {
            let announce = match kind {
                ListKind::Tools => ServerChange::ToolsListChanged,
                ListKind::Prompts => ServerChange::PromptsListChanged,
                ListKind::Resources => ServerChange::ResourcesListChanged,
            };
            let relisted = server.registry().relist(runtime, &component).await;
            let replaced =
                relisted.and_then(|registry| server.replace_registry(registry, Some(announce)));
            if let Err(error) = replaced {
                tracing::warn!(file = %component.display(), "cannot list the component again after it reported a change: {error:#}");
            }
        }
    }
}
