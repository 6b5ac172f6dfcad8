//! Checks of the JSON texts a guest returns (schemas, structured content,
//! `_meta`): the registry checks what a component lists at load and the wire
//! checks every value again as it embeds it verbatim, both with these.

use serde_json::value::RawValue;

/// A guest value that cannot be put on the wire.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GuestValueError(pub String);

/// `text` as JSON, or an error naming `what` it was.
pub(crate) fn json_text<'a>(text: &'a str, what: &str) -> Result<&'a RawValue, GuestValueError> {
    serde_json::from_str(text)
        .map_err(|e| GuestValueError(format!("{what} is not valid JSON: {e}")))
}

/// `text` as a JSON object, or an error naming `what` it was.
pub(crate) fn json_object<'a>(text: &'a str, what: &str) -> Result<&'a RawValue, GuestValueError> {
    let raw = json_text(text, what)?;
    if raw.get().trim_start().starts_with('{') {
        Ok(raw)
    } else {
        Err(GuestValueError(format!("{what} must be a JSON object")))
    }
}

/// Checks a guest's `meta` text: it must be a JSON object.
pub(crate) fn check_meta(meta: &str) -> Result<&RawValue, GuestValueError> {
    json_object(meta, "_meta")
}
