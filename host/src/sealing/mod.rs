//! Sealing: what Airlock hands to others to keep for it, encrypted and
//! authenticated with the key ring, so that they can neither read nor alter
//! it. Two things are sealed, each in its own domain of one envelope:
//!
//! - `requestState` (MCP 2026-07-28, SEP-2322): the guest's bytes between
//!   rounds of a multi round-trip request, held by the client
//!   ([`StateSealer`], most of this module);
//! - a task's payload: what a task keeps of its guest between rounds (its
//!   arguments, state and the client's answers), held by the task store and
//!   bound to the task's id and owner (sealed by the tasks module through
//!   `envelope.rs`).
//!
//! # The envelope
//!
//! ```text
//! sealed = version (0x01) || key_id (8) || nonce (12) || ciphertext || tag (16)
//! aad    = label || version || key_id || associated
//! label  = "airlock/request-state" | "airlock/task-payload"
//! ```
//!
//! AES-256-GCM under the ring's first key (`envelope.rs`). The version byte
//! and key id travel in clear (the key id picks the key without trial
//! decryption) and are authenticated as associated data, as are the
//! domain's label, so that what one domain seals means nothing in the
//! other, and the bytes its user binds it to (`associated`: nothing for
//! `requestState`, whose binding is inside the plaintext; the task's id and
//! owner, each as u32 length || UTF-8, for a task payload). Each seal draws
//! a fresh random 96-bit nonce. With random nonces a key should seal fewer
//! than 2^32 envelopes; rotate long before that. Only the envelope uses the
//! keys.
//!
//! # `requestState`
//!
//! A tool call, prompt or resource read may end with `input_required` and an
//! opaque `requestState` string that the client echoes on its retry. Airlock
//! puts the guest's state bytes there, sealed, so the client can neither
//! read nor alter them, and bound to the caller and the request so that
//! they cannot be replayed elsewhere. The spec treats `requestState` as
//! attacker-controlled input (§6.6); nothing in a token is trusted until it
//! has authenticated and matched its binding.
//!
//! ```text
//! requestState = base64url-nopad( sealed )            (domain "airlock/request-state")
//! plaintext    = issued_at u64 || expires_at u64 || round u32 || token_id (16)
//!                || principal || method || target      (each u32 length || UTF-8)
//!                || arguments_digest (32)
//!                || 0x00 | 0x01 || u32 length || guest_state
//! ```
//!
//! Integers are big-endian; see `token.rs` for the details. Each seal draws
//! a 128-bit token id with the nonce (one call to the operating system), so
//! sealing the same input twice gives two different tokens (the spec
//! requires the state to change between rounds).
//!
//! # What a token is bound to, and why
//!
//! [`Binding`]: the principal, the method, the target (tool name, prompt name
//! or resource URI) and a SHA-256 digest of the canonical JSON of the
//! arguments ([`digest_arguments`]). The retry must carry the original
//! params, so all of them must match. This stops another user from replaying
//! a stolen token (principal), and stops a token from one call being fed to
//! a different tool or to the same tool with different arguments, where the
//! guest would trust state it never produced for that input. The token also
//! carries `issued_at` and `expires_at` (a short TTL bounds replay), and the
//! round number. By itself the binding does not make a token single-use:
//! within its lifetime the same token can be presented again with the same
//! request (see *Single use* below).
//!
//! [`StateSealer::open`] runs every check in a fixed order and returns a
//! [`StateError`] naming the one that failed, for the server log. The client
//! always gets the same [`StateError::client_message`], so it learns nothing
//! about which check failed.
//!
//! # Single use (optional)
//!
//! [`StateSealer::with_redemption_store`] makes every token redeemable once:
//! after all the checks above pass, `open` records the token's random id in
//! a [`RedemptionStore`] and refuses any later presentation
//! ([`StateError::Replayed`], the same client message as any other failure).
//! A token that fails a check never reaches the store, so a forgery or a
//! misapplied token cannot spend a genuine token's id. If the store cannot
//! answer, the token is refused ([`StateError::Unrecorded`]; fail closed).
//! The default store, [`InMemoryRedemptions`], forgets ids when their token
//! expires and holds a bounded number; a fleet shares one in Redis,
//! [`RedisRedemptions`] (`--single-use-store`), as the [`redemption`]
//! module describes.
//!
//! It is off by default (`airlock serve --single-use-state` turns it on)
//! because it breaks a legitimate retry: a client whose connection fails
//! after the server opened its token, before the answer arrived, cannot
//! send that round again and must restart the request from round 1. Without
//! it, replay is still confined to the same principal, the same request and
//! the token's lifetime, and the guest sees exactly the state it sealed.
//!
//! # Keys and rotation
//!
//! A [`KeyRing`] is an ordered list of 256-bit keys: the first seals, every
//! one opens. Each key's id is the first 8 bytes of its SHA-256. To rotate
//! without downtime, add the new key at the end everywhere, then move it to
//! the front everywhere, then remove the old key once its tokens have
//! expired (one TTL later). A single process can skip the first step: put
//! the new key first and keep the old one second, restart, and remove the
//! old key one TTL later. A token sealed with a key that has been removed
//! no longer opens ([`StateError::UnknownKey`]); the client restarts the call.
//! A task payload sealed with it no longer opens either, and its task fails:
//! keep a retired key for as long as tasks live (`--task-ttl`) too.
//!
//! # Why a fleet needs a shared key ring
//!
//! The protocol is stateless: any retry may reach any Airlock process behind a
//! load balancer, which must open the token on its own with no shared memory.
//! So every process needs the same keys, configured from one key file or
//! environment value ([`KeyRing::parse`]; `airlock keygen` prints a key from
//! [`generate_key`]). [`KeyRing::ephemeral`] makes a random key for a single
//! process without configuration; its tokens open only in that process, and
//! only until it restarts.

mod binding;
pub(crate) mod envelope;
mod error;
mod keyring;
pub mod redemption;
mod sealer;
mod token;

#[cfg(test)]
mod tests;

pub use binding::{Binding, canonical_arguments, canonical_json, digest_arguments};
pub use error::{
    BINDING_FIELD_SIZE, BindingField, GUEST_STATE_SIZE, INVALID_STATE_MESSAGE, SEAL_FAILED_MESSAGE,
    STATE_UNRECORDED_MESSAGE, StateError, TOKEN_LENGTH,
};
pub use keyring::{KEY_ID_LEN, KEY_LEN, KeyError, KeyId, KeyRing, STATE_KEYS_ENV, generate_key};
pub use redemption::{
    DEFAULT_REDEMPTION_CAPACITY, InMemoryRedemptions, REDEEM_TIMEOUT, Redemption, RedemptionStore,
    RedisRedemptions, StoreError, TokenId,
};
pub use sealer::{
    CLOCK_SKEW, DEFAULT_MAX_GUEST_STATE, DEFAULT_MAX_TOKEN_LEN, DEFAULT_TTL, OpenedState,
    StateLimits, StateSealer,
};
pub use token::PayloadError;
