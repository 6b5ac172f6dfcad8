//! Write MCP tools, prompts and resources for Airlock as WebAssembly
//! components.
//!
//! A component is a `cdylib` crate that declares its tools with a
//! [`ToolRouter`] (or implements [`Tools`] by hand), and if it wants
//! [`Prompts`], [`Resources`] and [`Completions`], for a type it hands to
//! [`export!`]. `airlock new NAME` creates such a crate. Build it with
//! `cargo build --release --target wasm32-wasip2` (or
//! `cargo component build --release`) and drop the resulting `.wasm` into
//! Airlock's tools directory.
//!
//! The crate carries the WIT contract between Airlock and its components
//! (the package `airlock:mcp` in its `wit/` folder); its doc comments say
//! exactly what a component may return and what the host guarantees.
//!
//! # The model
//!
//! * [`Tools::list`] describes every tool of the component ([`Tool`]).
//! * [`Tools::call`] runs one *round* of a call ([`Call`]) and returns an
//!   [`Outcome`]: either a finished [`CallResult`], or an [`InputRequired`]
//!   asking the client for something (a form, a URL visit, a completion from
//!   its model, its roots) and carrying the tool's own state.
//! * A [`ToolRouter`] makes both from one declaration per tool: its name,
//!   its handler (which gets the arguments already deserialized) and its
//!   description, with the input schema derived from the arguments' type
//!   under the `schemars` feature ([`Tool::input`](Tool#method.input)).
//! * When the client has answered, it calls the tool again. Airlock runs that
//!   retry in a **fresh instance**: globals are gone, and all the tool knows is
//!   the arguments, the answers ([`Inputs::elicitation`], [`Inputs::sampling`],
//!   [`Inputs::roots`]) and the state it returned last time ([`Inputs::state`]).
//!   The host seals the state, so the client can neither read nor change it.
//! * A long call can go on as a **task** (MCP's tasks extension), for a
//!   tool that declares [`Tool::task_support`] and a client that can use
//!   tasks: see [Tasks](#tasks).
//! * Prompts ([`Prompts::get`], a [`PromptRequest`]) and resource reads
//!   ([`Resources::read`], a [`ResourceRead`]) run in rounds the same way:
//!   [`Call`], [`PromptRequest`] and [`ResourceRead`] all dereference to the
//!   same [`Inputs`], and [`InputRequired`] converts into each outcome.
//!
//! Components can also write to the log ([`log`]), report [`progress`] while
//! they run, and report changes of their lists ([`notify`]).
//!
//! # What a tool can rely on
//!
//! * **A fresh instance for every call, and for every round of a
//!   multi-round call.** Globals start from scratch each time, so a tool
//!   keeps no memory between calls. What the next round needs goes into the
//!   state it returns with [`InputRequired`]; Airlock seals it (encrypted and
//!   authenticated, bound to the caller, the tool, its arguments and an
//!   expiry) and hands it back unsealed and verified ([`Inputs::state`]).
//!   Any Airlock process sharing the key ring can serve any round.
//! * **The answers arrive by the keys the tool chose.** A client may leave
//!   some out (ask again) or add others (ignore them).
//! * **No input request the client cannot answer.** Airlock never sends a
//!   request the client did not declare a capability for: the call fails
//!   with `-32021` naming the capability. Check [`Inputs::client`] first to
//!   offer a fallback instead.
//! * **A retry is bound to the tool's name, not to one build.** When a new
//!   version of the component replaces the file between two rounds, the
//!   retry runs on the new version with the state the old one sealed: keep
//!   the state readable by the next version, use what is still needed and
//!   ask only for what is new. The same holds for prompts and resources.
//! * **Lists are read once, when the component loads.** A component whose
//!   lists depend on something outside it calls
//!   [`notify::list_changed`]; Airlock lists it again and tells subscribers.
//!   [`notify::resource_updated`] tells the subscribers of one URI.
//! * **Nothing is granted but what its manifest grants.** Without a manifest
//!   (`NAME.toml` beside `NAME.wasm`) a component gets no files, no
//!   environment variables, no name lookups and no outbound HTTP: only clocks,
//!   random numbers and the host imports of the contract (log, progress,
//!   change reports). A manifest can grant directories, named environment
//!   variables and secrets, and outbound HTTP to listed hosts; sockets stay
//!   denied whatever it says.
//! * **Every call has limits, and fails alone.** A memory cap, a wall-clock
//!   deadline, a bound on the size of the reply (and on its content blocks
//!   and input requests), on host resources and on log and progress events.
//!   A tool that loops, traps, overflows its stack or eats memory ends its
//!   own call with an `is_error` result naming the limit it hit (prompts,
//!   reads and completions: a JSON-RPC error); the server keeps serving.
//!   The server sets the defaults; a manifest's `[limits]` sets them per
//!   component.
//!
//! # At a glance
//!
//! | to | use |
//! |---|---|
//! | declare tools | [`ToolRouter::new`]`().tool(name, handler, \|name\| Tool::new(name, description)…)` in [`RoutedTools::router`] |
//! | describe a tool | [`Tool::new`]`(name, description).input_schema(json!(…))`, or `.input::<Args>()` with the `schemars` feature; hints such as [`Tool::read_only`] |
//! | read the arguments | a [`ToolRouter`] handler's first parameter, or [`Call::args`]`::<T>()`; bad arguments become an `is_error` result |
//! | finish | [`Outcome::text`], [`Outcome::error`], [`Outcome::json`], or a [`CallResult`] built with `with_*` (images, audio, resource links, embedded resources, structured content); an [`Error`] converts too |
//! | ask the user | [`InputRequired::elicit_form`], [`InputRequired::elicit_url`]; read the answer with [`Inputs::elicitation`] and [`ElicitationResponse::accepted_content`] |
//! | ask the client's model | [`InputRequired::sample`] with a [`SamplingRequest`]; read [`Inputs::sampling`] and [`SamplingResponse::text`] |
//! | ask for roots | [`InputRequired::list_roots`]; read [`Inputs::roots`] |
//! | carry state | [`InputRequired::state`] (JSON) or [`InputRequired::state_bytes`]; read [`Inputs::state`]; [`Outcome::continue_with`] for a state-only round |
//! | run as a task | [`Tool::task_support`]`(`[`TaskSupport::Optional`]`)`; check [`Inputs::client`]`.can_use_tasks()`, then [`Outcome::continue_as_task`]; [`Call::is_task`] in the task's rounds; [`Outcome::failed`] for a JSON-RPC error |
//! | check what the client can answer | [`Inputs::client`]`.can_elicit_form()`, `can_elicit_url()`, `can_sample()`, `can_sample_with_tools()`, `can_list_roots()` |
//! | log, report progress | [`log::info`] and friends, [`progress`] |
//! | offer prompts | [`Prompt::new`]`(name, description).required_argument(…)`; read [`PromptRequest::argument`]; finish with [`PromptResult::new`]`().user(…)` or [`PromptOutcome::text`] |
//! | offer resources | [`Resource::new`]`(uri, name).mime_type(…)`, [`ResourceTemplate::new`]; read [`ResourceRead::uri`], [`ResourceRead::variable`]; finish with [`ResourceContents::text`] / [`ResourceContents::blob`] or [`ReadOutcome::NotFound`] |
//! | serve a skill (`skill://<name>/SKILL.md`) | [`ServedSkill::new`]`(name, SKILL_MD)`: add [`ServedSkill::resource`] to the list, answer with [`ServedSkill::read`]; plain-file skills need no code (`NAME.skills/<name>/SKILL.md` beside the component) |
//! | complete arguments | [`Completion::new`]`(values)` (capped at 100), [`Completion::matching`]`(candidates, typed)` |
//! | report a changed list or resource | [`notify::list_changed`]`(ListKind::Tools)`, [`notify::resource_updated`]`(uri)` |
//! | export | [`export!`]`(MyTools)`, or `export! { tools: T, prompts: P, resources: R, completions: C }`: the component exports what is named, nothing else |
//!
//! # Tasks
//!
//! A call that takes long can go on as a *task* (MCP's tasks extension,
//! `io.modelcontextprotocol/tasks`): the client gets a task at once and
//! polls it, while Airlock runs the rest of the call in the background.
//!
//! * The tool declares it with [`Tool::task_support`]: [`TaskSupport::Never`]
//!   (the default), [`TaskSupport::Optional`] or [`TaskSupport::Required`]
//!   (Airlock refuses clients without tasks with error -32021, and never
//!   runs the tool for them).
//! * The first round always runs as a plain call ([`Call::is_task`] is
//!   false), and may ask for input with [`InputRequired`] as usual before any
//!   task exists.
//! * To go on as a task it returns [`Outcome::continue_as_task`]`(&state)`,
//!   only if [`Inputs::client`]`.can_use_tasks()`: for a client that did not
//!   declare the extension the call fails. Airlock stores the task, answers
//!   the client with it, and runs the next round in the background:
//!   [`Call::is_task`] true, the state back in [`Inputs::state`], and
//!   [`Inputs::client`] as declared on the request that created the task.
//! * A task round ends the task with a result ([`Outcome::text`] and the
//!   others, `is_error` results too: the task is `completed`) or with
//!   [`Outcome::failed`] (a JSON-RPC error: the task is `failed`). It may ask
//!   for input with [`InputRequired`]: the task waits, `input_required`,
//!   until the client has answered every request, then the next task round
//!   gets the answers under the same keys, and the state. Or it checkpoints
//!   with [`Outcome::continue_as_task`] again: Airlock stores the state and
//!   runs the next round, maybe on another host.
//! * Task rounds have a longer deadline (a server option), and their log
//!   and progress reports go to the host's log only.
//!
//! [`Outcome::failed`] in a plain call makes Airlock answer that JSON-RPC
//! error instead of a result.
//!
//! # Example
//!
//! A tool that greets someone, and asks the user for the name when the model
//! did not give one:
//!
//! ```no_run
//! use airlock_guest::{Call, Error, InputRequired, Outcome, RoutedTools, Tool, ToolRouter, json};
//! use serde::Deserialize;
//!
//! struct Greeter;
//!
//! impl RoutedTools for Greeter {
//!     fn router() -> ToolRouter {
//!         ToolRouter::new().tool("greet", greet, |name| {
//!             Tool::new(name, "Greets someone; asks the user who if no name is given.")
//!                 .input_schema(json!({
//!                     "type": "object",
//!                     "properties": { "name": { "type": "string" } },
//!                     "required": []
//!                 }))
//!                 .read_only()
//!         })
//!     }
//! }
//!
//! /// The arguments of `greet`, and also the shape of the form we ask for.
//! #[derive(Deserialize)]
//! struct Name {
//!     name: Option<String>,
//! }
//!
//! // Arguments that are not a `Name` never get here: the call completes with
//! // an `is_error` result the model can read. So does an `Err`.
//! fn greet(args: Name, call: &Call) -> Result<Outcome, Error> {
//!     if let Some(name) = args.name {
//!         return Ok(Outcome::text(format!("Hello, {name}!")));
//!     }
//!     match call.elicitation("name") {
//!         // First round: ask the user.
//!         None => Ok(InputRequired::new()
//!             .elicit_form(
//!                 "name",
//!                 "Who should I greet?",
//!                 json!({
//!                     "type": "object",
//!                     "properties": { "name": { "type": "string" } },
//!                     "required": ["name"]
//!                 }),
//!             )
//!             .into()),
//!         // Second round, in a fresh instance: the user answered.
//!         Some(answer) => match answer.accepted_content::<Name>().and_then(|form| form.name) {
//!             Some(name) => Ok(Outcome::text(format!("Hello, {name}!"))),
//!             None => Err(Error::new("nobody to greet: the user did not give a name")),
//!         },
//!     }
//! }
//!
//! airlock_guest::export!(Greeter);
//! ```
//!
//! # Testing tools on the host
//!
//! Everything except the host imports is plain Rust, so tool logic can be unit
//! tested with `cargo test` on the build machine: build a [`Call`] with
//! [`Call::new`] (and [`Call::with_round`] or [`Call::retry`] for later
//! rounds, [`Call::task_round_after`] for task rounds) and inspect the
//! [`Outcome`]; likewise [`PromptRequest::new`],
//! [`ResourceRead::new`] and [`CompletionRequest::for_prompt`]. Outside
//! WebAssembly, [`log`], [`progress`] and [`notify`] print to stderr.

