//! Keeping what the server serves current while it runs: the first load
//! of the tools directory (the server listens before it, see
//! [`spawn_loading`]), reloading the directory when its components change, and acting on the changes
//! components report (`notify-list-changed`, `notify-resource-updated`).
//!
//! One task, the live loop, is the only one that replaces the registry, so
//! two updates can never race to replace it. It reloads the directory
//! itself; a reload that fails (two components now serve the same name)
//! changes nothing: the server keeps serving the previous set and the log
//! says why.
//!
//! Listing a component again after it reported that a list changed runs its
//! guest, for as long as the guest takes, so it runs on a task of its own
//! and the loop goes on watching the directory: no storm of reports from one
//! component holds up a reload or another component. For each component:
//!
//! - one relist at a time: reports that come before it starts are answered
//!   by it, and any number of reports that come while it runs make it run
//!   once more afterwards;
//! - at most one relist starts per interval ([`LiveOptions::relist_every`]);
//! - the loop swaps the new lists into the registry served when the relist
//!   is done, only if that registry still holds the version of the component
//!   that was listed: when a reload replaced or removed the file meanwhile,
//!   the reload wins and the relist is dropped.
//!
//! A component may report updates only of resources it serves (it lists
//! them, or a read of them reaches it through its templates).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;

use crate::protocol::Server;
use crate::protocol::subscriptions::ServerChange;
use crate::registry::reload::Watcher;
use crate::registry::{Registry, Relisted, ToolSources};
use crate::runtime::{Change, ListKind, Runtime};

/// Where the components come from, and how often to look for changes.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The tools directory and the pulled components.
    pub tools: ToolSources,
    /// The compile cache, if any.
    pub cache_dir: Option<PathBuf>,
    /// How often to look at the directory; `None` never reloads.
    pub reload_every: Option<Duration>,
    /// The least time between the starts of two relists of one component.
    pub relist_every: Duration,
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

/// Starts the task with the first load of the tools directory: `server`
/// serves what it holds (nothing, at start) until that load is done, then
/// the loaded set, and `loaded` turns true; from then on it runs as
/// [`spawn`]'s does. The handle ends with an error if the first load fails
/// (the directory cannot be read, or two components serve the same name):
/// the server must not go on serving nothing.
pub fn spawn_loading(
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    options: LiveOptions,
    loaded: watch::Sender<bool>,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let changes = runtime.take_changes();
    tokio::spawn(async move {
        first_load(&server, &runtime, &options).await?;
        loaded.send_replace(true);
        run(server, runtime, options, changes).await;
        Ok(())
    })
}

/// Loads the tools directory into `server`, announcing the lists that
/// changed (every one that is not empty) to those who listen.
async fn first_load(
    server: &Server,
    runtime: &Arc<Runtime>,
    options: &LiveOptions,
) -> anyhow::Result<()> {
    let registry = Registry::load(runtime, &options.tools, options.cache_dir.as_deref()).await?;
    crate::audit::loaded(registry.component_files());
    let dir = &options.tools;
    if registry.tools().is_empty()
        && registry.prompts().is_empty()
        && registry.resources().is_empty()
        && registry.templates().is_empty()
    {
        tracing::warn!(%dir, "nothing loaded: drop components (*.wasm) into the tools directory");
    }
    let counts = Counts::of(&registry);
    server.replace_registry(registry, &[])?;
    tracing::info!(
        %dir,
        components = counts.components,
        tools = counts.tools,
        prompts = counts.prompts,
        resources = counts.resources,
        templates = counts.templates,
        "components loaded: ready"
    );
    Ok(())
}

/// How much a registry serves, for the log.
struct Counts {
    components: usize,
    tools: usize,
    prompts: usize,
    resources: usize,
    templates: usize,
}

