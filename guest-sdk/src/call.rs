//! One round of a tool call.

use serde::de::DeserializeOwned;

use crate::inputs::rounds;
use crate::types::Round;
use crate::{Error, Inputs};

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
