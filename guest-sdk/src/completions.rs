//! Argument completion: the request and the suggested values.

use crate::types::{Completion, CompletionRequest, CompletionTarget};

/// The most values one completion may hold (MCP's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

impl CompletionRequest {
    /// A request to complete argument `argument` of prompt `prompt`, typed so
    /// far as `value`. For unit tests.
    pub fn for_prompt(
        prompt: impl Into<String>,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            target: CompletionTarget::Prompt(prompt.into()),
            argument_name: argument.into(),
            argument_value: value.into(),
            context: Vec::new(),
        }
    }

    /// A request to complete variable `variable` of the resource template
    /// `uri_template`, typed so far as `value`. For unit tests.
    pub fn for_template(
        uri_template: impl Into<String>,
        variable: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            target: CompletionTarget::ResourceTemplate(uri_template.into()),
            argument_name: variable.into(),
            argument_value: value.into(),
            context: Vec::new(),
        }
    }

    /// The same request with `value` already given for argument `name`. For
    /// unit tests.
    pub fn with_context(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.context.push((name.into(), value.into()));
        self
    }

    /// The prompt whose argument is completed, if the target is a prompt.
    pub fn prompt(&self) -> Option<&str> {
        match &self.target {
            CompletionTarget::Prompt(name) => Some(name),
            CompletionTarget::ResourceTemplate(_) => None,
        }
    }

    /// The `uri-template` whose variable is completed, if the target is a
    /// resource template.
    pub fn template(&self) -> Option<&str> {
        match &self.target {
            CompletionTarget::Prompt(_) => None,
            CompletionTarget::ResourceTemplate(template) => Some(template),
        }
    }

    /// The argument (or template variable) being completed.
    pub fn argument(&self) -> &str {
        &self.argument_name
    }

    /// What the user has typed so far.
    pub fn value(&self) -> &str {
        &self.argument_value
    }

    /// The value already given for another argument `name`, if any.
    pub fn context_value(&self, name: &str) -> Option<&str> {
        self.context
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Default for Completion {
    fn default() -> Self {
        Self::empty()
    }
}

impl Completion {
    /// These values: the first [`MAX_COMPLETION_VALUES`] of them, with
    /// `total` set to how many there are and `has_more` set when some were
    /// cut.
    pub fn new<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        Self {
            values,
            total: Some(u32::try_from(total).unwrap_or(u32::MAX)),
            has_more: total > MAX_COMPLETION_VALUES,
        }
    }

    /// No suggestions.
    pub fn empty() -> Self {
        Self::new(Vec::<String>::new())
    }

    /// The `candidates` that start with `typed` (ignoring ASCII case), in
    /// order, capped as by [`Completion::new`].
    pub fn matching<S: AsRef<str>>(candidates: impl IntoIterator<Item = S>, typed: &str) -> Self {
        let typed = typed.to_ascii_lowercase();
        Self::new(
            candidates
                .into_iter()
                .filter(|candidate| candidate.as_ref().to_ascii_lowercase().starts_with(&typed))
                .map(|candidate| candidate.as_ref().to_owned()),
        )
    }
}
