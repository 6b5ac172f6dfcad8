//! Prompts, resources, resource templates, completions and discovery, as
//! the `everything` component (the MCP conformance fixture) serves them,
//! over HTTP and over stdio. The flows live in `airlock_e2e::everything`.

use airlock_e2e::everything;
use airlock_e2e::over_both_transports;

over_both_transports! {
    prompts_are_listed: "everything" => everything::prompts_are_listed;
    simple_prompt: "everything" => everything::simple_prompt;
    prompt_with_arguments: "everything" => everything::prompt_with_arguments;
    prompt_with_embedded_resource: "everything" => everything::prompt_with_embedded_resource;
    prompt_with_image: "everything" => everything::prompt_with_image;
    prompt_bad_requests_are_invalid_params: "everything" => everything::prompt_bad_requests;
    prompt_input_required_takes_two_rounds: "everything" => everything::prompt_input_required;
    prompt_input_needs_the_elicitation_capability: "everything" => everything::prompt_needs_elicitation_capability;
    prompt_state_is_bound_to_its_prompt: "everything" => everything::prompt_state_is_bound_to_its_prompt;
    resources_and_templates_are_listed: "everything" => everything::resources_and_templates_are_listed;
    read_text_resource: "everything" => everything::read_text_resource;
    read_binary_resource: "everything" => everything::read_binary_resource;
    read_templated_resource: "everything" => everything::read_templated_resource;
    read_unknown_resource_names_the_uri: "everything" => everything::read_unknown_resource;
    bad_cursors_are_invalid_params: "everything" => everything::bad_cursors_are_refused;
    complete_prompt_argument: "everything" => everything::complete_prompt_argument;
    complete_template_variable: "everything" => everything::complete_template_variable;
    complete_bad_references_are_invalid_params: "everything" => everything::complete_bad_references;
    discover_advertises_everything: "everything" => everything::discover_advertises_everything;
}
