//! Watching the tools directory for added, replaced and removed components.
//!
//! The directory is polled: every interval, the names, sizes, modification
//! times and inodes of its `*.wasm` files, their manifests (`*.toml`) and
//! every entry of their skills directories (`*.skills/`) are read (no file
//! is opened). A
//! change is acted on once two polls in a row agree, so a file that is still
//! being copied is not loaded half-written; copying to a temporary name and
//! renaming it into place is still the safest way to publish a component.
//! Polling works the same on every file system, including network and
//! container mounts where change events are unreliable, and costs one
//! directory listing per interval.

use std::path::PathBuf;
use std::time::Duration;

use super::ToolSources;
use super::component::{ComponentStamp, component_stamp};

/// The state of every `*.wasm` file in a directory, of its manifest and of
/// its skills, sorted by file name, then of every pulled component file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryStamp(Vec<(PathBuf, Option<ComponentStamp>)>);

impl DirectoryStamp {
    /// Reads the directory (a path alone, or [`ToolSources`]) now
    /// (blocking; no file is opened).
    pub fn read(sources: impl Into<ToolSources>) -> anyhow::Result<DirectoryStamp> {
        let files = sources.into().files()?;
        Ok(DirectoryStamp(
            files
                .into_iter()
                .map(|path| {
                    let stamp = component_stamp(&path).ok();
                    (path, stamp)
                })
                .collect(),
        ))
    }

    /// Each component file, and its stamp (`None` if it vanished while the
    /// directory was read).
    pub(crate) fn files(&self) -> &[(PathBuf, Option<ComponentStamp>)] {
        &self.0
    }
}

/// Polls a directory and tells when its components changed.
pub struct Watcher {
    sources: ToolSources,
    loaded: Option<DirectoryStamp>,
    pending: Option<Option<DirectoryStamp>>,
    ticker: tokio::time::Interval,
}

impl Watcher {
    /// Starts watching `dir`, polling every `interval`, for changes from
    /// `loaded`: the directory as it was read for the registry being
    /// served (see [`Registry::directory`](super::Registry::directory)), so
    /// that a change made while that registry loaded is seen. `None`: any
    /// state of the directory is a change.
    pub fn new(
        sources: impl Into<ToolSources>,
        interval: Duration,
        loaded: Option<DirectoryStamp>,
    ) -> Watcher {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Watcher {
            sources: sources.into(),
            loaded,
            pending: None,
            ticker,
        }
    }

    /// Resolves once the directory has changed and the change has held
    /// still for one interval. Cancel-safe.
    pub async fn changed(&mut self) {
        loop {
            self.ticker.tick().await;
            let sources = self.sources.clone();
            let now = tokio::task::spawn_blocking(move || DirectoryStamp::read(&sources).ok())
                .await
                .ok()
                .flatten();
            if now == self.loaded {
                self.pending = None;
            } else if self.pending.as_ref() == Some(&now) {
                self.loaded = now;
                self.pending = None;
                return;
            } else {
                self.pending = Some(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_see_added_replaced_and_removed_files() {
        let dir = std::env::temp_dir().join(format!("airlock-stamp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let empty = DirectoryStamp::read(&dir).unwrap();
        std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
        assert_eq!(DirectoryStamp::read(&dir).unwrap(), empty);
        std::fs::write(dir.join("a.wasm"), "one").unwrap();
        let one = DirectoryStamp::read(&dir).unwrap();
        assert_ne!(one, empty);
        std::fs::write(dir.join("b.wasm"), "two!").unwrap();
        std::fs::rename(dir.join("b.wasm"), dir.join("a.wasm")).unwrap();
        let replaced = DirectoryStamp::read(&dir).unwrap();
        assert_ne!(replaced, one);
        std::fs::write(dir.join("a.toml"), "[limits]").unwrap();
        let with_manifest = DirectoryStamp::read(&dir).unwrap();
        assert_ne!(with_manifest, replaced, "a new manifest is a change");
        std::fs::remove_file(dir.join("a.wasm")).unwrap();
        std::fs::remove_file(dir.join("a.toml")).unwrap();
        assert_eq!(DirectoryStamp::read(&dir).unwrap(), empty);
        assert!(DirectoryStamp::read(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_change_is_reported_once_it_holds_still() {
        let dir = std::env::temp_dir().join(format!("airlock-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut watcher = Watcher::new(
            &dir,
            Duration::from_millis(20),
            DirectoryStamp::read(&dir).ok(),
        );
        let quiet = tokio::time::timeout(Duration::from_millis(150), watcher.changed()).await;
        assert!(quiet.is_err(), "nothing changed yet");
        std::fs::write(dir.join("a.wasm"), "one").unwrap();
        let started = std::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(5), watcher.changed())
            .await
            .expect("the new file is seen");
        assert!(
            started.elapsed() >= Duration::from_millis(20),
            "waited for a second look"
        );
        let again = tokio::time::timeout(Duration::from_millis(150), watcher.changed()).await;
        assert!(again.is_err(), "one change, one report");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_change_made_while_the_served_set_loaded_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wasm"), "one").unwrap();
        // The directory as the load read it; then, before the watcher
        // starts, a component is added.
        let loaded = DirectoryStamp::read(dir.path()).unwrap();
        std::fs::write(dir.path().join("b.wasm"), "two").unwrap();
        let mut watcher = Watcher::new(dir.path(), Duration::from_millis(20), Some(loaded));
        tokio::time::timeout(Duration::from_secs(30), watcher.changed())
            .await
            .expect("the component added during the load is a change");
    }
}
