//! Write MCP tools for Airlock as WebAssembly components.
//!
//! A tool component is a `cdylib` crate that implements [`Tools`] for one type
//! and hands that type to [`export!`]. Build it with
//! `cargo build --release --target wasm32-wasip2` and drop the resulting
//! `.wasm` into Airlock's tools directory.
//!
//! # The model
//!
//! * [`Tools::list`] describes every tool of the component ([`Tool`]).
//! * [`Tools::call`] runs one *round* of a call ([`Call`]) and returns an
//!   [`Outcome`]: either a finished [`CallResult`], or an [`InputRequired`]
//!   asking the client for something (a form, a URL visit, a completion from
//!   its model, its roots) and carrying the tool's own state.
//! * When the client has answered, it calls the tool again. Airlock runs that
//!   retry in a **fresh instance**: globals are gone, and all the tool knows is
//!   the arguments, the answers ([`Call::elicitation`], [`Call::sampling`],
//!   [`Call::roots`]) and the state it returned last time ([`Call::state`]).
//!   The host seals the state, so the client can neither read nor change it.
//!
//! Tools can also write to the log ([`log`]) and report [`progress`] while
//! they run.
//!
//! # At a glance
//!
//! | to | use |
//! |---|---|
//! | describe a tool | [`Tool::new`]`(name, description).input_schema(json!(…))`, hints such as [`Tool::read_only`] |
//! | read the arguments | [`Call::args`]`::<T>()`; its [`Error`] becomes an `is_error` result with `?` |
//! | finish | [`Outcome::text`], [`Outcome::error`], [`Outcome::json`], or a [`CallResult`] built with `with_*` (images, audio, resource links, embedded resources, structured content) |
//! | ask the user | [`InputRequired::elicit_form`], [`InputRequired::elicit_url`]; read the answer with [`Call::elicitation`] and [`ElicitationResponse::accepted_content`] |
//! | ask the client's model | [`InputRequired::sample`] with a [`SamplingRequest`]; read [`Call::sampling`] and [`SamplingResponse::text`] |
//! | ask for roots | [`InputRequired::list_roots`]; read [`Call::roots`] |
//! | carry state | [`InputRequired::state`] (JSON) or [`InputRequired::state_bytes`]; read [`Call::state`]; [`Outcome::continue_with`] for a state-only round |
//! | check what the client can answer | [`Call::client`]`.can_elicit_form()`, `can_elicit_url()`, `can_sample()`, `can_sample_with_tools()`, `can_list_roots()` |
//! | log, report progress | [`log::info`] and friends, [`progress`] |
//!
//! # Example
//!
//! A tool that greets someone, and asks the user for the name when the model
//! did not give one:
//!
//! ```no_run
//! use airlock_guest::{Call, Error, InputRequired, Outcome, Tool, Tools, json};
//! use serde::Deserialize;
//!
//! struct Greeter;
//!
//! impl Tools for Greeter {
//!     fn list() -> Vec<Tool> {
//!         vec![
//!             Tool::new("greet", "Greets someone; asks the user who if no name is given.")
//!                 .input_schema(json!({
//!                     "type": "object",
//!                     "properties": { "name": { "type": "string" } },
//!                     "required": []
//!                 }))
//!                 .read_only(),
//!         ]
//!     }
//!
//!     fn call(call: Call) -> Outcome {
//!         match call.name() {
//!             "greet" => greet(&call).into(),
//!             other => Outcome::unknown_tool(other),
//!         }
//!     }
//! }
//!
//! /// The arguments of `greet`, and also the shape of the form we ask for.
//! #[derive(Deserialize)]
//! struct Name {
//!     name: Option<String>,
//! }
//!
//! fn greet(call: &Call) -> Result<Outcome, Error> {
//!     // Bad arguments become an `is_error` result the model can read.
//!     let args: Name = call.args()?;
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
//!         // Second round: the user answered.
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
//! [`Call::new`] (and [`Call::with_round`] for later rounds) and inspect the
//! [`Outcome`]. Outside WebAssembly, [`log`] and [`progress`] print to stderr.

#![warn(missing_docs)]

#[doc(hidden)]
pub mod bindings;
mod builders;
mod call;
mod error;
pub mod log;
mod outcome;

pub use call::Call;
pub use error::Error;
pub use log::progress;
pub use outcome::Outcome;
/// The `serde_json` crate, re-exported for [`serde_json::Value`] and friends.
pub use serde_json;
/// Builds a [`serde_json::Value`] from JSON-like syntax; handy for schemas.
pub use serde_json::json;
pub use types::{
    CallResult, ContentBlock, ElicitationAction, ElicitationResponse, EmbeddedResource,
    InputRequired, ModelPreferences, ResourceLink, Root, SamplingMessage, SamplingRequest,
    SamplingResponse, Tool, ToolAnnotations,
};

/// Every type of the Airlock WIT contract (`airlock:mcp/types`).
///
/// The most common ones are also re-exported at the crate root. All of them
/// are plain data with public fields; the SDK adds builder methods to the
/// ones a tool usually constructs.
pub mod types {
    pub use crate::bindings::airlock::mcp::types::*;
}

/// The tools of one component.
///
/// Implement it for a type (usually an empty `struct`) and pass that type to
/// [`export!`]. Both functions are associated functions, not methods: a
/// component keeps no state between calls, so there is no `self` to keep.
pub trait Tools {
    /// Describes every tool of the component.
    ///
    /// Called once, when Airlock loads the component. It must always return
    /// the same list and must not depend on anything but the component.
    fn list() -> Vec<Tool>;

    /// Runs one round of a call of one of the tools of [`Tools::list`].
    ///
    /// Dispatch on [`Call::name`]. Each round runs in a fresh instance.
    fn call(call: Call) -> Outcome;
}

/// Exports a [`Tools`] implementation as the component's `tools` interface.
///
/// Use it exactly once per component crate, at the top level. It generates
/// the component's exports; nothing else is needed.
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
#[macro_export]
macro_rules! export {
    ($tools:ty) => {
        const _: () = {
            struct AirlockToolsExport;

            impl $crate::__private::Guest for AirlockToolsExport {
                fn list_tools() -> ::std::vec::Vec<$crate::types::Tool> {
                    $crate::__private::list_tools::<$tools>()
                }

                fn call_tool(
                    name: ::std::string::String,
                    arguments: ::std::string::String,
                    round: $crate::types::Round,
                ) -> $crate::types::CallOutcome {
                    $crate::__private::call_tool::<$tools>(name, arguments, round)
                }
            }

            $crate::bindings::__export_tool_provider!(
                AirlockToolsExport with_types_in $crate::bindings
            );
        };
    };
}

/// Support code for [`export!`]; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::exports::airlock::mcp::tools::Guest;
    use crate::types::{CallOutcome, Round, Tool};
    use crate::{Call, Tools};

    /// The `list-tools` export of a [`Tools`] type.
    pub fn list_tools<T: Tools>() -> Vec<Tool> {
        T::list()
    }

    /// The `call-tool` export of a [`Tools`] type.
    pub fn call_tool<T: Tools>(name: String, arguments: String, round: Round) -> CallOutcome {
        T::call(Call::from_parts(name, arguments, round)).into()
    }
}
