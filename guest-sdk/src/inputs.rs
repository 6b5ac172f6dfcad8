//! What one round of a multi-round request knows: the round number, the
//! client's answers, the state of last round and the client's capabilities.
//!
//! Tool calls ([`Call`](crate::Call)), prompt renderings
//! ([`PromptRequest`](crate::PromptRequest)) and resource reads
//! ([`ResourceRead`](crate::ResourceRead)) all run in rounds (MCP Multi
//! Round-Trip Requests). Each of them holds one [`Inputs`] and dereferences
//! to it, so `call.elicitation("key")`, `prompt.state::<S>()` and
//! `read.client().can_sample()` are the very same methods.

use serde::de::DeserializeOwned;

use crate::types::{
    ClientCapabilities, ElicitationAction, ElicitationResponse, InputRequest, InputRequired,
    InputResponse, Role, Root, Round, SamplingContent, SamplingResponse, ToolUse,
};

/// What one round of a request knows besides its own parameters: the round
/// number, the client's answers ([`Inputs::elicitation`],
/// [`Inputs::sampling`], [`Inputs::roots`]), the state returned last round
/// ([`Inputs::state`]) and what the client can answer ([`Inputs::client`]).
///
/// [`Call`](crate::Call), [`PromptRequest`](crate::PromptRequest) and
/// [`ResourceRead`](crate::ResourceRead) dereference to it: call these
/// methods on them directly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    round: Round,
}

impl Inputs {
    /// The inputs of `round`, as the host passes it.
    pub fn new(round: Round) -> Self {
        Self { round }
    }

    /// The round number: 1 on a first request, one more on each retry that
    /// carried state.
    pub fn round(&self) -> u32 {
        self.round.number
    }

    /// Everything about this round, as the host passed it.
    pub fn round_info(&self) -> &Round {
        &self.round
    }

    /// The state returned last round (see
    /// [`InputRequired::state`](crate::InputRequired::state)), deserialized
    /// from JSON.
    ///
    /// `None` when there is no state (the first round), or when the bytes are
    /// not JSON of type `S`, e.g. bytes written with
    /// [`InputRequired::state_bytes`](crate::InputRequired::state_bytes). The
    /// host verifies state before handing it over, so the latter only
    /// happens if the component itself wrote another shape.
    pub fn state<S: DeserializeOwned>(&self) -> Option<S> {
        serde_json::from_slice(self.state_bytes()?).ok()
    }

    /// The raw state bytes returned last round, if any.
    pub fn state_bytes(&self) -> Option<&[u8]> {
        self.round.state.as_deref()
    }

    /// The client's answer under `key`, of any kind.
    ///
    /// Answers may lack keys the component asked for (ask again) and hold
    /// keys it never asked for (ignore them).
    pub fn response(&self, key: &str) -> Option<&InputResponse> {
        self.round
            .responses
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, response)| response)
    }

    /// The user's answer to the elicitation under `key`; `None` if there is
    /// none, or if the answer under `key` is of another kind.
    pub fn elicitation(&self, key: &str) -> Option<&ElicitationResponse> {
        match self.response(key)? {
            InputResponse::Elicitation(answer) => Some(answer),
            _ => None,
        }
    }

    /// The model's reply to the sampling request under `key`; `None` if there
    /// is none, or if the answer under `key` is of another kind.
    pub fn sampling(&self, key: &str) -> Option<&SamplingResponse> {
        match self.response(key)? {
            InputResponse::Sampling(reply) => Some(reply),
            _ => None,
        }
    }

    /// The client's roots, answered under `key`; `None` if there is no such
    /// answer, or if the answer under `key` is of another kind.
    pub fn roots(&self, key: &str) -> Option<&[Root]> {
        match self.response(key)? {
            InputResponse::Roots(roots) => Some(roots),
            _ => None,
        }
    }

    /// What the client can answer on this request.
    pub fn client(&self) -> &ClientCapabilities {
        &self.round.client
    }

    /// Replaces the client capabilities.
    pub(crate) fn set_client(&mut self, client: ClientCapabilities) {
        self.round.client = client;
    }

    /// The inputs of the retry a client would make after `asked`: the next
    /// round number, the state `asked` carried, these answers, and the same
    /// capabilities (and, in a task, still a task round).
    pub(crate) fn retry<K: Into<String>>(
        &self,
        asked: &InputRequired,
        responses: impl IntoIterator<Item = (K, InputResponse)>,
    ) -> Self {
        Self::new(Round {
            number: self.round.number + 1,
            responses: responses
                .into_iter()
                .map(|(key, response)| (key.into(), response))
                .collect(),
            state: asked.state.clone(),
            client: self.round.client,
            task: self.round.task,
        })
    }

    /// The inputs of the task round the host runs after a round returned
    /// `continue-as-task(state)`: the next round number, `state`, no
    /// answers, the same capabilities, and `task` true.
    pub(crate) fn task_round(&self, state: Option<Vec<u8>>) -> Self {
        Self::new(Round {
            number: self.round.number + 1,
            responses: Vec::new(),
            state,
            client: self.round.client,
            task: true,
        })
    }
}

