//! Options of tasks (MCP's tasks extension): where they are stored, how
//! long they live, and their limits.

use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::saturate;
use super::values;
use crate::serve::TaskStoreChoice;
use crate::tasks::TaskSettings;

/// Task options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Tasks (long-running calls)")]
pub struct TaskOptions {
    /// Where tasks are kept: a file (on-disk, survives restarts of this host), `memory` (ends with
    /// the process), or `redis://HOST:PORT/DB` (shared by a fleet: any host answers and runs any
    /// task; `rediss://` for TLS, `redis://:PASSWORD@HOST:PORT/DB` or `USER:PASSWORD@` to
    /// authenticate) [default: tasks.redb in the cache directory, or memory with --no-cache].
    #[arg(long, value_name = "STORE", value_parser = task_store)]
    pub task_store: Option<TaskStoreChoice>,
    /// How long a task stays readable after it was created (`ttlMs`); then it is gone.
    #[arg(long, value_name = "DURATION", default_value = "1h",
          value_parser = values::duration(Duration::from_secs(1)))]
    pub task_ttl: Duration,
    /// How often clients are asked to poll a task (`pollIntervalMs`).
    #[arg(long, value_name = "DURATION", default_value = "500ms",
          value_parser = values::duration(Duration::from_millis(10)))]
    pub task_poll_interval: Duration,
    /// Most tasks one caller may have working or waiting for input (ended tasks, kept for reading
    /// until they expire, do not count); more are refused (-31429, HTTP 429). Without a tokens
    /// file or JWTs every client is the one caller `anonymous`.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_tasks_per_principal: u64,
    /// Most tasks the task store holds, of every caller, ended ones included until they expire
    /// (--task-ttl); more are refused (-31429, HTTP 429).
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_stored_tasks: u64,
    /// Most bytes the task store's tasks hold together, counted as for --max-task-bytes; a task
    /// that would pass it is refused (-31429, HTTP 429), and one whose round would grow past it
    /// fails.
    #[arg(long, value_name = "SIZE", default_value = "512MiB",
          value_parser = values::size(1 << 20, 1 << 40))]
    pub max_task_store_bytes: u64,
    /// Most task rounds this host runs at once; further due rounds wait in the store (for this
    /// host or another).
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_running_tasks: u64,
    /// Most bytes one task may store: its sealed state and answers, its input requests, its
    /// result.
    #[arg(long, value_name = "SIZE", default_value = "1MiB",
          value_parser = values::size(4 << 10, 512 << 20))]
    pub max_task_bytes: u64,
    /// How many times one round of a task is started before the task fails (a round starts
    /// again when the host running it stopped).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_task_attempts: u32,
}

impl TaskOptions {
    /// The settings these options give.
    pub fn settings(&self) -> TaskSettings {
        TaskSettings {
            ttl: self.task_ttl,
            poll_interval: self.task_poll_interval,
            max_per_principal: saturate(self.max_tasks_per_principal),
            max_stored_tasks: saturate(self.max_stored_tasks),
            max_store_bytes: self.max_task_store_bytes,
            max_running: saturate(self.max_running_tasks),
            max_task_bytes: saturate(self.max_task_bytes),
            max_attempts: self.max_task_attempts,
        }
    }
}

/// `memory`, a `redis://` or `rediss://` URL, or a file path.
fn task_store(text: &str) -> Result<TaskStoreChoice, String> {
    if text == "memory" {
        Ok(TaskStoreChoice::Memory)
    } else if text.starts_with("redis://") || text.starts_with("rediss://") {
        Ok(TaskStoreChoice::Redis(text.to_owned()))
    } else if text.contains("://") {
        Err(format!(
            "unknown task store {text:?}: use a file path, `memory` or redis://HOST:PORT/DB"
        ))
    } else if text.is_empty() {
        Err("the task store cannot be empty".to_owned())
    } else {
        Ok(TaskStoreChoice::File(PathBuf::from(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_named_by_kind() {
        assert_eq!(task_store("memory"), Ok(TaskStoreChoice::Memory));
        assert_eq!(
            task_store("redis://cache:6379/2"),
            Ok(TaskStoreChoice::Redis("redis://cache:6379/2".into()))
        );
        assert_eq!(
            task_store("/var/lib/airlock/tasks.redb"),
            Ok(TaskStoreChoice::File("/var/lib/airlock/tasks.redb".into()))
        );
        assert!(task_store("postgres://x").is_err());
        assert!(task_store("").is_err());
    }
}
