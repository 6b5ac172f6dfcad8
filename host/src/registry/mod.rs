//! The tools directory: every `*.wasm` component in it, compiled once,
//! linked once, listed once, and what they serve put together.
//!
//! Loading a directory is forgiving about single components and strict about
//! the whole: a file that is not a usable component (not a component at all,
//! fails to compile, exports none of the `airlock:mcp` interfaces, traps
//! while listing, or describes what it serves badly), or whose manifest is
//! invalid, is skipped with one `warn!` line naming the file and the reason,
//! and the others still load. On a reload, a component served until then
//! whose file or manifest changed into one that cannot be loaded keeps
//! serving its previous version, with one `error!` line naming the file and
//! the reason (for a manifest, its line), until a later change loads.
//!
//! Names must be unique across the directory: two components that list the
//! same tool name, prompt name, resource URI or resource template make the
//! load fail, naming both files (which one a client would get would be an
//! accident of file names). A manifest's `name-prefix` serves a component's
//! tools and prompts under prefixed names, while the component still sees
//! its own (see [`crate::policy::manifest`]). A resource URI that matches several templates
//! is read by the first of them, in file-name order, then in the order the
//! component listed them; a listed resource always wins over a template.
//!
//! A [`Registry`] never changes. Reloading (see [`reload`]) builds a new one,
//! reusing every component whose file did not change, and the server swaps
//! it in; calls already running keep the components they started with.
//! Relisting one component that reported a change ([`Registry::relist`])
//! runs its guest apart from any registry; [`Registry::with_relisted`] then
//! swaps the new lists into whichever registry is served by then, as long
//! as it still holds that version of the component.

pub mod cache;
mod component;
mod file_stamp;
pub mod footprint;
pub mod frontmatter;
pub mod input_schema;
pub mod listed_size;
pub mod pulled_files;
pub mod reload;
pub mod skills;
pub mod uri_template;
pub mod validate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use futures_util::StreamExt as _;
use tracing::{error, warn};

use self::cache::CompileCache;
use self::component::{Component, ComponentStamp};
use self::input_schema::{InputSchema, ViolationLimits};
use self::pulled_files::PulledFiles;
use self::reload::DirectoryStamp;
use self::skills::{Skill, SkillFile};
use self::uri_template::UriTemplate;
use crate::policy::manifest::Manifest;
use crate::runtime::{
    CallError, CheckedComponent, EventSink, Runtime, wit, wit_completions, wit_prompts,
    wit_resources,
};
use crate::units::{format_size, format_size_approx};

pub use self::cache::default_cache_dir;

/// Where a registry's components come from: every `*.wasm` directly in the
/// tools directory, and the component files pulled by reference (see
/// [`crate::supply`]), each with its manifest beside it. Names must be
/// unique across both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSources {
    /// The tools directory; `None`: there is none, only pulled components.
    pub dir: Option<PathBuf>,
    /// The pulled components' files, in the order they are loaded after the
    /// directory's.
    pub pulled: PulledFiles,
}

impl ToolSources {
    /// Every component file, the directory's sorted by file name, then the
    /// pulled ones (blocking; fails if the directory cannot be read).
    pub(crate) fn files(&self) -> anyhow::Result<Vec<PathBuf>> {
        let mut files = match &self.dir {
            Some(dir) => wasm_files(dir)?,
            None => Vec::new(),
        };
        files.extend(self.pulled.files());
        Ok(files)
    }
}

/// The tools directory, for log lines; `(none)` when only pulled
/// components are served.
impl std::fmt::Display for ToolSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.dir {
            Some(dir) => dir.display().fmt(f),
            None => f.write_str("(none)"),
        }
    }
}

impl From<&Path> for ToolSources {
    fn from(dir: &Path) -> ToolSources {
        ToolSources {
            dir: Some(dir.to_owned()),
            pulled: PulledFiles::default(),
        }
    }
}

impl From<&PathBuf> for ToolSources {
    fn from(dir: &PathBuf) -> ToolSources {
        ToolSources::from(dir.as_path())
    }
}

