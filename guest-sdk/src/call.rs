//! One round of a tool call.

use serde::de::DeserializeOwned;

use crate::inputs::rounds;
use crate::types::Round;
use crate::{Error, Inputs, Outcome};

/// One round of a call: the tool name, its arguments, and what this round
/// knows.
///
/// The round number, the client's answers, the state of last round and the
/// client's capabilities come from [`Inputs`], which `Call` dereferences to:
/// `call.elicitation("key")`, `call.state::<S>()`, `call.client()` and so on.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    name: String,
    arguments: String,
    inputs: Inputs,
}

rounds!(Call, "call");

impl Call {
    /// A first-round call of tool `name` with `arguments` (JSON object text),
    /// from a client that declared no capabilities.
    ///
    /// Airlock builds calls itself; this is for unit tests of tool logic.
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::from_parts(name.into(), arguments.into(), Round::default())
    }

    /// A call from its three parts, as the host passes them.
    pub fn from_parts(name: String, arguments: String, round: Round) -> Self {
        Self {
            name,
            arguments,
            inputs: Inputs::new(round),
        }
    }

    /// True when this round runs as a task, in the background (after a
    /// round returned [`Outcome::continue_as_task`]): nobody waits on it, its
    /// deadline is the longer task-round deadline, and its log and progress
    /// reports go to the host's log only.
    pub fn is_task(&self) -> bool {
        self.round_info().task
    }

    /// The task round the host runs after `outcome`, if `outcome` goes on as
    /// a task: the next round number, the state `outcome` carried, no
    /// answers, the same capabilities, and [`Call::is_task`] true. `None`
    /// for any other outcome. For unit tests that walk a tool through its
    /// task rounds (a task round asking for input goes on with
    /// [`Call::retry`]).
    pub fn task_round_after(&self, outcome: &Outcome) -> Option<Self> {
        let Outcome::ContinueAsTask(state) = outcome else {
            return None;
        };
        let mut next = self.clone();
        next.inputs = self.inputs.task_round(state.clone());
        Some(next)
    }

    /// The name of the tool being called.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments as JSON text (always a JSON object when Airlock calls).
    pub fn arguments_json(&self) -> &str {
        &self.arguments
    }

    /// The arguments, deserialized into `T`.
    ///
    /// The error reads `invalid arguments: <reason>` and converts into an
    /// `is_error` result, so `let args: MyArgs = call.args()?;` in a function
    /// returning `Result<Outcome, Error>` reports bad arguments to the model.
    pub fn args<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(&self.arguments)
            .map_err(|err| Error::new(format!("invalid arguments: {err}")))
    }
}