#![warn(missing_docs)]

pub mod apps;
#[doc(hidden)]
pub mod bindings;
mod builders;
mod call;
mod completions;
mod error;
mod inputs;
pub mod log;
pub mod notify;
mod outcome;
mod prompts;
mod resources;
mod router;
#[cfg(feature = "schemars")]
mod schema;
mod skills;

pub use call::Call;
pub use completions::MAX_COMPLETION_VALUES;
pub use error::Error;
pub use inputs::Inputs;
pub use log::progress;
pub use outcome::Outcome;
pub use prompts::PromptRequest;
pub use resources::ResourceRead;
pub use router::{RoutedTools, ToolRouter};
/// The `serde_json` crate, re-exported for [`serde_json::Value`] and friends.
pub use serde_json;
/// Builds a [`serde_json::Value`] from JSON-like syntax; handy for schemas.
pub use serde_json::json;
pub use skills::ServedSkill;
pub use types::{
    CallResult, Completion, CompletionRequest, ContentBlock, ElicitationAction,
    ElicitationResponse, EmbeddedResource, InputRequired, ModelPreferences, Prompt, PromptArgument,
    PromptMessage, PromptOutcome, PromptResult, ProtocolError, ReadOutcome, Resource,
    ResourceContents, ResourceLink, ResourceTemplate, Root, SamplingMessage, SamplingRequest,
    SamplingResponse, TaskSupport, Tool, ToolAnnotations,
};