impl From<&ToolSources> for ToolSources {
    fn from(sources: &ToolSources) -> ToolSources {
        sources.clone()
    }
}

/// Everything every component of the tools directory serves.
#[derive(Debug, Default)]
pub struct Registry {
    /// The tools directory as it was read for this registry (`None` for a
    /// registry not loaded from one).
    directory: Option<DirectoryStamp>,
    components: Vec<Arc<Component>>,
    tools: Vec<ToolEntry>,
    tool_index: HashMap<String, usize>,
    prompts: Vec<PromptEntry>,
    prompt_index: HashMap<String, usize>,
    resources: Vec<ResourceEntry>,
    resource_index: HashMap<String, usize>,
    templates: Vec<TemplateEntry>,
    skills: Vec<SkillEntry>,
    /// Each skill by the URI of its `SKILL.md`.
    skill_index: HashMap<String, usize>,
    /// Each skill file by its URI: the skill, the file.
    skill_files: HashMap<String, (usize, usize)>,
}

/// One thing a component serves (a tool, a prompt, a resource, a
/// template), and the component that serves it. Tools, prompts and
/// resources are held in an `Arc`: a request keeps its entry (for the
/// length of its call) by three reference counts, not by copying the
/// description and schema.
#[derive(Clone)]
pub struct Served<T> {
    item: T,
    /// The name (or URI) it is called by, shared with every call's log lines.
    key: Arc<str>,
    /// The name (or URI) its component knows it by: `key` without the
    /// component's name prefix.
    own_key: Arc<str>,
    component: Arc<Component>,
}

/// A component listed again, not yet swapped into a registry (see
/// [`Registry::relist`]).
#[derive(Debug)]
pub struct Relisted {
    /// The version of the component it was listed from.
    from: Arc<Component>,
    /// The same version (code, policy, limits) with its new lists.
    relisted: Arc<Component>,
}

/// A tool and its component.
pub type ToolEntry = Served<Arc<Tool>>;
/// A prompt and its component.
pub type PromptEntry = Served<Arc<wit_prompts::Prompt>>;
/// A resource and its component.
pub type ResourceEntry = Served<Arc<wit_resources::Resource>>;
/// A resource template (parsed) and its component.
pub type TemplateEntry = Served<Template>;
/// A skill (of its skills directory) and its component.
pub type SkillEntry = Served<Arc<Skill>>;

/// A tool as listed, and its input schema compiled (once per version of
/// its component).
#[derive(Debug)]
pub struct Tool {
    /// As the component listed it.
    pub listed: wit::Tool,
    input_schema: InputSchema,
}

impl Tool {
    /// Compiles the input schema of `listed` (validated). The error names
    /// the tool and says why its schema is not a usable JSON Schema.
    fn compile(listed: wit::Tool) -> Result<Tool, String> {
        match InputSchema::compile(&listed.input_schema) {
            Ok(input_schema) => Ok(Tool {
                listed,
                input_schema,
            }),
            Err(why) => Err(format!(
                "tool `{}`: its input-schema is not a usable JSON Schema: {why}",
                listed.name
            )),
        }
    }

    /// Checks a call's arguments (`null`: none) against the tool's input
    /// schema; the error names the first violations (see
    /// [`InputSchema::check`]).
    pub fn check_arguments(
        &self,
        arguments: &serde_json::Value,
        limits: &ViolationLimits,
    ) -> Result<(), String> {
        self.input_schema.check(arguments, limits)
    }
}

/// A resource template as listed, and parsed.
#[derive(Debug, Clone)]
pub struct Template {
    /// As the component listed it.
    pub listed: wit_resources::ResourceTemplate,
    parsed: UriTemplate,
}

impl Template {
    /// The template's variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parsed.variables()
    }
}

impl<T> Served<T> {
    /// What the component listed.
    pub fn item(&self) -> &T {
        &self.item
    }