impl Counts {
    fn of(registry: &Registry) -> Counts {
        Counts {
            components: registry.component_count(),
            tools: registry.tools().len(),
            prompts: registry.prompts().len(),
            resources: registry.resources().len(),
            templates: registry.templates().len(),
        }
    }
}

async fn run(
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    options: LiveOptions,
    mut changes: Option<mpsc::Receiver<Change>>,
) {
    // The watcher lives in one future from one change to the next, so that
    // the loop's other work never cuts a look at the directory short. It
    // starts from the directory as the served registry read it, so that
    // nothing changed since is missed.
    let mut directory = options.reload_every.map(|every| {
        let loaded = server.registry().directory().cloned();
        Box::pin(next_change(Watcher::new(&options.tools, every, loaded)))
    });
    let mut relists = Relists::new(server.clone(), runtime.clone(), options.relist_every);
    loop {
        tokio::select! {
            watcher = async { directory.as_mut().expect("guarded").await }, if directory.is_some() => {
                reload(&server, &runtime, &options).await;
                directory = Some(Box::pin(next_change(watcher)));
            }
            change = async { changes.as_mut().expect("guarded").recv().await }, if changes.is_some() => {
                match change {
                    Some(change) => apply(&server, &mut relists, change),
                    None => changes = None,
                }
            }
            Some(done) = relists.tasks.join_next_with_id(), if !relists.tasks.is_empty() => {
                relists.finished(done);
            }
            else => return,
        }
    }
}

/// Resolves with the watcher once the directory has changed.
async fn next_change(mut watcher: Watcher) -> Watcher {
    watcher.changed().await;
    watcher
}

async fn reload(server: &Server, runtime: &Arc<Runtime>, options: &LiveOptions) {
    tracing::info!(dir = %options.tools, "the tools directory changed: reloading");
    let current = server.registry();
    match current
        .reload(runtime, &options.tools, options.cache_dir.as_deref())
        .await
    {
        Ok(registry) => {
            let counts = Counts::of(&registry);
            crate::audit::reloaded(current.component_files(), registry.component_files());
            match server.replace_registry(registry, &[]) {
                Ok(()) => tracing::info!(
                    tools = counts.tools,
                    prompts = counts.prompts,
                    resources = counts.resources,
                    templates = counts.templates,
                    "reloaded"
                ),
                Err(error) => refused(&error),
            }
        }
        Err(error) => refused(&error),
    }
}

fn refused(error: &anyhow::Error) {
    crate::metrics::reload_refused();
    crate::audit::reload_refused(&format!("{error:#}"));
    tracing::error!("reload refused, still serving the previous set: {error:#}");
}

fn apply(server: &Server, relists: &mut Relists, change: Change) {
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
            let list = match kind {
                ListKind::Tools => ServerChange::ToolsListChanged,
                ListKind::Prompts => ServerChange::PromptsListChanged,
                ListKind::Resources => ServerChange::ResourcesListChanged,
            };
            relists.report(component, list);
        }
    }
}

/// The loop's books on relisting the components that reported changes.
struct Relists {
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    /// The least time between the starts of two relists of one component.
    every: Duration,
    /// The components relisting now, or that started one less than `every`
    /// ago.
    by_component: HashMap<Arc<Path>, Relisting>,
    /// The relists running (or waiting to start).
    tasks: JoinSet<anyhow::Result<Relisted>>,
}

/// One component's latest relist.
struct Relisting {
    /// When it starts (or started).
    starts: Instant,
    /// Its task while it runs (or waits to start); `None` once done.
    task: Option<tokio::task::Id>,
    /// The reports it answers.
    answers: Reports,
    /// The reports that came after it started: one more relist answers them.
    again: Reports,
}

/// Reports of changed lists from one component, merged.
#[derive(Default)]
struct Reports {
    /// How many there were.
    count: usize,
    /// The lists they named, each once.
    lists: Vec<ServerChange>,
}

impl Reports {
    fn add(&mut self, list: ServerChange) {
        self.count += 1;
        if !self.lists.contains(&list) {
            self.lists.push(list);
        }
    }