/// Every type of the Airlock WIT contract (`airlock:mcp/types`, and the
/// records of the `prompts`, `resources` and `completions` interfaces).
///
/// The most common ones are also re-exported at the crate root. All of them
/// are plain data with public fields; the SDK adds builder methods to the
/// ones a component usually constructs.
pub mod types {
    pub use crate::bindings::completions::exports::airlock::mcp::completions::{
        Completion, CompletionRequest, CompletionTarget,
    };
    pub use crate::bindings::prompts::exports::airlock::mcp::prompts::{
        Prompt, PromptArgument, PromptMessage, PromptOutcome, PromptResult,
    };
    pub use crate::bindings::resources::exports::airlock::mcp::resources::{
        ReadOutcome, Resource, ResourceTemplate, TemplateMatch,
    };
    pub use crate::bindings::types::*;
}

/// The tools of one component.
///
/// Implement it for a type (usually an empty `struct`) and pass that type to
/// [`export!`]. Both functions are associated functions, not methods: a
/// component keeps no state between calls, so there is no `self` to keep.
///
/// Implementing [`RoutedTools`] instead gives both from a [`ToolRouter`],
/// where each tool is declared once.
pub trait Tools {
    /// Describes every tool of the component.
    ///
    /// Called when Airlock loads the component, and again after the
    /// component reports a change with
    /// [`notify::list_changed`]`(ListKind::Tools)`. It must not depend on
    /// anything but the component and what the change depends on.
    fn list() -> Vec<Tool>;

