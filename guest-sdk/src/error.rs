//! The error a tool reports to the model.

use std::fmt;

/// A failure the model should see: bad arguments, a refusal, a failed step.
///
/// It converts into an [`Outcome`](crate::Outcome) that completes the call
/// with `is_error: true` and the message as text, so a tool function can
/// return `Result<Outcome, Error>` and use `?` freely:
///
/// ```
/// use airlock_guest::{Call, Error, Outcome};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Divide {
///     a: f64,
///     b: f64,
/// }
///
/// fn divide(call: &Call) -> Result<Outcome, Error> {
///     let Divide { a, b } = call.args()?;
///     if b == 0.0 {
///         return Err(Error::new("cannot divide by zero"));
///     }
///     Ok(Outcome::text((a / b).to_string()))
/// }
///
/// let outcome: Outcome = divide(&Call::new("divide", r#"{"a": 1, "b": 0}"#)).into();
/// let result = outcome.result().unwrap();
/// assert!(result.is_error);
/// assert_eq!(result.text_content(), "cannot divide by zero");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message the model will read.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}
