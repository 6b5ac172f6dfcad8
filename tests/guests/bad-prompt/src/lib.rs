//! Test-only guest for Airlock's loading tests: a well-formed tool next to a
//! prompt whose description is empty. The host must skip the whole
//! component at load, naming the file and the prompt, so the tool
//! (`bad_prompt_tool`) is never served. Never deploy it.

use airlock_guest::{Call, Outcome, Prompt, PromptOutcome, PromptRequest, Prompts, Tool, Tools};

struct BadPrompt;

impl Tools for BadPrompt {
    fn list() -> Vec<Tool> {
        vec![Tool::new(
            "bad_prompt_tool",
            "A well-formed tool in a component whose prompt is malformed.",
        )]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "bad_prompt_tool" => Outcome::text("served anyway"),
            other => Outcome::unknown_tool(other),
        }
    }
}

impl Prompts for BadPrompt {
    fn list() -> Vec<Prompt> {
        vec![Prompt::new("undescribed_prompt", "")]
    }

    fn get(request: PromptRequest) -> PromptOutcome {
        PromptOutcome::unknown_prompt(request.name())
    }
}

airlock_guest::export! {
    tools: BadPrompt,
    prompts: BadPrompt,
}
