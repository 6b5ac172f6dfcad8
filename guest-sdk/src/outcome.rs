//! How one round of a call ends.

use serde::Serialize;

use crate::Error;
use crate::builders::state_json;
use crate::types::{CallOutcome, CallResult, InputRequired, ProtocolError};

/// How one round of a call ends: done, waiting for input, going on as a
/// task, or failed with a JSON-RPC error.
///
/// Build one with the shortcuts below, or from a [`CallResult`], an
/// [`InputRequired`] or a [`ProtocolError`] with `.into()`.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The call is finished.
    Complete(CallResult),
    /// The tool needs answers from the client, or just another round.
    InputRequired(InputRequired),
    /// The rest of the call runs as a task, from a next round that starts
    /// with this state ([`Outcome::continue_as_task`]).
    ContinueAsTask(Option<Vec<u8>>),
    /// The call ends with this JSON-RPC error ([`Outcome::failed`]).
    Failed(ProtocolError),
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

    /// Goes on as a task (MCP's tasks extension): the host answers the
    /// client at once with the task, then runs the next round in the
    /// background, where [`Call::is_task`](crate::Call::is_task) is true and
    /// [`Inputs::state`](crate::Inputs::state) reads `state` back (JSON).
    ///
    /// Only for a tool whose [`Tool::task_support`](crate::Tool::task_support)
    /// is not `never`, when [`ClientCapabilities::can_use_tasks`] is true:
    /// otherwise the host fails the call. Inside a task it is a checkpoint:
    /// the host stores the state and runs the next round, maybe elsewhere.
    ///
    /// [`ClientCapabilities::can_use_tasks`]: crate::types::ClientCapabilities::can_use_tasks
    ///
    /// # Panics
    ///
    /// If `state` cannot be serialized to JSON (see [`InputRequired::state`]).
    pub fn continue_as_task<S: Serialize + ?Sized>(state: &S) -> Self {
        Self::continue_as_task_bytes(state_json(state))
    }

    /// [`Outcome::continue_as_task`] with raw state bytes, read back with
    /// [`Inputs::state_bytes`](crate::Inputs::state_bytes).
    pub fn continue_as_task_bytes(state: Vec<u8>) -> Self {
        Self::ContinueAsTask(Some(state))
    }

    /// Ends the call with a JSON-RPC error: `code` (e.g. -32603, internal
    /// error) and `message`. A task ends `failed` with it; a plain call gets
    /// it as its response. Only for failures of the request itself: a
    /// failure of the work, which the model should read, is
    /// [`Outcome::error`].
    pub fn failed(code: i32, message: impl Into<String>) -> Self {
        Self::Failed(ProtocolError {
            code,
            message: message.into(),
        })
    }

    /// Completes with an error saying there is no tool called `name`.
    pub fn unknown_tool(name: &str) -> Self {
        Self::error(format!("unknown tool `{name}`"))
    }

    /// The finished result, if this outcome completes the call.
    pub fn result(&self) -> Option<&CallResult> {
        match self {
            Self::Complete(result) => Some(result),
            _ => None,
        }
    }

    /// What the tool asks for, if this outcome asks for input.
    pub fn input_required(&self) -> Option<&InputRequired> {
        match self {
            Self::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }

    /// Whether this outcome goes on as a task.
    pub fn continues_as_task(&self) -> bool {
        matches!(self, Self::ContinueAsTask(_))
    }

    /// The JSON-RPC error, if this outcome fails the call.
    pub fn failure(&self) -> Option<&ProtocolError> {
        match self {
            Self::Failed(error) => Some(error),
            _ => None,
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

impl From<ProtocolError> for Outcome {
    fn from(error: ProtocolError) -> Self {
        Self::Failed(error)
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
            Outcome::ContinueAsTask(state) => Self::ContinueAsTask(state),
            Outcome::Failed(error) => Self::Failed(error),
        }
    }
}

impl From<CallOutcome> for Outcome {
    fn from(outcome: CallOutcome) -> Self {
        match outcome {
            CallOutcome::Complete(result) => Self::Complete(result),
            CallOutcome::InputRequired(asked) => Self::InputRequired(asked),
            CallOutcome::ContinueAsTask(state) => Self::ContinueAsTask(state),
            CallOutcome::Failed(error) => Self::Failed(error),
        }
    }
}
