//! Why sealing or opening `requestState` failed.
//!
//! The variants are precise, for the server log. Clients get one message for
//! every failure to open ([`StateError::client_message`]), so a client cannot
//! learn which check its token failed.

use std::fmt;

use super::envelope::{OpenFailed, SealFailed};
use super::keyring::KeyId;
use super::redemption::{StoreError, TokenId};
use super::token::PayloadError;

/// The one message sent to clients for any `requestState` that does not open.
pub const INVALID_STATE_MESSAGE: &str = "requestState is invalid or expired; retry the original request without requestState and inputResponses";

/// The message sent to clients when the server cannot seal state (its own
/// failure, not the client's).
pub const SEAL_FAILED_MESSAGE: &str =
    "the server could not save the state of this request for another round";

/// The message sent to clients when single-use mode cannot record that a
/// token was used ([`StateError::Unrecorded`]): the server's problem; the
/// token was not spent, so the same request may be retried.
pub const STATE_UNRECORDED_MESSAGE: &str = "the server could not record the use of this requestState (single-use mode); retry this request later";

/// [`StateError::Malformed`] for a token shorter than the smallest one.
pub(super) const TOO_SHORT: &str = "too short to be a requestState token";

/// [`StateError::TooLarge::what`] when the guest state is over its limit.
pub const GUEST_STATE_SIZE: &str = "guest state size in bytes";
/// [`StateError::TooLarge::what`] when the whole token would be too long to
/// open again (long principal, target or state).
pub const TOKEN_LENGTH: &str = "requestState length in characters";
/// [`StateError::TooLarge::what`] when a bound string is over 4 GiB.
pub const BINDING_FIELD_SIZE: &str = "binding field size in bytes";

/// A field of the request a token is bound to, other than the principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingField {
    /// The JSON-RPC method.
    Method,
    /// The tool name, prompt name or resource URI.
    Target,
    /// The digest of the arguments.
    Arguments,
}

impl fmt::Display for BindingField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BindingField::Method => "method",
            BindingField::Target => "target (tool, prompt or resource)",
            BindingField::Arguments => "arguments",
        })
    }
}

