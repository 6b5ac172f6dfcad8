//! The sandbox options, shared by `airlock serve` and `airlock inspect`:
//! the limits every call runs under unless its manifest lowers them, and
//! the secrets manifests may grant.

use std::path::PathBuf;
use std::time::Duration;

use super::values;
use crate::guest_json::{DEFAULT_MAX_DEPTH, MAX_DEPTH_CEILING};
use crate::policy::{MIN_MEMORY_BYTES, MIN_OUTPUT_BYTES, MIN_TIMEOUT};
use crate::runtime::RuntimeLimits;
use crate::sandbox::SandboxSettings;

/// Options of the sandbox of every call.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Sandbox (the defaults a manifest may lower)")]
pub struct SandboxOptions {
    /// Memory cap of each instance (a manifest may lower it).
    #[arg(long, value_name = "SIZE", default_value = "64MiB",
          value_parser = values::size(MIN_MEMORY_BYTES, 4 << 30))]
    pub max_memory: u64,
    /// Wall-clock deadline of each call (each round of a multi-round call), waiting for a free
    /// slot included.
    #[arg(long, value_name = "DURATION", default_value = "10s",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub call_timeout: Duration,
    /// Wall-clock deadline of each round of a task (it runs in the background; a manifest's
    /// timeout does not apply to it).
    #[arg(long, value_name = "DURATION", default_value = "5m",
          value_parser = values::duration(MIN_TIMEOUT))]
    pub task_round_timeout: Duration,
    /// Largest reply one call may produce, encoded (result, input requests, prompt, resource
    /// contents, completion), and largest page of a list; also the most log and progress text one
    /// call may send.
    #[arg(long, value_name = "SIZE", default_value = "1MiB",
          value_parser = values::size(MIN_OUTPUT_BYTES, u64::MAX))]
    pub max_output: u64,
    /// Most content blocks one outcome may hold (result, prompt messages, resource contents,
    /// sampling messages).
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_content_blocks: u64,
    /// Most input requests one input_required outcome may make.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_input_requests: u64,
    /// Most host resources one instance may hold at once (open files, streams, pollables, HTTP
    /// requests and header fields).
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(16..=1_000_000))]
    pub max_host_resources: u64,
    /// Largest set of HTTP header fields a tool may build for one request or response.
    #[arg(long, value_name = "SIZE", default_value = "64KiB",
          value_parser = values::size(1 << 10, 16 << 20))]
    pub max_http_fields: u64,
    /// Meter fuel, so that manifests may set `[limits] fuel` (costs every call some speed).
    #[arg(long)]
    pub enable_fuel: bool,
    /// Secrets manifests may grant as environment variables: a TOML file of `name = "value"`
    /// lines.
    #[arg(long, value_name = "FILE")]
    pub secrets_file: Option<PathBuf>,

    /// Largest component file loaded; a larger one is refused by its size, unread.
    #[arg(long, value_name = "SIZE", default_value = "128MiB", help_heading = COMPONENTS,
          value_parser = values::size(1 << 10, u64::MAX))]
    pub max_component_size: u64,
    /// Largest input or output schema of one tool; a component listing a larger one is refused.
    #[arg(long, value_name = "SIZE", default_value = "256KiB", help_heading = COMPONENTS,
          value_parser = values::size(1 << 10, u64::MAX))]
    pub max_schema: u64,
    /// Most bytes everything one component lists (tools, prompts, resources, templates) may take
    /// as clients get it; a component listing more is refused. Each item must also fit one page
    /// of its list, which --max-output bounds.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", help_heading = COMPONENTS,
          value_parser = values::size(1 << 10, u64::MAX))]
    pub max_listing: u64,
    /// Most skills one component's skills directory (`NAME.skills/`) may hold; beyond it, the first
    /// by name are served and the others not.
    #[arg(long, value_name = "N", default_value_t = 256, help_heading = COMPONENTS,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub max_skills: u64,
    /// Most files one skill of a component's skills directory (`NAME.skills/<skill>/`) may hold; a
    /// skill with more is not served.
    #[arg(long, value_name = "N", default_value_t = 512, help_heading = COMPONENTS,
          value_parser = clap::value_parser!(u64).range(1..=512))]
    pub max_skill_files: u64,
    /// Most bytes the files of one skill may take together; a larger skill is not served.
    #[arg(long, value_name = "SIZE", default_value = "16MiB", help_heading = COMPONENTS,
          value_parser = values::size(1 << 10, 16 << 20))]
    pub max_skill_size: u64,
    /// Deepest nesting of arrays and objects in any JSON value a component hands the host. A
    /// component listing a deeper schema or `_meta` is refused, a skill whose frontmatter nests
    /// deeper is not served, and a deeper answer (structured content, `_meta`, input requests)
    /// fails its call. At most 100, which keeps replies within the 127 levels JSON parsers built on
    /// serde_json read.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DEPTH as u64, help_heading = COMPONENTS,
          value_parser = clap::value_parser!(u64).range(1..=MAX_DEPTH_CEILING as u64))]
    pub max_json_depth: u64,
}

/// The heading of the options that bound what a component may be and list.
const COMPONENTS: &str = "Components";

impl SandboxOptions {
    /// The settings these options give; `limits` holds what other options
    /// set (the concurrency of `airlock serve`).
    pub fn settings(self, limits: RuntimeLimits) -> SandboxSettings {
        SandboxSettings {
            limits: RuntimeLimits {
                max_memory_bytes: saturate(self.max_memory),
                call_timeout: self.call_timeout,
                task_round_timeout: self.task_round_timeout,
                max_output_bytes: saturate(self.max_output),
                fuel: self.enable_fuel,
                max_host_resources: saturate(self.max_host_resources),
                max_http_fields_bytes: saturate(self.max_http_fields),
                max_content_blocks: saturate(self.max_content_blocks),
                max_input_requests: saturate(self.max_input_requests),
                max_component_bytes: self.max_component_size,
                max_schema_bytes: saturate(self.max_schema),
                max_listing_bytes: saturate(self.max_listing),
                max_skills: saturate(self.max_skills),
                max_skill_files: saturate(self.max_skill_files),
                max_skill_bytes: self.max_skill_size,
                max_json_depth: saturate(self.max_json_depth),
                ..limits
            },
            secrets_file: self.secrets_file,
            own_variables: super::environment::every_variable(&super::command()),
        }
    }
}

/// A size or count as the runtime holds it (saturating on 32-bit targets).
pub(super) fn saturate(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
