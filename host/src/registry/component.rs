//! One component file: read, compiled (or taken from the compile cache),
//! linked, and listed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::info;

use super::Tool;
use super::cache::{CompileCache, Origin};
use super::file_stamp::FileStamp;
use super::skills::{self, Skill, SkillLimits};
use super::validate::{self, ListingLimits};
use crate::access::Kind;
use crate::policy::Policy;
use crate::policy::manifest::Manifest;
use crate::runtime::{
    CallError, CheckedComponent, ListError, Listing, Runtime, wit, wit_resources,
};
use crate::untrusted_file::{FileError, RegularFile};

/// A compiled, linked and listed component.
pub(crate) struct Component {
    pub(crate) path: PathBuf,
    /// The file, its manifest and its skills as they were when loaded, to
    /// tell whether any changed since.
    pub(crate) stamp: ComponentStamp,
    pub(crate) checked: CheckedComponent,
    /// Its tools (validated), their input schemas compiled.
    pub(crate) tools: Vec<Arc<Tool>>,
    /// What else it serves (validated): its prompts, resources and
    /// templates. Its tools were moved into `tools`.
    pub(crate) listing: Listing,
    /// Whether it was compiled now (and how long that took) or taken from
    /// the cache.
    pub(crate) origin: Origin,
    /// The skills of its skills directory, read with it.
    pub(crate) skills: Vec<Arc<Skill>>,
}

/// The stamps of a component file, of its manifest (`None`: no manifest)
/// and of every entry of its skills directory.
pub(crate) type ComponentStamp = (FileStamp, Option<FileStamp>, Vec<(PathBuf, FileStamp)>);

/// The stamp of the component at `path`, of its manifest and of its
/// skills, now.
pub(crate) fn component_stamp(path: &Path) -> std::io::Result<ComponentStamp> {
    let manifest = FileStamp::of(&Manifest::path_for(path)).ok();
    Ok((FileStamp::of(path)?, manifest, skills::tree_stamp(path)))
}

impl Component {
    /// Reads the manifest and the file, compiles (or loads from the cache),
    /// links and lists the component at `path`. The error is the reason to
    /// skip it, for one log line.
    pub(crate) async fn load(
        runtime: &Arc<Runtime>,
        path: &Path,
        cache: Option<&CompileCache>,
    ) -> Result<Component, String> {
        // Everything that touches the files (the manifest, its grants, the
        // component) blocks, on a file system anyone may have filled: keep
        // it off the threads that serve requests.
        let Compiled {
            stamp,
            policy,
            code,
            origin,
            skills,
        } = {
            let runtime = runtime.clone();
            let cache = cache.cloned();
            let path = path.to_owned();
            // Keep the caller's subscriber and span for the cache's log lines.
            let dispatch = tracing::dispatcher::get_default(|d| d.clone());
            let span = tracing::Span::current();
            tokio::task::spawn_blocking(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    span.in_scope(|| read_and_compile(&runtime, &path, cache.as_ref()))
                })
            })
            .await
            .map_err(|err| format!("loading it failed unexpectedly: {err}"))??
        };
        let policy = Arc::new(policy);
        runtime.check_contract(&code)?;
        let pre = runtime
            .instance_pre(&code, &policy)
            .map_err(|err| format!("it needs imports Airlock does not provide: {}", chain(&err)))?;
        let (listing, checked) = runtime
            .list_component(&pre, Arc::from(path), policy.clone())
            .await
            .map_err(list_failure)?;
        let (tools, listing) = checked_listing(runtime, listing, &policy.name_prefix)?;
        let skills = with_served_skills(runtime, path, &checked, &listing, skills).await;
        check_access_rules(&policy, &tools, &listing, &skills)?;
        let summary = summary(&tools, &listing, &skills);
        match origin {
            Origin::Cache => {
                info!(file = %path.display(), serves = %summary, "loaded component (from cache)")
            }
            Origin::Compiled { millis } => info!(
                file = %path.display(),
                serves = %summary,
                "loaded component (compiled in {millis} ms)"
            ),
        }
        Ok(Component {
            path: path.to_owned(),
            stamp,
            checked,
            tools,
            listing,
            origin,
            skills,
        })
    }

    /// Lists this component again (it reported a change), keeping its
    /// compiled code, its policy and the limits that span calls.
    pub(crate) async fn relist(&self, runtime: &Runtime) -> Result<Component, String> {
        let listing = runtime
            .relist_component(&self.checked)
            .await
            .map_err(list_failure)?;
        let (tools, listing) =
            checked_listing(runtime, listing, &self.checked.policy().name_prefix)?;
        let from_directory = self
            .skills
            .iter()
            .filter(|skill| !skill.served_by_component)
            .cloned()
            .collect();
        let skills =
            with_served_skills(runtime, &self.path, &self.checked, &listing, from_directory).await;
        Ok(Component {
            path: self.path.clone(),
            stamp: self.stamp.clone(),
            checked: self.checked.clone(),
            tools,
            listing,
            origin: self.origin,
            skills,
        })
    }
}