impl From<Round> for Inputs {
    fn from(round: Round) -> Self {
        Self::new(round)
    }
}

/// Gives a request type that holds `inputs: Inputs` its round accessors
/// (through `Deref`) and the unit-test helpers `with_round`, `with_client`
/// and `retry`, written once for every kind of request.
macro_rules! rounds {
    ($request:ident, $what:literal) => {
        impl $request {
            /// What this round knows: number, answers, state, client
            /// capabilities. The same accessors are also reachable directly,
            /// through `Deref`.
            pub fn inputs(&self) -> &$crate::Inputs {
                &self.inputs
            }

            #[doc = concat!("The same ", $what, " with another round: number, answers, state and")]
            /// client capabilities. For unit tests.
            pub fn with_round(mut self, round: $crate::types::Round) -> Self {
                self.inputs = $crate::Inputs::new(round);
                self
            }

            #[doc = concat!("The same ", $what, " with these client capabilities. For unit tests.")]
            pub fn with_client(mut self, client: $crate::types::ClientCapabilities) -> Self {
                self.inputs.set_client(client);
                self
            }

            /// The retry a client would make after `asked`: the next round
            /// number, the state `asked` carried, these answers, and the same
            /// capabilities. For unit tests that walk a component through all
            /// its rounds.
            pub fn retry<K: Into<String>>(
                &self,
                asked: &$crate::InputRequired,
                responses: impl IntoIterator<Item = (K, $crate::types::InputResponse)>,
            ) -> Self {
                let mut next = self.clone();
                next.inputs = self.inputs.retry(asked, responses);
                next
            }
        }

        impl ::std::ops::Deref for $request {
            type Target = $crate::Inputs;

            fn deref(&self) -> &$crate::Inputs {
                &self.inputs
            }
        }
    };
}

pub(crate) use rounds;

impl Default for Round {
    /// Round 1: no answers, no state, no client capabilities, not a task.
    fn default() -> Self {
        Self {
            number: 1,
            responses: Vec::new(),
            state: None,
            client: ClientCapabilities::default(),
            task: false,
        }
    }
}

impl Default for ClientCapabilities {
    /// A client that declared nothing.
    fn default() -> Self {
        Self {
            elicitation_form: false,
            elicitation_url: false,
            sampling: false,
            sampling_tools: false,
            sampling_context: false,
            roots: false,
            tasks: false,
        }
    }
}

impl ClientCapabilities {
    /// A client that declared everything. For unit tests.
    pub fn all() -> Self {
        Self {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            sampling_tools: true,
            sampling_context: true,
            roots: true,
            tasks: true,
        }
    }

    /// The client can show forms (`elicitation`).
    pub fn can_elicit_form(&self) -> bool {
        self.elicitation_form
    }

    /// The client can send the user to a URL (`elicitation.url`).
    pub fn can_elicit_url(&self) -> bool {
        self.elicitation_url
    }

    /// The client can ask its model for completions (`sampling`).
    pub fn can_sample(&self) -> bool {
        self.sampling
    }

    /// The client can sample with `tools` and `tool_choice` (`sampling.tools`).
    pub fn can_sample_with_tools(&self) -> bool {
        self.sampling && self.sampling_tools
    }