    /// The name (tools, prompts) or URI (resources, templates).
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// The component file that serves it.
    pub fn source(&self) -> &Path {
        &self.component.path
    }

    /// The largest reply its calls may produce, encoded, in bytes (its
    /// manifest's output limit, else the server's).
    pub fn max_output_bytes(&self) -> usize {
        self.component().policy().limits.max_output_bytes
    }

    /// The rule of this item for `kind`, from its component's manifest
    /// (which names it as the component does): its own, else the
    /// component's.
    pub fn access_rule(&self, kind: crate::access::Kind) -> Option<&crate::access::Rule> {
        self.component().policy().access.rule(kind, &self.own_key)
    }

    fn component(&self) -> &CheckedComponent {
        &self.component.checked
    }
}

impl ToolEntry {
    /// How often each caller may call this tool, if its manifest limits it.
    pub fn rate_limit(&self) -> Option<crate::quotas::RateLimit> {
        self.component()
            .policy()
            .rate_limits
            .get(&*self.own_key)
            .copied()
    }
}

impl<T> std::fmt::Debug for Served<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("key", &self.key)
            .field("source", &self.component.path)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Component")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// Runs one round of a call of this tool in a fresh instance.
    ///
    /// `arguments_json` is passed to the guest as is (the protocol layer has
    /// checked it against the input schema: [`Tool::check_arguments`]).
    /// Guest `log` and `progress` reports go to `events`, if given. JSON
    /// texts in the outcome are the guest's, not validated here.
    pub async fn call(
        &self,
        runtime: &Runtime,
        arguments_json: &str,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit::CallOutcome, CallError> {
        runtime
            .call_tool(
                self.component(),
                &self.own_key,
                self.key.clone(),
                arguments_json,
                round,
                events,
            )
            .await
    }
}

impl PromptEntry {
    /// Renders one round of this prompt in a fresh instance.
    pub async fn get(
        &self,
        runtime: &Runtime,
        arguments: &[(String, String)],
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_prompts::PromptOutcome, CallError> {
        runtime
            .get_prompt(
                self.component(),
                &self.own_key,
                self.key.clone(),
                arguments,
                round,
                events,
            )
            .await
    }
}

impl Served<()> {
    /// Reads one round of `uri` in a fresh instance of this component.
    pub async fn read(
        &self,
        runtime: &Runtime,
        uri: &str,
        template: Option<&wit_resources::TemplateMatch>,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_resources::ReadOutcome, CallError> {
        runtime
            .read_resource(self.component(), uri.into(), template, round, events)
            .await
    }

    /// Asks this component to complete an argument of this item (named in
    /// `request` as it is served; the component is asked with its own
    /// name); `None` if it does not export completions.
    pub async fn complete(
        &self,
        runtime: &Runtime,
        request: &wit_completions::CompletionRequest,
    ) -> Option<Result<wit_completions::Completion, CallError>> {
        let target = match &request.target {
            wit_completions::CompletionTarget::Prompt(_) => {
                wit_completions::CompletionTarget::Prompt(self.own_key.to_string())
            }
            target @ wit_completions::CompletionTarget::ResourceTemplate(_) => target.clone(),
        };
        let request = wit_completions::CompletionRequest {
            target,
            ..request.clone()
        };
        runtime.complete(self.component(), &request).await
    }
}

impl Registry {
    /// Loads every `*.wasm` directly in the tools directory (sorted by file
    /// name) and every pulled component of `sources` (a directory alone, or
    /// [`ToolSources`]), using (and filling) the compile cache in
    /// `cache_dir` if given.
    ///
    /// Fails if the directory cannot be read or if two components serve the
    /// same name or URI; skips (with a warning) components that cannot be
    /// used.
    pub async fn load(
        runtime: &Arc<Runtime>,
        sources: impl Into<ToolSources>,
        cache_dir: Option<&Path>,
    ) -> anyhow::Result<Registry> {
        Registry::default()
            .reload(runtime, sources, cache_dir)
            .await
    }