/// `from_directory` (the skills of the component's skills directory), and
/// after them the skills the component serves itself: each resource it
/// lists at `skill://<name>/SKILL.md`, read once now (a first round, no
/// client capabilities) for its frontmatter. A skill that cannot be read,
/// whose frontmatter or entry breaks a rule or a limit, that the skills
/// directory has too, or beyond `--max-skills` is skipped with one warning
/// naming the component and the skill; the component and its other skills
/// still load.
async fn with_served_skills(
    runtime: &Runtime,
    path: &Path,
    checked: &CheckedComponent,
    listing: &Listing,
    mut skills: Vec<Arc<Skill>>,
) -> Vec<Arc<Skill>> {
    let served = listing
        .resources
        .iter()
        .filter_map(|resource| Some((skills::skill_md_name(&resource.uri)?, &resource.uri)));
    let limits = SkillLimits::of(runtime.limits());
    for (name, uri) in served {
        let skipped = |reason: &str| {
            tracing::warn!(file = %path.display(), skill = uri.as_str(), "skipping skill: {reason}");
        };
        if skills.len() >= runtime.limits().max_skills {
            skipped(&format!(
                "more than --max-skills {} in one component",
                runtime.limits().max_skills
            ));
            continue;
        }
        if skills.iter().any(|skill| skill.name == name) {
            skipped("its skills directory has a skill of that name too");
            continue;
        }
        match read_skill_md(runtime, checked, uri).await {
            Ok(text) => match skills::served_by_component(name, &text, limits) {
                Ok(skill) => skills.push(Arc::new(skill)),
                Err(reason) => skipped(&reason),
            },
            Err(reason) => skipped(&reason),
        }
    }
    skills
}

/// The text of the `SKILL.md` the component serves at `uri`.
async fn read_skill_md(
    runtime: &Runtime,
    checked: &CheckedComponent,
    uri: &str,
) -> Result<String, String> {
    let round = wit::Round::first(wit::ClientCapabilities::NONE);
    let outcome = runtime
        .read_resource(checked, uri.into(), None, &round, None)
        .await
        .map_err(|err| format!("reading it failed: {}", describe(&err)))?;
    let wit_resources::ReadOutcome::Complete(contents) = outcome else {
        return Err("reading it did not complete in one round".to_owned());
    };
    contents
        .into_iter()
        .find_map(|part| match part.body {
            wit::ResourceBody::Text(text) => Some(text),
            wit::ResourceBody::Blob(_) => None,
        })
        .ok_or_else(|| "reading it gave no text".to_owned())
}

/// Names its tools and prompts as they are served (`name_prefix` before
/// each, see [`Policy::name_prefix`]), validates what a component lists and
/// compiles its tools' input schemas; returns the tools, and the rest of
/// the listing. The error says what is wrong with which item.
pub(super) fn checked_listing(
    runtime: &Runtime,
    mut listing: Listing,
    name_prefix: &str,
) -> Result<(Vec<Arc<Tool>>, Listing), String> {
    if !name_prefix.is_empty() {
        let names = listing.tools.iter_mut().map(|tool| &mut tool.name);
        let names = names.chain(listing.prompts.iter_mut().map(|prompt| &mut prompt.name));
        for name in names {
            name.insert_str(0, name_prefix);
        }
    }
    validate::validate_listing(&listing, &ListingLimits::of(runtime.limits()))?;
    let tools = std::mem::take(&mut listing.tools)
        .into_iter()
        .map(|tool| Tool::compile(tool).map(Arc::new))
        .collect::<Result<_, _>>()?;
    Ok((tools, listing))
}

/// What a component serves, for its log line.
fn summary(tools: &[Arc<Tool>], listing: &Listing, skills: &[Arc<Skill>]) -> String {
    let mut parts = Vec::new();
    let names = |kind: &str, names: Vec<&str>| {
        (!names.is_empty()).then(|| format!("{kind} {}", names.join(", ")))
    };
    parts.extend(names(
        "tools",
        tools.iter().map(|t| t.listed.name.as_str()).collect(),
    ));
    parts.extend(names(
        "prompts",
        listing.prompts.iter().map(|p| p.name.as_str()).collect(),
    ));
    parts.extend(names(
        "resources",
        listing.resources.iter().map(|r| r.uri.as_str()).collect(),
    ));
    parts.extend(names(
        "templates",
        listing
            .templates
            .iter()
            .map(|t| t.uri_template.as_str())
            .collect(),
    ));
    parts.extend(names(
        "skills",
        skills.iter().map(|s| s.name.as_str()).collect(),
    ));
    parts.join("; ")
}