    /// Runs one round of a call of one of the tools of [`Tools::list`].
    ///
    /// Dispatch on [`Call::name`]. Each round runs in a fresh instance.
    fn call(call: Call) -> Outcome;
}

/// The prompts of one component (MCP `prompts/list`, `prompts/get`).
///
/// Like [`Tools`], associated functions only. Pass the type to [`export!`]
/// under the `prompts` key.
pub trait Prompts {
    /// Describes every prompt of the component ([`Prompt::new`]). Called
    /// when Airlock loads the component, and again after
    /// [`notify::list_changed`]`(ListKind::Prompts)`.
    fn list() -> Vec<Prompt>;

    /// Renders one round of prompt [`PromptRequest::name`] (one of
    /// [`Prompts::list`]). Every required argument is present.
    ///
    /// Returns the messages ([`PromptResult`], or [`PromptOutcome::text`]),
    /// an [`InputRequired`] (`.into()`) to ask the client first, exactly as
    /// a tool does, or [`PromptOutcome::invalid_arguments`]. Each round runs
    /// in a fresh instance.
    fn get(request: PromptRequest) -> PromptOutcome;
}

/// The resources of one component (MCP `resources/list`,
/// `resources/templates/list`, `resources/read`).
///
/// Like [`Tools`], associated functions only. Pass the type to [`export!`]
/// under the `resources` key.
pub trait Resources {
    /// Describes every fixed resource of the component ([`Resource::new`]).
    /// None unless overridden.
    fn list() -> Vec<Resource> {
        Vec::new()
    }