    /// Loads `dir` again, reusing every component of `self` whose file and
    /// manifest have not changed (same path, size, modification time and
    /// inode), and keeping the version of `self` of a component whose new
    /// version cannot be loaded. Fails like [`Registry::load`]; `self` is
    /// untouched either way.
    pub async fn reload(
        &self,
        runtime: &Arc<Runtime>,
        sources: impl Into<ToolSources>,
        cache_dir: Option<&Path>,
    ) -> anyhow::Result<Registry> {
        let cache = cache_dir.map(|d| CompileCache::new(runtime.engine(), d));
        let cache = cache.as_ref();
        let directory = {
            let sources = sources.into();
            tokio::task::spawn_blocking(move || DirectoryStamp::read(&sources))
                .await
                .context("reading the tools directory failed unexpectedly")??
        };
        let loads = directory
            .files()
            .to_vec()
            .into_iter()
            .map(|(path, stamp)| async move {
                let unchanged = self
                    .components
                    .iter()
                    .find(|c| c.path == path && stamp.as_ref() == Some(&c.stamp));
                if let Some(component) = unchanged {
                    return Some(component.clone());
                }
                match Component::load(runtime, &path, cache).await {
                    Ok(component) => Some(Arc::new(component)),
                    Err(reason) => match self.components.iter().find(|c| c.path == path) {
                        // Served until now: a typo in its manifest, or a
                        // broken build copied over it, must not take it away.
                        Some(previous) => {
                            error!(
                                file = %path.display(),
                                "keeping the previous version of the component, its new version cannot be loaded: {reason}"
                            );
                            Some(previous.clone())
                        }
                        None => {
                            warn!(file = %path.display(), "skipping component: {reason}");
                            None
                        }
                    },
                }
            });
        // Several at once (reading, compiling and listing each take
        // milliseconds, and mostly one core), kept in file-name order.
        let components: Vec<_> = futures_util::stream::iter(loads)
            .buffered(parallel_loads())
            .filter_map(std::future::ready)
            .collect()
            .await;
        Registry::assemble(Some(directory), components)
    }

    /// The tools directory as it was read for this registry, if it was
    /// loaded from one: what a watcher compares the directory with.
    pub fn directory(&self) -> Option<&DirectoryStamp> {
        self.directory.as_ref()
    }

    /// Each component file of the tools directory as it was read for this
    /// registry, with its stamp (none for a registry not loaded from one).
    pub(crate) fn component_files(&self) -> &[(PathBuf, Option<ComponentStamp>)] {
        self.directory()
            .map(DirectoryStamp::files)
            .unwrap_or_default()
    }

    /// Lists the component at `path` again (it reported that a list
    /// changed): runs its guest's list functions, and leaves `self` as it
    /// is. Swap the result in with [`Registry::with_relisted`]. Fails if the
    /// component is not loaded here or listing it fails.
    pub async fn relist(&self, runtime: &Runtime, path: &Path) -> anyhow::Result<Relisted> {
        let Some(from) = self.components.iter().find(|c| c.path == path) else {
            bail!("{} is no longer loaded", path.display());
        };
        let relisted = from
            .relist(runtime)
            .await
            .map_err(|reason| anyhow::anyhow!("{}: {reason}", path.display()))?;
        Ok(Relisted {
            from: from.clone(),
            relisted: Arc::new(relisted),
        })
    }

    /// This registry with `relisted` swapped in, or `None` if the version of
    /// the component it was listed from is no longer the one loaded here (a
    /// reload replaced or removed the file since: what it loaded is newer).
    /// Swapping the same relist in again is harmless: the registry that
    /// already holds it holds it still. Fails if the new lists clash with
    /// another component's.
    pub fn with_relisted(&self, relisted: &Relisted) -> anyhow::Result<Option<Registry>> {
        let mut components = self.components.clone();
        let same_version = components
            .iter_mut()
            .find(|c| Arc::ptr_eq(c, &relisted.from) || Arc::ptr_eq(c, &relisted.relisted));
        let Some(slot) = same_version else {
            return Ok(None);
        };
        *slot = relisted.relisted.clone();
        Registry::assemble(self.directory.clone(), components).map(Some)
    }

