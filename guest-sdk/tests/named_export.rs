//! The named form of `export!`: a subset of the interfaces, keys in any
//! order. That this file compiles is most of the test: the macro must
//! generate the exports of each named interface, and only those (that the
//! built component exports nothing else is checked end to end, with
//! `airlock inspect`, in tests/tests/exports.rs).

use airlock_guest::__private;
use airlock_guest::types::Round;
use airlock_guest::{
    Completion, CompletionRequest, Completions, Prompt, PromptOutcome, PromptRequest, Prompts,
    ReadOutcome, ResourceContents, ResourceRead, ResourceTemplate, Resources,
};

struct Fixture;

impl Prompts for Fixture {
    fn list() -> Vec<Prompt> {
        vec![Prompt::new("hello", "Says hello.").required_argument("who", "Whom to greet.")]
    }

    fn get(request: PromptRequest) -> PromptOutcome {
        match request.argument("who") {
            Some(who) => PromptOutcome::text(format!("Say hello to {who}.")),
            None => PromptOutcome::invalid_arguments("who is required"),
        }
    }
}

impl Resources for Fixture {
    fn templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate::new("test://greeting/{who}", "greeting")]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        read.variable("who")
            .map(|who| ResourceContents::text(read.uri(), format!("Hello, {who}!")))
            .into()
    }
}

impl Completions for Fixture {
    fn complete(request: CompletionRequest) -> Completion {
        Completion::matching(["Ada", "Alan", "Grace"], request.value())
    }
}

// No tools; keys out of the documented order; a trailing comma.
airlock_guest::export! {
    completions: Fixture,
    resources: Fixture,
    prompts: Fixture,
}

#[test]
fn the_exported_fixture_answers() {
    assert_eq!(__private::list_prompts::<Fixture>().len(), 1);
    assert_eq!(
        __private::get_prompt::<Fixture>(
            "hello".into(),
            vec![("who".into(), "Ada".into())],
            Round::default()
        ),
        PromptOutcome::text("Say hello to Ada.")
    );
    assert!(__private::list_resources::<Fixture>().is_empty());
    assert_eq!(__private::list_resource_templates::<Fixture>().len(), 1);
    assert!(
        __private::read_resource::<Fixture>("test://other".into(), None, Round::default())
            .is_not_found()
    );
    assert_eq!(
        __private::complete::<Fixture>(CompletionRequest::for_prompt("hello", "who", "a")).values,
        ["Ada", "Alan"]
    );
}
