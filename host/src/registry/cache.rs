//! Compiled components on disk, so a restart does not recompile every tool.
//!
//! Compiling a 75 KB component with Cranelift takes ~45 ms; loading its
//! compiled artifact takes ~0.1 ms. The cache keeps one `.cwasm` file per
//! (component contents, engine settings) pair:
//!
//! ```text
//! <dir>/<hex SHA-256 of the .wasm bytes>-<hex SHA-256 of the engine's compatibility hash>.cwasm
//! ```
//!
//! An artifact only loads into an engine with the same code generation
//! settings (target, CPU features, epoch interruption, memory layout,
//! wasmtime version...), which is exactly what
//! [`Engine::precompile_compatibility_hash`] covers; changing any of them, or
//! the component, changes the key. Files are written to a temporary name and
//! renamed into place, so a reader never sees half a file and a file, once
//! named, never changes. Any cache failure is logged and the component is
//! compiled as if there were no cache.
//!
//! Artifacts are read into memory and deserialized from there, not mapped
//! with `Component::deserialize_file`: a mapped file that is truncated or
//! rewritten in place by anyone would crash the host (SIGBUS) or change the
//! code under it, and reading costs about a millisecond per component.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use ring::digest;
use tracing::warn;
use wasmtime::Engine;
use wasmtime::component::Component;

/// The default cache directory: `$XDG_CACHE_HOME/airlock`, else
/// `$HOME/.cache/airlock`; `None` if neither variable is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("airlock"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".cache").join("airlock"))
}

/// Where a component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Loaded from a compiled artifact in the cache.
    Cache,
    /// Compiled now, in this many milliseconds.
    Compiled {
        /// Compile time in milliseconds.
        millis: u128,
    },
}

/// The on-disk cache of compiled components for one engine.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
    engine_key: String,
}