    /// Describes every resource template of the component
    /// ([`ResourceTemplate::new`]). None unless overridden.
    fn templates() -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// Reads one round of [`ResourceRead::uri`]: a listed resource, or a URI
    /// matching one of [`Resources::templates`] ([`ResourceRead::template`]
    /// and [`ResourceRead::variable`] tell which, and the values).
    ///
    /// Returns the contents ([`ResourceContents`], `.into()`), an
    /// [`InputRequired`] (`.into()`), or [`ReadOutcome::NotFound`]. Each
    /// round runs in a fresh instance.
    fn read(read: ResourceRead) -> ReadOutcome;
}

/// Argument completion for the prompts and resource templates of one
/// component (MCP `completion/complete`).
///
/// Pass the type to [`export!`] under the `completions` key.
pub trait Completions {
    /// Suggests values for one argument ([`Completion::new`],
    /// [`Completion::matching`]). Called only for prompts and templates the
    /// component lists.
    fn complete(request: CompletionRequest) -> Completion;
}

/// Exports the component's tools, prompts, resources and completions.
///
/// Use it exactly once per component crate, at the top level. The
/// component exports the interfaces it names and no other: each key
/// contributes its interface's world (`tool-provider`, `prompt-provider`,
/// `resource-provider`, `completion-provider`), so `airlock inspect` shows
/// exactly what the component serves. Nothing else is needed.
///
/// **Tools only.** Pass the [`Tools`] type (a [`RoutedTools`] type is one);
/// the component exports `airlock:mcp/tools` alone:
///
/// ```no_run
/// use airlock_guest::{Call, Outcome, Tool, Tools};
///
/// struct Clock;
///
/// impl Tools for Clock {
///     fn list() -> Vec<Tool> {
///         vec![Tool::new("noon", "Tells when noon is.").read_only()]
///     }
///
///     fn call(call: Call) -> Outcome {
///         match call.name() {
///             "noon" => Outcome::text("12:00"),
///             other => Outcome::unknown_tool(other),
///         }
///     }
/// }
///
/// airlock_guest::export!(Clock);
/// ```
///
/// **Any subset, by name.** Keys `tools`, `prompts`, `resources` and
/// `completions`, each optional and given at most once (twice is a
/// duplicate symbol), in any order; the ones left out are not exported, and
/// Airlock serves nothing of them (a completion request for a component
/// without `completions` gets no values). One type may implement several
/// traits:
///
/// ```no_run
/// use airlock_guest::{
///     Completion, CompletionRequest, Completions, Prompt, PromptOutcome, PromptRequest,
///     Prompts, ReadOutcome, Resource, ResourceContents, ResourceRead, Resources,
/// };
///
/// struct Notes;
///
/// impl Prompts for Notes {
///     fn list() -> Vec<Prompt> {
///         vec![Prompt::new("summarize_note", "Summarizes a note.").required_argument("id", "The note.")]
///     }
///
///     fn get(request: PromptRequest) -> PromptOutcome {
///         match request.argument("id") {
///             Some(id) => PromptOutcome::text(format!("Summarize note {id}.")),
///             None => PromptOutcome::invalid_arguments("which note?"),
///         }
///     }
/// }
///
/// impl Resources for Notes {
///     fn list() -> Vec<Resource> {
///         vec![Resource::new("notes://today", "today").mime_type("text/plain")]
///     }
///
///     fn read(read: ResourceRead) -> ReadOutcome {
///         match read.uri() {
///             "notes://today" => ResourceContents::text(read.uri(), "Buy milk.")
///                 .mime_type("text/plain")
///                 .into(),
///             _ => ReadOutcome::NotFound,
///         }
///     }
/// }
///
/// impl Completions for Notes {
///     fn complete(request: CompletionRequest) -> Completion {
///         Completion::matching(["today", "tomorrow"], request.value())
///     }
/// }
///
/// // No tools: the key is left out.
/// airlock_guest::export! {
///     prompts: Notes,
///     resources: Notes,
///     completions: Notes,
/// }
/// ```
///
/// A key other than those four does not compile:
///
/// ```compile_fail
/// # use airlock_guest::{Call, Outcome, Tool, Tools};
/// # struct Clock;
/// # impl Tools for Clock {
/// #     fn list() -> Vec<Tool> { Vec::new() }
/// #     fn call(call: Call) -> Outcome { Outcome::unknown_tool(call.name()) }
/// # }
/// airlock_guest::export! { tool: Clock }
/// ```
#[macro_export]
macro_rules! export {
    ($($key:ident : $component:ty),+ $(,)?) => {
        $($crate::__export_interface! { $key : $component })+
    };
    ($tools:ty $(,)?) => {
        $crate::export! { tools: $tools }
    };
}

