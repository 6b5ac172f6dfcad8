//! The tools directory: every `*.wasm` component in it, compiled once,
//! linked once, and listed once.
//!
//! Loading a directory is forgiving about single components and strict about
//! the whole: a file that is not a usable `tool-provider` component (not a
//! component at all, fails to compile, exports another world, traps in
//! `list-tools`, or describes its tools badly) is skipped with one `warn!`
//! line naming the file and the reason, and the others still load. Two
//! components that export the same tool name, however, make the load fail:
//! which one a client would get would be an accident of file names.
//!
//! For each component the registry keeps one pre-instantiated handle
//! (wasmtime's `InstancePre`, via the generated `ToolProviderPre`):
//! imports resolved, exports looked up and type-checked once, so a call only
//! has to make a fresh instance from it (see [`runtime`](crate::runtime)).

pub mod cache;
pub mod validate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use tracing::{info, warn};

use self::cache::{CompileCache, Origin};
use crate::runtime::{CallError, CheckedComponent, EventSink, Runtime, ToolProviderPre, wit};

pub use self::cache::default_cache_dir;

/// Every tool of every component loaded from the tools directory.
#[derive(Debug)]
pub struct Registry {
    tools: Vec<ToolEntry>,
    by_name: HashMap<String, usize>,
}

/// One tool, and the component that provides it.
#[derive(Clone)]
pub struct ToolEntry {
    /// The tool as the component described it (validated).
    pub tool: wit::Tool,
    name: Arc<str>,
    component: Arc<LoadedComponent>,
}

/// A compiled, linked component.
struct LoadedComponent {
    path: PathBuf,
    checked: CheckedComponent,
}

impl Registry {
    /// Loads every `*.wasm` directly in `dir` (sorted by file name), using
    /// (and filling) the compile cache in `cache_dir` if given.
    ///
    /// Fails if `dir` cannot be read or if two components export the same
    /// tool name; skips (with a warning) components that cannot be used.
    pub async fn load(
        runtime: &Arc<Runtime>,
        dir: &Path,
        cache_dir: Option<&Path>,
    ) -> anyhow::Result<Registry> {
        let files = wasm_files(dir)?;
        let cache = cache_dir.map(|d| CompileCache::new(runtime.engine(), d));
        let mut tools = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for path in files {
            let (component, component_tools) = match load_component(runtime, &path, &cache).await {
                Ok(loaded) => loaded,
                Err(reason) => {
                    warn!(file = %path.display(), "skipping component: {reason}");
                    continue;
                }
            };
            for tool in component_tools {
                if let Some(&other) = by_name.get(&tool.name) {
                    let other: &ToolEntry = &tools[other];
                    bail!(
                        "tool `{}` is exported by both {} and {}; tool names must be unique across the tools directory",
                        tool.name,
                        other.source().display(),
                        path.display()
                    );
                }
                by_name.insert(tool.name.clone(), tools.len());
                tools.push(ToolEntry {
                    name: tool.name.as_str().into(),
                    tool,
                    component: component.clone(),
                });
            }
        }
        Ok(Registry { tools, by_name })
    }

    /// Every tool, ordered by component file name, then in the order the
    /// component listed them.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// The tool called `name`, if any.
    pub fn find(&self, name: &str) -> Option<&ToolEntry> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }
}

impl ToolEntry {
    /// The component file that provides this tool.
    pub fn source(&self) -> &Path {
        &self.component.path
    }

    /// Runs one round of a call of this tool in a fresh instance.
    ///
    /// `arguments_json` is passed to the guest as is (the protocol layer has
    /// validated it). Guest `log` and `progress` reports go to `events`, if
    /// given. The returned outcome's strings are the guest's own: JSON texts
    /// in it are not validated here.
    pub async fn call(
        &self,
        runtime: &Runtime,
        arguments_json: &str,
        round: wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit::CallOutcome, CallError> {
        runtime
            .call_tool(
                &self.component.checked,
                self.name.clone(),
                arguments_json,
                &round,
                events,
            )
            .await
    }
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.tool.name)
            .field("source", &self.component.path)
            .finish_non_exhaustive()
    }
}

/// The `*.wasm` files directly in `dir`, sorted by file name.
fn wasm_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
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

/// Compiles (or loads from the cache), links and lists one component. The
/// error is the reason to skip it.
async fn load_component(
    runtime: &Arc<Runtime>,
    path: &Path,
    cache: &Option<CompileCache>,
) -> Result<(Arc<LoadedComponent>, Vec<wit::Tool>), String> {
    // Reading and compiling block for tens of milliseconds: keep them off
    // the async worker threads.
    let compiled = {
        let engine = runtime.engine().clone();
        let cache = cache.clone();
        let path = path.to_owned();
        // Keep the caller's subscriber and span for the cache's log lines.
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                span.in_scope(|| compile(&engine, &path, cache.as_ref()))
            })
        })
        .await
        .map_err(|err| format!("compiling it failed unexpectedly: {err}"))??
    };
    let (component, origin) = compiled;
    let pre = runtime
        .linker()
        .instantiate_pre(&component)
        .map_err(|err| format!("it needs imports Airlock does not provide: {}", chain(&err)))?;
    let pre = ToolProviderPre::new(pre).map_err(|err| {
        format!(
            "it does not export `airlock:mcp/tools` (world `tool-provider`): {}",
            chain(&err)
        )
    })?;
    let label: Arc<str> = file_name(path).into();
    let (tools, checked) =
        runtime
            .list_tools(&pre, label)
            .await
            .map_err(|failure| match failure.stderr {
                Some(stderr) => format!(
                    "list-tools failed: {} (stderr: {stderr})",
                    describe(&failure.error)
                ),
                None => format!("list-tools failed: {}", describe(&failure.error)),
            })?;
    validate::validate_tools(&tools)?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    match origin {
        Origin::Cache => info!(
            file = %path.display(),
            tools = %names.join(", "),
            "loaded component (from cache)"
        ),
        Origin::Compiled { millis } => info!(
            file = %path.display(),
            tools = %names.join(", "),
            "loaded component (compiled in {millis} ms)"
        ),
    }
    let component = Arc::new(LoadedComponent {
        path: path.to_owned(),
        checked,
    });
    Ok((component, tools))
}

/// Reads and compiles one file (blocking).
fn compile(
    engine: &wasmtime::Engine,
    path: &Path,
    cache: Option<&CompileCache>,
) -> Result<(wasmtime::component::Component, Origin), String> {
    let wasm = std::fs::read(path).map_err(|err| format!("cannot read it: {err}"))?;
    check_header(&wasm)?;
    match cache {
        Some(cache) => cache
            .load_or_compile(engine, &wasm, path)
            .map_err(|err| format!("it fails to compile: {err:#}")),
        None => {
            let started = std::time::Instant::now();
            let component = wasmtime::component::Component::new(engine, &wasm)
                .map_err(|err| format!("it fails to compile: {}", chain(&err)))?;
            let millis = started.elapsed().as_millis();
            Ok((component, Origin::Compiled { millis }))
        }
    }
}

/// Tells a component from a core module (or anything else) by its header,
/// for a clearer message than the parser's.
fn check_header(wasm: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    const CORE_MODULE: [u8; 4] = [1, 0, 0, 0];
    const COMPONENT: [u8; 4] = [0x0d, 0, 1, 0];
    if wasm.len() < 8 || &wasm[..4] != MAGIC {
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

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
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
    fn headers() {
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