    /// Indexes what `components` (read from `directory`) serve; fails on a
    /// name or URI served twice.
    fn assemble(
        directory: Option<DirectoryStamp>,
        components: Vec<Arc<Component>>,
    ) -> anyhow::Result<Registry> {
        check_grants(&components)?;
        let mut registry = Registry {
            directory,
            ..Registry::default()
        };
        for component in &components {
            let prefix = &*component.checked.policy().name_prefix;
            for tool in &component.tools {
                let key = tool.listed.name.as_str();
                insert(
                    &mut registry.tools,
                    &mut registry.tool_index,
                    "tool",
                    Named::Prefixed { key, prefix },
                    tool.clone(),
                    component,
                )?;
            }
            let listing = &component.listing;
            for prompt in &listing.prompts {
                let key = prompt.name.as_str();
                insert(
                    &mut registry.prompts,
                    &mut registry.prompt_index,
                    "prompt",
                    Named::Prefixed { key, prefix },
                    Arc::new(prompt.clone()),
                    component,
                )?;
            }
            for resource in &listing.resources {
                let key = resource.uri.as_str();
                insert(
                    &mut registry.resources,
                    &mut registry.resource_index,
                    "resource",
                    Named::Uri(key),
                    Arc::new(resource.clone()),
                    component,
                )?;
            }
            for listed in &listing.templates {
                let key = listed.uri_template.as_str();
                if let Some(other) = registry.templates.iter().find(|t| &*t.key == key) {
                    bail!(clash(
                        "resource template",
                        Named::Uri(key),
                        other.source(),
                        &component.path
                    ));
                }
                let parsed = UriTemplate::parse(key)
                    .map_err(|why| anyhow::anyhow!("resource template `{key}`: {why}"))?;
                let key: Arc<str> = key.into();
                registry.templates.push(Served {
                    item: Template {
                        listed: listed.clone(),
                        parsed,
                    },
                    own_key: key.clone(),
                    key,
                    component: component.clone(),
                });
            }
        }
        for component in &components {
            for skill in &component.skills {
                let index = registry.skills.len();
                insert(
                    &mut registry.skills,
                    &mut registry.skill_index,
                    "skill",
                    Named::Uri(&skill.uri),
                    skill.clone(),
                    component,
                )?;
                for (i, file) in skill.files.iter().enumerate() {
                    if let Some(&other) = registry.resource_index.get(&file.uri) {
                        let other = registry.resources[other].source();
                        bail!(clash(
                            "resource",
                            Named::Uri(&file.uri),
                            other,
                            &component.path
                        ));
                    }
                    registry.skill_files.insert(file.uri.clone(), (index, i));
                }
            }
        }
        registry.components = components;
        Ok(registry)
    }

    /// How many components are loaded.
    pub fn component_count(&self) -> usize {
        self.components.len()
    }

    /// Every tool, ordered by component file name, then in the order the
    /// component listed them.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// The tool called `name`, if any.
    pub fn find(&self, name: &str) -> Option<&ToolEntry> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Every prompt, in the same order as tools.
    pub fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }

    /// The prompt called `name`, if any.
    pub fn find_prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    /// Every listed resource, in the same order as tools.
    pub fn resources(&self) -> &[ResourceEntry] {
        &self.resources
    }

    /// Every resource template, in the same order as tools.
    pub fn templates(&self) -> &[TemplateEntry] {
        &self.templates
    }

    /// Every skill, in the same order as tools, then by name.
    pub fn skills(&self) -> &[SkillEntry] {
        &self.skills
    }

    /// The skill whose `SKILL.md` is at `uri`, if any.
    pub fn find_skill(&self, uri: &str) -> Option<&SkillEntry> {
        self.skill_index.get(uri).map(|&i| &self.skills[i])
    }

