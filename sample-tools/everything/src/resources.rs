//! The resources, the resource template and argument completion.

use airlock_guest::{
    Completion, CompletionRequest, ReadOutcome, Resource, ResourceContents, ResourceRead,
    ResourceTemplate,
};

use crate::media;

/// The one resource template.
const TEMPLATE: &str = "test://template/{id}/data";

/// Every fixed resource. `test://static-text` comes first: `caching` reads
/// the first listed resource.
pub fn list() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "static-text")
            .title("Static Text Resource")
            .description("A static text resource for testing")
            .mime_type("text/plain"),
        Resource::new("test://static-binary", "static-binary")
            .title("Static Binary Resource")
            .description("A static binary resource (image) for testing")
            .mime_type("image/png"),
        Resource::new("test://watched-resource", "watched-resource")
            .title("Watched Resource")
            .description("A resource clients can subscribe to for updates")
            .mime_type("text/plain"),
    ]
}

/// Every resource template.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(TEMPLATE, "template")
            .title("Template Resource")
            .description("A resource template with an id variable")
            .mime_type("application/json"),
    ]
}

/// Reads one resource; anything unknown is not found.
pub fn read(read: &ResourceRead) -> ReadOutcome {
    let uri = read.uri();
    match uri {
        "test://static-text" => {
            ResourceContents::text(uri, "This is the content of the static text resource.")
                .mime_type("text/plain")
                .into()
        }
        "test://static-binary" => ResourceContents::blob(uri, media::png())
            .mime_type("image/png")
            .into(),
        "test://watched-resource" => ResourceContents::text(uri, "Watched resource content")
            .mime_type("text/plain")
            .into(),
        _ => templated(read).into(),
    }
}

/// `test://template/{id}/data`, read with the `id` the host matched.
fn templated(read: &ResourceRead) -> Option<ResourceContents> {
    if read.template() != Some(TEMPLATE) {
        return None;
    }
    let id = airlock_guest::serde_json::to_string(read.variable("id")?).ok()?;
    let data =
        airlock_guest::serde_json::to_string(&format!("Data for ID: {}", read.variable("id")?))
            .ok()?;
    let text = format!(r#"{{"id":{id},"templateTest":true,"data":{data}}}"#);
    Some(ResourceContents::text(read.uri(), text).mime_type("application/json"))
}

/// Suggestions for prompt arguments and the template's `id`, filtered by
/// what the user typed.
pub fn complete(request: &CompletionRequest) -> Completion {
    let candidates: &[&str] = match (request.prompt(), request.template(), request.argument()) {
        (Some("test_prompt_with_arguments"), _, "arg1") => {
            &["testValue1", "test-alpha", "test-beta", "example"]
        }
        (Some("test_prompt_with_arguments"), _, _) => {
            &["testValue2", "test-gamma", "test-delta", "sample"]
        }
        (Some("test_prompt_with_embedded_resource"), _, "resourceUri") => &[
            "test://example-resource",
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
        ],
        (_, Some(TEMPLATE), "id") => &["1", "2", "3", "123"],
        _ => &[],
    };
    Completion::matching(candidates.iter().copied(), request.value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Everything;
    use airlock_guest::{Completions, Resources, serde_json};

    #[test]
    fn resources_and_templates_are_listed_with_descriptions() {
        let resources = <Everything as Resources>::list();
        let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "test://static-text",
                "test://static-binary",
                "test://watched-resource"
            ]
        );
        assert!(
            resources
                .iter()
                .all(|r| r.description.is_some() && r.mime_type.is_some())
        );
        assert_eq!(resources[0].name, "static-text");
        assert_eq!(resources[1].mime_type.as_deref(), Some("image/png"));

        let templates = <Everything as Resources>::templates();
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].uri_template, "test://template/{id}/data");
        assert_eq!(templates[0].name, "template");
        assert_eq!(templates[0].mime_type.as_deref(), Some("application/json"));
        assert!(templates[0].description.is_some());
    }

    #[test]
    fn every_listed_resource_reads() {
        for resource in <Everything as Resources>::list() {
            let outcome = <Everything as Resources>::read(ResourceRead::new(&resource.uri));
            let contents = outcome.contents().expect("readable");
            assert_eq!(contents.len(), 1);
            assert_eq!(contents[0].uri, resource.uri);
            assert_eq!(contents[0].mime_type, resource.mime_type);
        }
        let text = read(&ResourceRead::new("test://static-text"));
        assert_eq!(
            text.contents().unwrap()[0].as_text(),
            Some("This is the content of the static text resource.")
        );
        let binary = read(&ResourceRead::new("test://static-binary"));
        assert_eq!(
            binary.contents().unwrap()[0].as_blob(),
            Some(&media::png()[..])
        );
        let watched = read(&ResourceRead::new("test://watched-resource"));
        assert_eq!(
            watched.contents().unwrap()[0].as_text(),
            Some("Watched resource content")
        );
    }

    #[test]
    fn template_reads_use_the_matched_id() {
        let read_id = |id: &str| {
            read(
                &ResourceRead::new(format!("test://template/{id}/data"))
                    .with_template(TEMPLATE, [("id", id)]),
            )
        };
        let outcome = read_id("123");
        let contents = &outcome.contents().unwrap()[0];
        assert_eq!(contents.uri, "test://template/123/data");
        assert_eq!(contents.mime_type.as_deref(), Some("application/json"));
        assert_eq!(
            contents.as_text(),
            Some(r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#)
        );

        // A value that needs escaping still gives valid JSON.
        let odd = read_id("a\"b");
        let parsed: serde_json::Value =
            serde_json::from_str(odd.contents().unwrap()[0].as_text().unwrap()).unwrap();
        assert_eq!(parsed["id"], "a\"b");
    }

    #[test]
    fn anything_else_is_not_found() {
        for read_of in [
            ResourceRead::new("test://nonexistent-resource-for-conformance-testing"),
            // A template URI the host did not match.
            ResourceRead::new("test://template/123/data"),
            // Another template.
            ResourceRead::new("test://other/1").with_template("test://other/{id}", [("id", "1")]),
            // The template without its variable.
            ResourceRead::new("test://template//data").with_template(TEMPLATE, [("x", "1")]),
        ] {
            assert!(read(&read_of).is_not_found(), "{}", read_of.uri());
        }
    }

    #[test]
    fn completion_filters_by_prefix() {
        let complete = <Everything as Completions>::complete;
        let arg1 = complete(CompletionRequest::for_prompt(
            "test_prompt_with_arguments",
            "arg1",
            "test",
        ));
        assert_eq!(arg1.values, ["testValue1", "test-alpha", "test-beta"]);
        assert_eq!(arg1.total, Some(3));
        assert!(!arg1.has_more);

        let all = complete(CompletionRequest::for_prompt(
            "test_prompt_with_arguments",
            "arg2",
            "",
        ));
        assert_eq!(all.values.len(), 4);

        let ids = complete(CompletionRequest::for_template(TEMPLATE, "id", "1"));
        assert_eq!(ids.values, ["1", "123"]);

        let none = complete(CompletionRequest::for_prompt("test_simple_prompt", "x", ""));
        assert!(none.values.is_empty());
        assert_eq!(none.total, Some(0));
    }
}