    fn one(list: ServerChange) -> Reports {
        let mut reports = Reports::default();
        reports.add(list);
        reports
    }
}

impl Relists {
    fn new(server: Arc<Server>, runtime: Arc<Runtime>, every: Duration) -> Relists {
        Relists {
            server,
            runtime,
            every,
            by_component: HashMap::new(),
            tasks: JoinSet::new(),
        }
    }

    /// `component` reported that `list` changed: relist it, or merge the
    /// report into the relist it already has.
    fn report(&mut self, component: Arc<Path>, list: ServerChange) {
        let now = Instant::now();
        let every = self.every;
        self.by_component
            .retain(|_, relisting| relisting.task.is_some() || now < relisting.starts + every);
        match self.by_component.get_mut(&component) {
            // Not started yet: it will see what this report is about.
            Some(relisting) if relisting.task.is_some() && now < relisting.starts => {
                relisting.answers.add(list);
            }
            Some(relisting) if relisting.task.is_some() => relisting.again.add(list),
            Some(done) => {
                let starts = done.starts + every;
                self.start(component, starts, Reports::one(list));
            }
            None => self.start(component, now, Reports::one(list)),
        }
    }

    /// Starts a relist of `component` at `starts`, answering `reports`.
    fn start(&mut self, component: Arc<Path>, starts: Instant, reports: Reports) {
        let task = self
            .tasks
            .spawn(relist(
                self.server.clone(),
                self.runtime.clone(),
                component.clone(),
                starts,
            ))
            .id();
        self.by_component.insert(
            component,
            Relisting {
                starts,
                task: Some(task),
                answers: reports,
                again: Reports::default(),
            },
        );
    }

    /// A relist task ended: swaps its result in, and starts the next relist
    /// of that component if more reports came meanwhile.
    fn finished(&mut self, done: Result<(tokio::task::Id, anyhow::Result<Relisted>), JoinError>) {
        let (id, relisted) = match done {
            Ok((id, relisted)) => (id, relisted),
            Err(error) => (
                error.id(),
                Err(anyhow::anyhow!("listing it failed: {error}")),
            ),
        };
        let Some((component, relisting)) = self
            .by_component
            .iter_mut()
            .find(|(_, relisting)| relisting.task == Some(id))
        else {
            return;
        };
        let component = component.clone();
        relisting.task = None;
        let answered = std::mem::take(&mut relisting.answers);
        let again = std::mem::take(&mut relisting.again);
        let next_starts = (relisting.starts + self.every).max(Instant::now());
        let swapped =
            relisted.and_then(|relisted| swap_in(&self.server, &component, &relisted, &answered));
        if let Err(error) = swapped {
            tracing::warn!(file = %component.display(), "cannot list the component again after it reported a change: {error:#}");
        }
        if again.count > 0 {
            self.start(component, next_starts, again);
        }
    }
}

/// Lists `component` again once `starts` comes, from the registry served
/// then.
async fn relist(
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    component: Arc<Path>,
    starts: Instant,
) -> anyhow::Result<Relisted> {
    tokio::time::sleep_until(starts).await;
    server.registry().relist(&runtime, &component).await
}

/// Swaps `relisted` into the registry served now and announces every list
/// the reports named, each even if it reads the same as before (a guest's
/// word is announced; `replace_registry` adds the lists that differ).
fn swap_in(
    server: &Server,
    component: &Path,
    relisted: &Relisted,
    reports: &Reports,
) -> anyhow::Result<()> {
    tracing::debug!(file = %component.display(), reports = reports.count, "listed the component again");
    let Some(registry) = server.registry().with_relisted(relisted)? else {
        tracing::debug!(file = %component.display(), "dropping the new lists: the component was replaced or removed since");
        return Ok(());
    };
    server.replace_registry(registry, &reports.lists)
}