    /// The skill file at `uri`, and its skill, if any.
    pub fn find_skill_file(&self, uri: &str) -> Option<(&SkillEntry, &SkillFile)> {
        let &(skill, file) = self.skill_files.get(uri)?;
        let skill = &self.skills[skill];
        Some((skill, &skill.item.files[file]))
    }

    /// The skill `uri` names a place in (`skill://<skill>[/<path>]`), and
    /// the path inside it (`""`: its root), if that skill is served.
    pub fn skill_place<'u>(&self, uri: &'u str) -> Option<(&SkillEntry, &'u str)> {
        let rest = uri.strip_prefix(skills::SCHEME)?;
        let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
        let skill = self.find_skill(&format!("{}{name}/{}", skills::SCHEME, skills::SKILL_FILE))?;
        Some((skill, path.trim_end_matches('/')))
    }

    /// The component that reads `uri`: the one that lists it, else the one
    /// with the first template it matches (with the variables' values).
    pub fn resolve_resource(
        &self,
        uri: &str,
    ) -> Option<(Served<()>, Option<wit_resources::TemplateMatch>)> {
        if let Some(&i) = self.resource_index.get(uri) {
            return Some((self.resources[i].unit(), None));
        }
        self.templates.iter().find_map(|template| {
            let variables = template.item.parsed.matches(uri)?;
            let matched = wit_resources::TemplateMatch {
                uri_template: template.item.listed.uri_template.clone(),
                variables,
            };
            Some((template.unit(), Some(matched)))
        })
    }

    /// The component that completes arguments of `target` (a prompt, or a
    /// resource template by its `uri-template`), if it is served.
    pub fn completer(&self, target: &wit_completions::CompletionTarget) -> Option<Served<()>> {
        match target {
            wit_completions::CompletionTarget::Prompt(name) => {
                self.find_prompt(name).map(Served::unit)
            }
            wit_completions::CompletionTarget::ResourceTemplate(uri_template) => self
                .templates
                .iter()
                .find(|t| &*t.key == uri_template)
                .map(Served::unit),
        }
    }
}

impl<T> Served<T> {
    /// The same component and key, without the item.
    fn unit(&self) -> Served<()> {
        Served {
            item: (),
            key: self.key.clone(),
            own_key: self.own_key.clone(),
            component: self.component.clone(),
        }
    }
}

/// How an item is served: by a name its component's name prefix may
/// begin, or by a URI, never prefixed.
#[derive(Clone, Copy)]
enum Named<'a> {
    /// A tool's or a prompt's name as served, and the prefix it carries.
    Prefixed { key: &'a str, prefix: &'a str },
    /// A resource's or a template's URI, or a skill's.
    Uri(&'a str),
}

impl<'a> Named<'a> {
    /// The name or URI as served.
    fn key(self) -> &'a str {
        match self {
            Named::Prefixed { key, .. } | Named::Uri(key) => key,
        }
    }

    /// The name or URI as its component knows it.
    fn own_key(self) -> &'a str {
        match self {
            Named::Prefixed { key, prefix } => key.strip_prefix(prefix).unwrap_or(key),
            Named::Uri(key) => key,
        }
    }
}

/// Adds one item, refusing a key another component already serves.
fn insert<T>(
    entries: &mut Vec<Served<T>>,
    index: &mut HashMap<String, usize>,
    what: &str,
    named: Named<'_>,
    item: T,
    component: &Arc<Component>,
) -> anyhow::Result<()> {
    let key = named.key();
    if let Some(&other) = index.get(key) {
        bail!(clash(what, named, entries[other].source(), &component.path));
    }
    index.insert(key.to_owned(), entries.len());
    let key: Arc<str> = key.into();
    let own_key = if named.own_key() == &*key {
        key.clone()
    } else {
        named.own_key().into()
    };
    entries.push(Served {
        item,
        key,
        own_key,
        component: component.clone(),
    });
    Ok(())
}

