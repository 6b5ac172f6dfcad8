//! The methods of the 2026-07-28 wire that Airlock serves, named once:
//! dispatch routes on them, and they are the only method names metrics
//! and other bounded labels take.

/// A method Airlock serves on the 2026-07-28 wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `server/discover`
    ServerDiscover,
    /// `tools/list`
    ToolsList,
    /// `tools/call`
    ToolsCall,
    /// `prompts/list`
    PromptsList,
    /// `prompts/get`
    PromptsGet,
    /// `resources/list`
    ResourcesList,
    /// `resources/templates/list`
    ResourceTemplatesList,
    /// `resources/read`
    ResourcesRead,
    /// `completion/complete`
    CompletionComplete,
    /// `subscriptions/listen`
    SubscriptionsListen,
    /// `tasks/get` (the tasks extension)
    TasksGet,
    /// `tasks/update` (the tasks extension)
    TasksUpdate,
    /// `tasks/cancel` (the tasks extension)
    TasksCancel,
    /// `skills/list` (the skills extension)
    SkillsList,
    /// `skills/get` (the skills extension)
    SkillsGet,
    /// `resources/directory/read` (the skills extension)
    ResourcesDirectoryRead,
}

impl Method {
    /// Whether its answer depends on what the components serve (a list, a
    /// call, a read, a completion, a skill, a task of a tool): while the
    /// server loads its components, such a request waits for the first
    /// load, so that nothing is answered from a registry still empty (a
    /// list that looks complete, a name answered as unknown). Only
    /// `server/discover` (whose `ttlMs` is 0 meanwhile) and
    /// `subscriptions/listen` (which tells of the lists once they load)
    /// answer at once.
    pub fn needs_components(self) -> bool {
        match self {
            Method::ServerDiscover | Method::SubscriptionsListen => false,
            Method::ToolsList
            | Method::ToolsCall
            | Method::PromptsList
            | Method::PromptsGet
            | Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::ResourcesRead
            | Method::CompletionComplete
            | Method::TasksGet
            | Method::TasksUpdate
            | Method::TasksCancel
            | Method::SkillsList
            | Method::SkillsGet
            | Method::ResourcesDirectoryRead => true,
        }
    }

    /// Every method, in the order of the spec's sections.
    pub const ALL: [Method; 16] = [
        Method::ServerDiscover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::PromptsList,
        Method::PromptsGet,
        Method::ResourcesList,
        Method::ResourceTemplatesList,
        Method::ResourcesRead,
        Method::CompletionComplete,
        Method::SubscriptionsListen,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
        Method::SkillsList,
        Method::SkillsGet,
        Method::ResourcesDirectoryRead,
    ];

    /// The method named `name`, if Airlock serves it.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|method| method.name() == name)
    }

    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Method::ServerDiscover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::ResourcesList => "resources/list",
            Method::ResourceTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::CompletionComplete => "completion/complete",
            Method::SubscriptionsListen => "subscriptions/listen",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::SkillsList => "skills/list",
            Method::SkillsGet => "skills/get",
            Method::ResourcesDirectoryRead => "resources/directory/read",
        }
    }
}

/// Methods that older revisions had and 2026-07-28 removed.
pub const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/result",
    "tasks/list",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_parses_from_its_own_name_only() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.name()), Some(method));
        }
        assert_eq!(Method::parse("tools/Call"), None);
        for removed in REMOVED {
            assert_eq!(Method::parse(removed), None, "{removed}");
        }
    }
}