fn list_failure(failure: ListError) -> String {
    match failure.stderr {
        Some(stderr) => format!(
            "listing it failed: {} (stderr: {stderr})",
            describe(&failure.error)
        ),
        None => format!("listing it failed: {}", describe(&failure.error)),
    }
}
/// Refuses access rules of the manifest that name an item the component
/// does not serve (a misspelt name would leave the item to the
/// component's rule, or to none). The manifest names tools and prompts as
/// the component does, without the name prefix.
fn check_access_rules(
    policy: &Policy,
    tools: &[Arc<Tool>],
    listing: &Listing,
    skills: &[Arc<Skill>],
) -> Result<(), String> {
    let own = |served: &str, key: &str| served.strip_prefix(&*policy.name_prefix) == Some(key);
    policy
        .access
        .check_served(|kind, key| match kind {
            Kind::Tool => tools.iter().any(|t| own(&t.listed.name, key)),
            Kind::Prompt => listing.prompts.iter().any(|p| own(&p.name, key)),
            Kind::Resource => {
                listing.resources.iter().any(|r| r.uri == key)
                    || listing.templates.iter().any(|t| t.uri_template == key)
                    || skills.iter().any(|s| s.uri == key)
            }
        })
        .map_err(|why| match &policy.manifest {
            Some(manifest) => format!("{}: {why}", manifest.display()),
            None => why,
        })
}

/// What loading one file takes from the file system, before it is linked
/// and listed.
struct Compiled {
    /// The file and its manifest as they were before they were read.
    stamp: ComponentStamp,
    /// Its policy, from its manifest.
    policy: Policy,
    /// Its compiled code.
    code: wasmtime::component::Component,
    /// Whether it was compiled now or taken from the cache.
    origin: Origin,
    /// Its skills, read from its skills directory.
    skills: Vec<Arc<Skill>>,
}

/// Reads the manifest and the file at `path`, and compiles it (blocking).
fn read_and_compile(
    runtime: &Runtime,
    path: &Path,
    cache: Option<&CompileCache>,
) -> Result<Compiled, String> {
    let stamp = component_stamp(path).map_err(|err| format!("cannot read it: {err}"))?;
    let policy = Policy::load_for(path, &runtime.policy_context())?;
    let wasm = read_component(path, runtime.limits().max_component_bytes)?;
    let (code, origin) = compile(runtime.engine(), &wasm, path, cache)?;
    let skills = skills::load(path, SkillLimits::of(runtime.limits()));
    Ok(Compiled {
        stamp,
        policy,
        code,
        origin,
        skills,
    })
}

/// The bytes of the component file at `path`: a regular file of at most
/// `limit` bytes (`--max-component-size`) that starts with a component's
/// header, checked before the rest is read (blocking).
pub(super) fn read_component(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let not_read = |err: FileError| format!("not read: {err}");
    let mut file = RegularFile::open(path).map_err(not_read)?;
    file.check_len(limit)
        .map_err(|err| format!("not read: {err} (--max-component-size)"))?;
    let mut wasm = file.read_head(HEADER_LEN).map_err(not_read)?;
    check_header(&wasm)?;
    file.read_rest(&mut wasm, limit)
        .map_err(|err| format!("not read: {err} (--max-component-size)"))?;
    Ok(wasm)
}

/// Compiles one component (blocking), or loads it from the cache.
fn compile(
    engine: &wasmtime::Engine,
    wasm: &[u8],
    path: &Path,
    cache: Option<&CompileCache>,
) -> Result<(wasmtime::component::Component, Origin), String> {
    match cache {
        Some(cache) => cache
            .load_or_compile(engine, wasm, path)
            .map_err(|err| format!("it fails to compile: {err:#}")),
        None => super::cache::compile(engine, wasm, path)
            .map_err(|err| format!("it fails to compile: {err:#}")),
    }
}

/// Bytes of a WebAssembly header: the magic and the version (and layer).
const HEADER_LEN: usize = 8;

/// Tells a component from a core module (or anything else) by its header,
/// for a clearer message than the parser's.
pub(super) fn check_header(wasm: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    const CORE_MODULE: [u8; 4] = [1, 0, 0, 0];
    const COMPONENT: [u8; 4] = [0x0d, 0, 1, 0];
    if wasm.len() < HEADER_LEN || &wasm[..4] != MAGIC {
        return Err("it is not a WebAssembly file".to_owned());
    }
    match wasm[4..8].try_into() {
        Ok(CORE_MODULE) => Err(
            "it is a core WebAssembly module, not a component (build for the wasm32-wasip2 target, or wrap it with `wasm-tools component new`)"
                .to_owned(),
        ),
        // Other versions of the component layer: let wasmtime say what it thinks.
        Ok(COMPONENT) | Ok(_) => Ok(()),
        Err(_) => unreachable!("slice of length 4"),
    }
}

/// A wasmtime error and its causes on one line.
fn chain(err: &wasmtime::Error) -> String {
    err.chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

/// A call error with its detail, for the log.
fn describe(err: &CallError) -> String {
    match err {
        CallError::Trapped { detail } | CallError::Instantiate { detail } => {
            format!("{err}: {detail}")
        }
        other => other.to_string(),
    }
}