/// Refuses grants of different components that nest inside a read-write
/// grant (see [`check_nesting`](crate::policy::grants::check_nesting)); each component's own
/// grants were checked when its policy was resolved.
fn check_grants(components: &[Arc<Component>]) -> anyhow::Result<()> {
    let grants = components.iter().flat_map(|component| {
        let policy = component.checked.policy();
        let owner = policy.manifest.as_deref().unwrap_or(&component.path);
        policy.dirs.iter().map(move |dir| (owner, dir))
    });
    crate::policy::grants::check_nesting(grants).map_err(anyhow::Error::msg)
}

/// Why a registry cannot serve `named` of `second`: `first` serves it
/// already. For a name, says how to serve both.
fn clash(what: &str, named: Named<'_>, first: &Path, second: &Path) -> String {
    let mut why = format!(
        "{what} `{}` is served by both {} and {}; names and URIs must be unique across the tools directory",
        named.key(),
        first.display(),
        second.display()
    );
    if let Named::Prefixed { .. } = named {
        why.push_str(&format!(
            " (to serve both, give one of them a prefix for its names in its manifest, e.g. name-prefix = \"x_\" in {})",
            Manifest::path_for(second).display()
        ));
    }
    why
}

/// Loads the component at `path` on its own (using, and filling, the
/// compile cache in `cache_dir` if given) and describes it: exported
/// interfaces, what it serves, and its effective policy. The error is why
/// it would be skipped.
pub async fn describe_component(
    runtime: &Arc<Runtime>,
    path: &Path,
    cache_dir: Option<&Path>,
) -> Result<Vec<String>, String> {
    let cache = cache_dir.map(|dir| CompileCache::new(runtime.engine(), dir));
    let component = Component::load(runtime, path, cache.as_ref()).await?;
    let footprint = {
        let (path, limit) = (path.to_owned(), runtime.limits().max_component_bytes);
        tokio::task::spawn_blocking(move || footprint::Footprint::of(&path, limit))
            .await
            .map_err(|err| format!("reading it failed unexpectedly: {err}"))??
    };
    let listing = &component.listing;
    let mut lines = vec![
        format!(
            "size: {} ({} bytes, {} core modules)",
            format_size_approx(footprint.file_bytes),
            footprint.file_bytes,
            footprint.core_modules
        ),
        format!(
            "memory: starts with {} of linear memory; may grow to {} (its memory limit)",
            format_size_approx(footprint.initial_memory_bytes),
            format_size(component.checked.policy().limits.memory_bytes as u64)
        ),
    ];
    match (component.origin, cache) {
        (cache::Origin::Compiled { millis }, _) => lines.push(format!(
            "compile: {millis} ms (the compile cache makes later starts load it instead)"
        )),
        (cache::Origin::Cache, Some(cache)) => lines.push(format!(
            "compile: loaded from the compile cache in {}",
            cache.dir().display()
        )),
        (cache::Origin::Cache, None) => {}
    }
    lines.push(format!(
        "exports: {}",
        component.checked.exported_interfaces().join(", ")
    ));
    for tool in &component.tools {
        let tool = &tool.listed;
        lines.push(format!("tool {}: {}", tool.name, tool.description));
    }
    for prompt in &listing.prompts {
        lines.push(format!("prompt {}: {}", prompt.name, prompt.description));
    }
    for resource in &listing.resources {
        lines.push(format!("resource {} ({})", resource.uri, resource.name));
    }
    for template in &listing.templates {
        lines.push(format!(
            "resource template {} ({})",
            template.uri_template, template.name
        ));
    }
    for skill in &component.skills {
        lines.push(format!("skill {} ({} files)", skill.uri, skill.files.len()));
    }
    lines.extend(
        component
            .checked
            .policy()
            .describe()
            .into_iter()
            .map(|line| format!("policy: {line}")),
    );
    Ok(lines)
}

/// Most components loaded at once: one per core the process may use, and
/// no more than [`MAX_PARALLEL_LOADS`] (compiling a large component takes
/// hundreds of megabytes while it runs).
fn parallel_loads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(MAX_PARALLEL_LOADS)
}