impl CompileCache {
    /// A cache in `dir` (created on first write) for artifacts of `engine`.
    pub fn new(engine: &Engine, dir: &Path) -> CompileCache {
        CompileCache {
            dir: dir.to_owned(),
            engine_key: engine_key(engine),
        }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name (without directory) of `wasm`'s compiled artifact.
    pub fn key(&self, wasm: &[u8]) -> String {
        format!(
            "{}-{}",
            crate::hex::encode(digest::digest(&digest::SHA256, wasm).as_ref()),
            self.engine_key
        )
    }

    /// The path of `wasm`'s compiled artifact.
    pub fn path(&self, wasm: &[u8]) -> PathBuf {
        self.dir.join(format!("{}.cwasm", self.key(wasm)))
    }

    /// Loads `wasm`'s artifact from the cache, or compiles `wasm` and stores
    /// the artifact. Cache problems are logged (naming `source`) and never
    /// fail the load; compile errors do.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        source: &Path,
    ) -> anyhow::Result<(Component, Origin)> {
        let path = self.path(wasm);
        match fs::read(&path) {
            Ok(artifact) => {
                // SAFETY: `deserialize` runs the machine code in `artifact`, so
                // it must be an artifact wasmtime produced for a compatible
                // engine. It is:
                // - we only read files in our own cache directory whose names
                //   we derive from the component's SHA-256 and the engine's
                //   compatibility hash, and we write them only from
                //   `Component::serialize` of a component compiled by an
                //   engine with that hash (see `store`); wasmtime also checks
                //   the artifact's header and engine settings when loading;
                // - files are written under a temporary name, synced and
                //   renamed into place, so a reader never sees half a file;
                // - the directory is created private to the user running the
                //   host: anyone who can write into it could equally replace
                //   the host binary, so it is inside the host's trust boundary.
                // We read the file into memory rather than mapping it
                // (`deserialize_file`): a mapped file that someone truncates
                // or rewrites in place (a `cp` over it, a cleaner) would crash
                // the host with SIGBUS or change the code under it; a copy
                // costs about a millisecond per component at start.
                match unsafe { Component::deserialize(engine, &artifact) } {
                    Ok(component) => return Ok((component, Origin::Cache)),
                    Err(err) => warn!(
                        file = %source.display(),
                        cache = %path.display(),
                        error = %err,
                        "ignoring unusable compiled artifact in the cache; compiling again"
                    ),
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => warn!(
                file = %source.display(),
                cache = %path.display(),
                error = %err,
                "cannot read the compiled artifact in the cache; compiling again"
            ),
        }
        let (component, origin) = compile(engine, wasm, source)?;
        if let Err(err) = self.store(&component, &path) {
            warn!(
                file = %source.display(),
                cache = %self.dir.display(),
                error = format!("{err:#}"),
                "could not write the compiled artifact to the cache"
            );
        }
        Ok((component, origin))
    }

    /// Writes `component`'s artifact to `path` atomically.
    fn store(&self, component: &Component, path: &Path) -> anyhow::Result<()> {
        let bytes = component.serialize().map_err(anyhow::Error::from)?;
        create_private_dir(&self.dir)?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            path.file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("artifact"),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> anyhow::Result<()> {
            let mut file = fs::File::create(&tmp)
                .with_context(|| format!("cannot create {}", tmp.display()))?;
            file.write_all(&bytes)
                .and_then(|()| file.sync_all())
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            fs::rename(&tmp, path).with_context(|| format!("cannot rename into {}", path.display()))
        };
        let result = write();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

/// Compiles `wasm` (the component file `source`) now, saying so in the
/// log first: a large component takes tens of seconds.
pub fn compile(engine: &Engine, wasm: &[u8], source: &Path) -> anyhow::Result<(Component, Origin)> {
    tracing::info!(
        file = %source.display(),
        size = %crate::units::format_size_approx(wasm.len() as u64),
        "compiling"
    );
    let started = std::time::Instant::now();
    let component = Component::new(engine, wasm).map_err(anyhow::Error::from)?;
    let millis = started.elapsed().as_millis();
    Ok((component, Origin::Compiled { millis }))
}

/// Creates `dir` (and its parents), readable and writable by the owner only
/// on Unix.
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create cache directory {}", dir.display()))
}

/// Hex SHA-256 of the engine's compatibility hash.
fn engine_key(engine: &Engine) -> String {
    let mut hasher = Sha256Hasher(digest::Context::new(&digest::SHA256));
    engine.precompile_compatibility_hash().hash(&mut hasher);
    crate::hex::encode(hasher.0.finish().as_ref())
}

/// Feeds `Hash` input into SHA-256, so the key is stable across processes
/// (unlike `DefaultHasher`, whose algorithm may change between Rust
/// releases).
struct Sha256Hasher(digest::Context);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finish();
        let mut first = [0; 8];
        first.copy_from_slice(&digest.as_ref()[..8]);
        u64::from_le_bytes(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Runtime, RuntimeLimits};

    fn small_runtime() -> std::sync::Arc<Runtime> {
        Runtime::new(RuntimeLimits {
            max_concurrent_calls: 2,
            ..RuntimeLimits::default()
        })
        .unwrap()
    }

    #[test]
    fn key_is_stable_and_content_addressed() {
        let runtime = small_runtime();
        let dir = Path::new("unused");
        let a = CompileCache::new(runtime.engine(), dir);
        let b = CompileCache::new(runtime.engine(), dir);
        assert_eq!(a.key(b"abc"), b.key(b"abc"));
        assert_ne!(a.key(b"abc"), a.key(b"abd"));
        let key = a.key(b"abc");
        // SHA-256("abc")
        assert!(
            key.starts_with("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad-")
        );
        assert_eq!(key.len(), 64 + 1 + 64);
        assert!(a.path(b"abc").ends_with(format!("{key}.cwasm")));
    }

    #[test]
    fn engine_settings_change_the_key() {
        let runtime = small_runtime();
        let default = Engine::default(); // no epoch interruption, no pooling
        let dir = Path::new("unused");
        assert_ne!(
            CompileCache::new(runtime.engine(), dir).key(b"abc"),
            CompileCache::new(&default, dir).key(b"abc")
        );
    }

    #[test]
    fn default_dir_ends_in_airlock() {
        if let Some(dir) = default_cache_dir() {
            assert!(dir.ends_with("airlock"));
        }
    }
}