/// Support for [`export!`]: the exports of one interface, implemented by
/// one type, and the world that declares them (`tool-provider`,
/// `prompt-provider`, `resource-provider` or `completion-provider`).
#[doc(hidden)]
#[macro_export]
macro_rules! __export_interface {
    (tools : $t:ty) => {
        const _: () = {
            struct AirlockTools;

            impl $crate::__private::ToolsGuest for AirlockTools {
                fn list_tools() -> ::std::vec::Vec<$crate::types::Tool> {
                    $crate::__private::list_tools::<$t>()
                }

                fn call_tool(
                    name: ::std::string::String,
                    arguments: ::std::string::String,
                    round: $crate::types::Round,
                ) -> $crate::types::CallOutcome {
                    $crate::__private::call_tool::<$t>(name, arguments, round)
                }
            }

            $crate::bindings::tools::__export_tools!(
                AirlockTools with_types_in $crate::bindings::tools
            );
        };
    };
    (prompts : $t:ty) => {
        const _: () = {
            struct AirlockPrompts;

            impl $crate::__private::PromptsGuest for AirlockPrompts {
                fn list_prompts() -> ::std::vec::Vec<$crate::types::Prompt> {
                    $crate::__private::list_prompts::<$t>()
                }

                fn get_prompt(
                    name: ::std::string::String,
                    arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                    round: $crate::types::Round,
                ) -> $crate::types::PromptOutcome {
                    $crate::__private::get_prompt::<$t>(name, arguments, round)
                }
            }

            $crate::bindings::prompts::__export_prompts!(
                AirlockPrompts with_types_in $crate::bindings::prompts
            );
        };
    };
    (resources : $t:ty) => {
        const _: () = {
            struct AirlockResources;

            impl $crate::__private::ResourcesGuest for AirlockResources {
                fn list_resources() -> ::std::vec::Vec<$crate::types::Resource> {
                    $crate::__private::list_resources::<$t>()
                }

                fn list_resource_templates() -> ::std::vec::Vec<$crate::types::ResourceTemplate> {
                    $crate::__private::list_resource_templates::<$t>()
                }

                fn read_resource(
                    uri: ::std::string::String,
                    template: ::std::option::Option<$crate::types::TemplateMatch>,
                    round: $crate::types::Round,
                ) -> $crate::types::ReadOutcome {
                    $crate::__private::read_resource::<$t>(uri, template, round)
                }
            }

            $crate::bindings::resources::__export_resources!(
                AirlockResources with_types_in $crate::bindings::resources
            );
        };
    };
    (completions : $t:ty) => {
        const _: () = {
            struct AirlockCompletions;

            impl $crate::__private::CompletionsGuest for AirlockCompletions {
                fn complete(
                    request: $crate::types::CompletionRequest,
                ) -> $crate::types::Completion {
                    $crate::__private::complete::<$t>(request)
                }
            }

            $crate::bindings::completions::__export_completions!(
                AirlockCompletions with_types_in $crate::bindings::completions
            );
        };
    };
    ($other:ident : $t:ty) => {
        ::core::compile_error!(::core::concat!(
            "airlock_guest::export!: unknown key `",
            ::core::stringify!($other),
            "`; the keys are tools, prompts, resources and completions"
        ));
    };
}

