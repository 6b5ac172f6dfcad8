//! `everything`: the whole fixture of the MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server leg), as one Airlock
//! component.
//!
//! * Tools (`tools.rs`): plain content (text, image, audio, embedded
//!   resources, errors), progress, the diagnostic tools of
//!   `server-stateless`, every multi-round (MRTR) tool of the
//!   `input-required-result-*` scenarios (`mrtr.rs`), the JSON Schema
//!   2020-12 and `x-mcp-header` tools, and the tools of the 2025-11-25 leg
//!   (`legacy.rs`), written as MRTR tools, and the tools of the tasks
//!   extension (`tasks.rs`).
//! * Prompts (`prompts.rs`), one of them multi-round.
//! * Resources, a resource template and argument completion
//!   (`resources.rs`).
//!
//! Nothing in Airlock knows these names: the component answers the suite on
//! its own. See README.md.

use airlock_guest::{
    Call, Completion, CompletionRequest, Completions, Outcome, Prompt, PromptOutcome,
    PromptRequest, Prompts, ReadOutcome, Resource, ResourceRead, ResourceTemplate, Resources, Tool,
    Tools,
};

mod legacy;
mod media;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

/// The component: one type for all four interfaces.
struct Everything;

impl Tools for Everything {
    fn list() -> Vec<Tool> {
        tools::list()
    }

    fn call(call: Call) -> Outcome {
        tools::call(&call)
    }
}

impl Prompts for Everything {
    fn list() -> Vec<Prompt> {
        prompts::list()
    }

    fn get(request: PromptRequest) -> PromptOutcome {
        prompts::get(&request)
    }
}

impl Resources for Everything {
    fn list() -> Vec<Resource> {
        resources::list()
    }

    fn templates() -> Vec<ResourceTemplate> {
        resources::templates()
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        resources::read(&read)
    }
}

impl Completions for Everything {
    fn complete(request: CompletionRequest) -> Completion {
        resources::complete(&request)
    }
}

airlock_guest::export! {
    tools: Everything,
    prompts: Everything,
    resources: Everything,
    completions: Everything,
}