/// See [`parallel_loads`].
const MAX_PARALLEL_LOADS: usize = 4;

/// The `*.wasm` files directly in `dir`, sorted by file name.
pub(crate) fn wasm_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the tools directory {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry =
            entry.with_context(|| format!("cannot read the tools directory {}", dir.display()))?;
        let path = entry.path();
        // Follows symlinks: a link to a component is a component.
        if path.extension().is_some_and(|ext| ext == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::RuntimeLimits;

    fn runtime() -> Arc<Runtime> {
        Runtime::new(RuntimeLimits {
            max_concurrent_calls: 2,
            ..RuntimeLimits::default()
        })
        .unwrap()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("airlock-registry-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn missing_dir_is_an_error() {
        let dir = std::env::temp_dir().join("airlock-registry-does-not-exist");
        let err = Registry::load(&runtime(), &dir, None).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("cannot read the tools directory"), "{msg}");
        assert!(msg.contains("airlock-registry-does-not-exist"), "{msg}");
    }

    #[tokio::test]
    async fn empty_dir_loads_nothing() {
        let dir = temp_dir("empty");
        std::fs::write(dir.join("notes.txt"), "not a tool").unwrap();
        let registry = Registry::load(&runtime(), &dir, None).await.unwrap();
        assert!(registry.tools().is_empty());
        assert!(registry.find("anything").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn non_components_are_skipped() {
        let dir = temp_dir("junk");
        std::fs::write(dir.join("a-text.wasm"), "hello").unwrap();
        // The smallest core module: magic + version 1.
        std::fs::write(dir.join("b-core.wasm"), b"\0asm\x01\0\0\0").unwrap();
        // A component header with nothing valid after it.
        std::fs::write(dir.join("c-broken.wasm"), b"\0asm\x0d\0\x01\0\xff\xff").unwrap();
        let registry = Registry::load(&runtime(), &dir, None).await.unwrap();
        assert!(registry.tools().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tool_whose_input_schema_does_not_compile_refuses_its_component() {
        use super::component::checked_listing;
        let tool = |name: &str, input_schema: serde_json::Value| wit::Tool {
            name: name.into(),
            title: None,
            description: "does things".into(),
            input_schema: input_schema.to_string(),
            output_schema: None,
            annotations: None,
            task_support: wit::TaskSupport::Never,
            meta: None,
        };
        let listing = |tools| crate::runtime::Listing {
            tools,
            ..Default::default()
        };
        let good = tool(
            "good",
            serde_json::json!({"type": "object", "required": ["a"]}),
        );
        let (tools, rest) = checked_listing(&runtime(), listing(vec![good.clone()]), "").unwrap();
        assert_eq!(tools.len(), 1);
        assert!(
            rest.tools.is_empty(),
            "the tools are moved out of the listing"
        );
        assert!(
            tools[0]
                .check_arguments(&serde_json::json!({}), &ViolationLimits::default())
                .is_err()
        );
        let cases = [
            (
                serde_json::json!({"type": "object", "properties": {"a": {"type": "text"}}}),
                "text",
            ),
            (
                serde_json::json!({"type": "object", "properties": {
                    "a": {"$ref": "https://example.com/schemas/a.json"}
                }}),
                "https://example.com/schemas/a.json",
            ),
        ];
        for (schema, named) in cases {
            let tools = vec![good.clone(), tool("bad", schema)];
            let err = checked_listing(&runtime(), listing(tools), "").unwrap_err();
            assert!(
                err.starts_with("tool `bad`: its input-schema is not a usable JSON Schema: ")
                    && err.contains(named),
                "{err}"
            );
        }
    }

    #[test]
    fn headers() {
        use super::component::check_header;
        assert!(
            check_header(b"hello")
                .unwrap_err()
                .contains("not a WebAssembly")
        );
        assert!(
            check_header(b"\0asm\x01\0\0\0")
                .unwrap_err()
                .contains("core WebAssembly module")
        );
        assert!(check_header(b"\0asm\x0d\0\x01\0").is_ok());
    }
}