/// Support code for [`export!`]; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::completions::exports::airlock::mcp::completions::Guest as CompletionsGuest;
    pub use crate::bindings::prompts::exports::airlock::mcp::prompts::Guest as PromptsGuest;
    pub use crate::bindings::resources::exports::airlock::mcp::resources::Guest as ResourcesGuest;
    pub use crate::bindings::tools::exports::airlock::mcp::tools::Guest as ToolsGuest;
    use crate::types::{
        CallOutcome, Completion, CompletionRequest, Prompt, PromptOutcome, ReadOutcome, Resource,
        ResourceTemplate, Round, TemplateMatch, Tool,
    };
    use crate::{Call, Completions, PromptRequest, Prompts, ResourceRead, Resources, Tools};

    /// The `list-tools` export of a [`Tools`] type.
    pub fn list_tools<T: Tools>() -> Vec<Tool> {
        T::list()
    }

    /// The `call-tool` export of a [`Tools`] type.
    pub fn call_tool<T: Tools>(name: String, arguments: String, round: Round) -> CallOutcome {
        T::call(Call::from_parts(name, arguments, round)).into()
    }

    /// The `list-prompts` export of a [`Prompts`] type.
    pub fn list_prompts<T: Prompts>() -> Vec<Prompt> {
        T::list()
    }

    /// The `get-prompt` export of a [`Prompts`] type.
    pub fn get_prompt<T: Prompts>(
        name: String,
        arguments: Vec<(String, String)>,
        round: Round,
    ) -> PromptOutcome {
        T::get(PromptRequest::from_parts(name, arguments, round))
    }

    /// The `list-resources` export of a [`Resources`] type.
    pub fn list_resources<T: Resources>() -> Vec<Resource> {
        T::list()
    }

    /// The `list-resource-templates` export of a [`Resources`] type.
    pub fn list_resource_templates<T: Resources>() -> Vec<ResourceTemplate> {
        T::templates()
    }

    /// The `read-resource` export of a [`Resources`] type.
    pub fn read_resource<T: Resources>(
        uri: String,
        template: Option<TemplateMatch>,
        round: Round,
    ) -> ReadOutcome {
        T::read(ResourceRead::from_parts(uri, template, round))
    }

    /// The `complete` export of a [`Completions`] type.
    pub fn complete<T: Completions>(request: CompletionRequest) -> Completion {
        T::complete(request)
    }
}
