//! How one round of a call ends.

use serde::Serialize;

use crate::Error;
use crate::types::{CallOutcome, CallResult, InputRequired};

/// How one round of a call ends: done, or waiting for input.
///
/// Build one with the shortcuts below, or from a [`CallResult`] or an
/// [`InputRequired`] with `.into()`.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The call is finished.
    Complete(CallResult),
    /// The tool needs answers from the client, or just another round.
    InputRequired(InputRequired),
}

impl Outcome {
    /// Completes with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallResult::text(text).into()
    }

    /// Completes with `is_error: true` and one text block: a failure the
    /// model should read and may correct.
    pub fn error(message: impl Into<String>) -> Self {
        CallResult::error(message).into()
    }

    /// Completes with `value` as structured content, and its JSON text as
    /// the one text block (for clients that only read text).
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        CallResult::json(value).into()
    }

    /// Asks the client only to call again, carrying `state` (serialized as
    /// JSON): a cooperative continuation, for work done in slices.
    ///
    /// # Panics
    ///
    /// If `state` cannot be serialized to JSON (see [`InputRequired::state`]).
    pub fn continue_with<S: Serialize + ?Sized>(state: &S) -> Self {
        InputRequired::new().state(state).into()
    }

    /// Completes with an error saying there is no tool called `name`.
    pub fn unknown_tool(name: &str) -> Self {
        Self::error(format!("unknown tool `{name}`"))
    }

    /// The finished result, if this outcome completes the call.
    pub fn result(&self) -> Option<&CallResult> {
        match self {
            Self::Complete(result) => Some(result),
            Self::InputRequired(_) => None,
        }
    }

    /// What the tool asks for, if this outcome asks for input.
    pub fn input_required(&self) -> Option<&InputRequired> {
        match self {
            Self::Complete(_) => None,
            Self::InputRequired(asked) => Some(asked),
        }
    }
}

impl From<CallResult> for Outcome {
    fn from(result: CallResult) -> Self {
        Self::Complete(result)
    }
}

impl From<InputRequired> for Outcome {
    fn from(asked: InputRequired) -> Self {
        Self::InputRequired(asked)
    }
}

impl From<Error> for Outcome {
    /// An `is_error` result with the error's message.
    fn from(error: Error) -> Self {
        Self::error(error.message())
    }
}

impl<T: Into<Outcome>, E: Into<Outcome>> From<Result<T, E>> for Outcome {
    /// Either side of the result, so that a tool function may return
    /// `Result<Outcome, Error>` and be dispatched with `.into()`.
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(done) => done.into(),
            Err(failed) => failed.into(),
        }
    }
}

impl From<Outcome> for CallOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Complete(result) => Self::Complete(result),
            Outcome::InputRequired(asked) => Self::InputRequired(asked),
        }
    }
}

impl From<CallOutcome> for Outcome {
    fn from(outcome: CallOutcome) -> Self {
        match outcome {
            CallOutcome::Complete(result) => Self::Complete(result),
            CallOutcome::InputRequired(asked) => Self::InputRequired(asked),
        }
    }
}