    /// The client can sample with an `include_context` other than `none`
    /// (`sampling.context`).
    pub fn can_sample_with_context(&self) -> bool {
        self.sampling && self.sampling_context
    }

    /// The client can list its roots (`roots`).
    pub fn can_list_roots(&self) -> bool {
        self.roots
    }

    /// The client declared the tasks extension
    /// (`io.modelcontextprotocol/tasks`) on this request: a tool may go on
    /// as a task ([`Outcome::continue_as_task`](crate::Outcome::continue_as_task)).
    pub fn can_use_tasks(&self) -> bool {
        self.tasks
    }

    /// Whether the client can answer `request`. Airlock refuses input
    /// requests a client cannot answer (MCP error -32021), so a component
    /// with a fallback should check first.
    pub fn supports(&self, request: &InputRequest) -> bool {
        use crate::types::{ElicitationRequest, IncludeContext};
        match request {
            InputRequest::Elicitation(ElicitationRequest::Form(_)) => self.can_elicit_form(),
            InputRequest::Elicitation(ElicitationRequest::Url(_)) => self.can_elicit_url(),
            InputRequest::Sampling(sampling) => {
                let needs_tools = !sampling.tools.is_empty() || sampling.tool_choice.is_some();
                let needs_context = matches!(
                    sampling.include_context,
                    Some(IncludeContext::ThisServer | IncludeContext::AllServers)
                );
                self.can_sample()
                    && (!needs_tools || self.can_sample_with_tools())
                    && (!needs_context || self.can_sample_with_context())
            }
            InputRequest::Roots => self.can_list_roots(),
        }
    }
}

impl ElicitationResponse {
    /// The user submitted the form with these values (a JSON object), or
    /// agreed to open the URL (pass `serde_json::Value::Null` for no content).
    pub fn accept(content: serde_json::Value) -> Self {
        Self {
            action: ElicitationAction::Accept,
            content: (!content.is_null()).then(|| content.to_string()),
        }
    }

    /// The user explicitly refused.
    pub fn decline() -> Self {
        Self {
            action: ElicitationAction::Decline,
            content: None,
        }
    }

    /// The user dismissed the request without choosing.
    pub fn cancel() -> Self {
        Self {
            action: ElicitationAction::Cancel,
            content: None,
        }
    }

    /// The user accepted (submitted the form, or agreed to open the URL).
    pub fn is_accepted(&self) -> bool {
        self.action == ElicitationAction::Accept
    }

    /// The submitted form values as `T`, if the user accepted and the values
    /// have the shape of `T`; `None` on decline, cancel, no content, or
    /// content of another shape.
    pub fn accepted_content<T: DeserializeOwned>(&self) -> Option<T> {
        if !self.is_accepted() {
            return None;
        }
        serde_json::from_str(self.content.as_deref()?).ok()
    }
}

impl SamplingResponse {
    /// A plain assistant text reply, e.g. to script answers in unit tests.
    pub fn text_reply(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![SamplingContent::Text(crate::types::TextContent {
                text: text.into(),
                annotations: None,
            })],
            model: model.into(),
            stop_reason: Some("endTurn".to_owned()),
        }
    }

    /// The text blocks of the reply, joined by newlines (empty if there are
    /// none).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                SamplingContent::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The tool calls the model asked for, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|block| match block {
            SamplingContent::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
    }
}

impl From<ElicitationResponse> for InputResponse {
    fn from(answer: ElicitationResponse) -> Self {
        Self::Elicitation(answer)
    }
}

impl From<SamplingResponse> for InputResponse {
    fn from(reply: SamplingResponse) -> Self {
        Self::Sampling(reply)
    }
}

impl From<Vec<Root>> for InputResponse {
    fn from(roots: Vec<Root>) -> Self {
        Self::Roots(roots)
    }
}

impl Root {
    /// A root with this `file://` URI and an optional display name.
    pub fn new(uri: impl Into<String>, name: Option<&str>) -> Self {
        Self {
            uri: uri.into(),
            name: name.map(str::to_owned),
        }
    }
}