/// A failure to seal or open `requestState`.
///
/// Every variant except [`StateError::TooLarge`] and [`StateError::Sealing`]
/// comes from [`open`](super::StateSealer::open). All of those but
/// [`StateError::Unrecorded`] mean the client's token is not acceptable
/// ([`StateError::is_client_error`]); log the variant, send
/// [`StateError::client_message`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The token text is longer than the configured limit; not decoded.
    #[error("requestState is {len} characters, over the limit of {max}")]
    TokenTooLong {
        /// Length of the text.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not base64url without padding, or too short to be a token.
    #[error("requestState is malformed: {0}")]
    Malformed(&'static str),
    /// The version byte is not one this build reads.
    #[error("requestState has unknown format version {0:#04x}")]
    UnsupportedVersion(u8),
    /// Sealed with a key that is not in the ring (removed by rotation, or a
    /// fleet member with a different ring, or a forged id).
    #[error("requestState was sealed with key id {0}, which is not in the key ring")]
    UnknownKey(KeyId),
    /// AEAD authentication failed: the token was altered, or made without
    /// the key.
    #[error("requestState failed authentication: altered, or not sealed by a key in the ring")]
    Forged,
    /// Authenticated, but the payload does not decode: a bug or a format
    /// mismatch between holders of the key, not a client's doing.
    #[error("requestState authenticated but its payload is malformed: {0}")]
    BadPayload(PayloadError),
    /// The token's lifetime is over.
    #[error("requestState expired at {expires_at} (now {now}, unix seconds)")]
    Expired {
        /// When it expired.
        expires_at: u64,
        /// The time of the check.
        now: u64,
    },
    /// Issued further in the future than the clock skew allowance: a key
    /// holder's clock is far ahead.
    #[error("requestState was issued at {issued_at}, in the future (now {now}, unix seconds)")]
    NotYetValid {
        /// When it claims to have been issued.
        issued_at: u64,
        /// The time of the check.
        now: u64,
    },
    /// Sealed for another principal.
    #[error("requestState belongs to a different principal")]
    WrongPrincipal,
    /// Sealed for another request by the same principal.
    #[error("requestState belongs to a different request: the {field} differs")]
    WrongRequest {
        /// The first field that differs.
        field: BindingField,
    },
    /// Single-use mode: the token is genuine and matches the request, but it
    /// has been used before. A replay, or a client retrying a round whose
    /// answer it lost.
    #[error("requestState was already used (single-use mode): replay of token id {0} refused")]
    Replayed(TokenId),
    /// Single-use mode: the token is genuine and matches the request, but
    /// the record of used tokens could not say whether it was used before
    /// (full, or a shared store unreachable). Refused (fail closed), not
    /// recorded; the server's problem, not the client's.
    #[error("requestState could not be checked for reuse: {0}")]
    Unrecorded(StoreError),
    /// Sealing refused: the guest state or the whole token is over its limit.
    /// The server's (or the tool's) problem, not the client's.
    #[error("cannot seal requestState: the {what} is {len}, over the limit of {max}")]
    TooLarge {
        /// What is over its limit, with its unit: [`GUEST_STATE_SIZE`],
        /// [`TOKEN_LENGTH`] or [`BINDING_FIELD_SIZE`].
        what: &'static str,
        /// The size that was refused.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Sealing failed in the cryptography (random generator or AEAD).
    #[error("cannot seal requestState: {0}")]
    Sealing(&'static str),
}

impl StateError {
    /// True for a token the client must not send again (answer -32602);
    /// false for the server's own failures: to seal
    /// ([`StateError::TooLarge`], [`StateError::Sealing`]) or to record a
    /// single use ([`StateError::Unrecorded`]).
    pub fn is_client_error(&self) -> bool {
        !matches!(
            self,
            StateError::TooLarge { .. } | StateError::Sealing(_) | StateError::Unrecorded(_)
        )
    }

    /// The message for the client. Every client error (a token that does not
    /// open, or a replay in single-use mode) gives the same
    /// [`INVALID_STATE_MESSAGE`], whatever check failed; a failure to seal
    /// gives [`SEAL_FAILED_MESSAGE`] and a failure to record a single use
    /// [`STATE_UNRECORDED_MESSAGE`].
    pub fn client_message(&self) -> &'static str {
        match self {
            StateError::Unrecorded(_) => STATE_UNRECORDED_MESSAGE,
            e if e.is_client_error() => INVALID_STATE_MESSAGE,
            _ => SEAL_FAILED_MESSAGE,
        }
    }

    /// The check that failed, as a fixed word (for metrics): its kind,
    /// never its details.
    pub fn reason(&self) -> &'static str {
        match self {
            StateError::TokenTooLong { .. } => "too_long",
            StateError::Malformed(_) => "malformed",
            StateError::UnsupportedVersion(_) => "unsupported_version",
            StateError::UnknownKey(_) => "unknown_key",
            StateError::Forged => "forged",
            StateError::BadPayload(_) => "bad_payload",
            StateError::Expired { .. } => "expired",
            StateError::NotYetValid { .. } => "not_yet_valid",
            StateError::WrongPrincipal => "wrong_principal",
            StateError::WrongRequest { .. } => "wrong_request",
            StateError::Replayed(_) => "replayed",
            StateError::Unrecorded(_) => "unrecorded",
            StateError::TooLarge { .. } => "too_large",
            StateError::Sealing(_) => "sealing",
        }
    }
}

impl From<SealFailed> for StateError {
    fn from(failed: SealFailed) -> Self {
        StateError::Sealing(failed.message())
    }
}

impl From<OpenFailed> for StateError {
    fn from(failed: OpenFailed) -> Self {
        match failed {
            OpenFailed::TooShort => StateError::Malformed(TOO_SHORT),
            OpenFailed::Version(version) => StateError::UnsupportedVersion(version),
            OpenFailed::UnknownKey(id) => StateError::UnknownKey(id),
            OpenFailed::Forged => StateError::Forged,
        }
    }
}
