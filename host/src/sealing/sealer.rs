//! Sealing guest state into `requestState` tokens, and opening them again.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::binding::{Binding, ct_eq};
use super::envelope::{self, Domain, FreshNonce, HEADER_LEN, TAG_LEN};
use super::error::{
    BINDING_FIELD_SIZE, BindingField, GUEST_STATE_SIZE, StateError, TOKEN_LENGTH, TOO_SHORT,
};
use super::keyring::KeyRing;
use super::redemption::{Redemption, RedemptionStore, TokenId};
use super::token::{self, MIN_ENVELOPE_LEN, Payload, TOKEN_ID_LEN};

/// Default token lifetime: 10 minutes, room for a person to answer a form.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// How far in the future `issued_at` may be before a token is refused, to
/// absorb clock differences across a fleet.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// Default largest guest state, in bytes.
pub const DEFAULT_MAX_GUEST_STATE: usize = 48 * 1024;

/// Default longest token text, in characters. Base64 makes 48 KiB of state
/// 64 KiB of text; the rest leaves room for the envelope and long
/// principals, targets and methods.
pub const DEFAULT_MAX_TOKEN_LEN: usize = 72 * 1024;

/// Size limits for [`StateSealer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateLimits {
    /// Largest guest state [`StateSealer::seal`] accepts, in bytes.
    pub max_guest_state: usize,
    /// Longest token text [`StateSealer::open`] decodes, in characters.
    /// Sealing refuses to make a longer one, so every sealed token can be
    /// opened by a sealer with the same limits.
    pub max_token_len: usize,
}

impl Default for StateLimits {
    fn default() -> Self {
        StateLimits {
            max_guest_state: DEFAULT_MAX_GUEST_STATE,
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
        }
    }
}

/// A token that opened and matched its binding.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenedState {
    /// The round number given to [`StateSealer::seal`].
    pub round: u32,
    /// The guest's state, as sealed.
    pub guest_state: Option<Vec<u8>>,
    /// The token's random id: what single-use mode records
    /// ([`StateSealer::with_redemption_store`]).
    pub token_id: [u8; 16],
    /// When it was sealed, unix seconds.
    pub issued_at: u64,
    /// When it expires, unix seconds.
    pub expires_at: u64,
}

impl fmt::Debug for OpenedState {
    /// Shows the guest state's length only: the bytes are the tool's secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token_id: String = self.token_id.iter().map(|b| format!("{b:02x}")).collect();
        f.debug_struct("OpenedState")
            .field("round", &self.round)
            .field("guest_state_len", &self.guest_state.as_ref().map(Vec::len))
            .field("token_id", &token_id)
            .field("issued_at", &self.issued_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Seals guest state into `requestState` tokens and opens them.
///
/// Cheap to share (`Arc`); `seal` and `open` take `&self`.
pub struct StateSealer {
    keys: KeyRing,
    ttl_secs: u64,
    limits: StateLimits,
    /// Single-use mode: where redeemed token ids are recorded.
    redemptions: Option<Arc<dyn RedemptionStore>>,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateSealer")
            .field("keys", &self.keys)
            .field("ttl_secs", &self.ttl_secs)
            .field("limits", &self.limits)
            .field("single_use", &self.single_use())
            .finish()
    }
}

impl StateSealer {
    /// A sealer with these keys, token lifetime and limits. The lifetime is
    /// counted in whole seconds, at least one.
    pub fn new(keys: KeyRing, ttl: Duration, limits: StateLimits) -> Self {
        StateSealer {
            keys,
            ttl_secs: ttl.as_secs().max(1),
            limits,
            redemptions: None,
        }
    }

    /// Single-use mode: [`open`](StateSealer::open) records each token's id
    /// in `store` once the token has passed every other check, and refuses
    /// a token whose id is already there ([`StateError::Replayed`]) or when
    /// the store cannot tell ([`StateError::Unrecorded`]). Processes that
    /// must refuse each other's replays share one store.
    pub fn with_redemption_store(mut self, store: Arc<dyn RedemptionStore>) -> Self {
        self.redemptions = Some(store);
        self
    }

    /// Whether tokens are single-use (a redemption store is set).
    pub fn single_use(&self) -> bool {
        self.redemptions.is_some()
    }

    /// The key ring.
    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }

    /// The lifetime of new tokens.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs)
    }

    /// Seals `guest_state` for the next `round` of the request in `binding`,
    /// valid from now for the TTL. Every call gives a different token (fresh
    /// nonce and token id).
    ///
    /// Fails with [`StateError::TooLarge`] if the guest state is over
    /// [`StateLimits::max_guest_state`] or the token would be over
    /// [`StateLimits::max_token_len`].
    pub fn seal(
        &self,
        binding: &Binding<'_>,
        round: u32,
        guest_state: Option<&[u8]>,
    ) -> Result<String, StateError> {
        self.seal_at(binding, round, guest_state, unix_now())
    }

    /// [`StateSealer::seal`] with the current time given, in unix seconds.
    pub fn seal_at(
        &self,
        binding: &Binding<'_>,
        round: u32,
        guest_state: Option<&[u8]>,
        now: u64,
    ) -> Result<String, StateError> {
        if let Some(state) = guest_state
            && state.len() > self.limits.max_guest_state
        {
            return Err(StateError::TooLarge {
                what: GUEST_STATE_SIZE,
                len: state.len(),
                max: self.limits.max_guest_state,
            });
        }
        // One draw from the operating system for both (a system call each
        // otherwise).
        let (nonce, token_id) = FreshNonce::draw_with::<TOKEN_ID_LEN>()?;
        self.seal_drawn(binding, round, guest_state, now, nonce, token_id)
    }

    /// [`StateSealer::seal_at`] once the guest state's size is checked and
    /// the random nonce and token id drawn.
    pub(super) fn seal_drawn(
        &self,
        binding: &Binding<'_>,
        round: u32,
        guest_state: Option<&[u8]>,
        now: u64,
        nonce: FreshNonce,
        token_id: [u8; TOKEN_ID_LEN],
    ) -> Result<String, StateError> {
        let payload = Payload {
            issued_at: now,
            expires_at: now.saturating_add(self.ttl_secs),
            round,
            token_id,
            principal: binding.principal,
            method: binding.method,
            target: binding.target,
            arguments_digest: binding.arguments_digest,
            guest_state,
        };
        let too_long_field = || StateError::TooLarge {
            what: BINDING_FIELD_SIZE,
            len: [binding.principal, binding.method, binding.target]
                .iter()
                .map(|s| s.len())
                .max()
                .unwrap_or(0),
            max: u32::MAX as usize,
        };
        let payload_len = payload.encoded_len().ok_or_else(too_long_field)?;
        let envelope_len = payload_len
            .checked_add(HEADER_LEN + TAG_LEN)
            .ok_or_else(too_long_field)?;
        let text_len = base64_len(envelope_len).ok_or_else(too_long_field)?;
        if text_len > self.limits.max_token_len {
            return Err(StateError::TooLarge {
                what: TOKEN_LENGTH,
                len: text_len,
                max: self.limits.max_token_len,
            });
        }
        let sealed = envelope::seal(
            &self.keys,
            Domain::RequestState,
            &[],
            nonce,
            payload_len,
            |out| payload.encode(out).ok_or_else(too_long_field),
        )?;
        debug_assert_eq!(sealed.len(), envelope_len);
        Ok(URL_SAFE_NO_PAD.encode(&sealed))
    }

    /// Opens a token from a client and checks it against the request in
    /// `binding`, at the current time.
    ///
    /// Checks, in order: text length, base64url (no padding), version, key
    /// id, AEAD tag, payload layout, expiry, issue time, principal, method,
    /// target, arguments digest, and last, in single-use mode, that the
    /// token id has not been redeemed (which redeems it). Any failure is an
    /// error naming the check; send the client
    /// [`StateError::client_message`], never the error.
    pub fn open(&self, token: &str, binding: &Binding<'_>) -> Result<OpenedState, StateError> {
        self.open_at(token, binding, unix_now())
    }

    /// [`StateSealer::open`] with the current time given, in unix seconds.
    pub fn open_at(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now: u64,
    ) -> Result<OpenedState, StateError> {
        if token.len() > self.limits.max_token_len {
            return Err(StateError::TokenTooLong {
                len: token.len(),
                max: self.limits.max_token_len,
            });
        }
        let mut sealed = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| StateError::Malformed("not base64url without padding"))?;
        if sealed.len() < MIN_ENVELOPE_LEN {
            return Err(StateError::Malformed(TOO_SHORT));
        }
        let plaintext = envelope::open(&self.keys, Domain::RequestState, &[], &mut sealed)?;
        let payload = Payload::decode(plaintext).map_err(StateError::BadPayload)?;

        if now >= payload.expires_at {
            return Err(StateError::Expired {
                expires_at: payload.expires_at,
                now,
            });
        }
        if payload.issued_at > now.saturating_add(CLOCK_SKEW.as_secs()) {
            return Err(StateError::NotYetValid {
                issued_at: payload.issued_at,
                now,
            });
        }
        if !ct_eq(payload.principal.as_bytes(), binding.principal.as_bytes()) {
            return Err(StateError::WrongPrincipal);
        }
        let fields = [
            (
                BindingField::Method,
                payload.method.as_bytes(),
                binding.method.as_bytes(),
            ),
            (
                BindingField::Target,
                payload.target.as_bytes(),
                binding.target.as_bytes(),
            ),
            (
                BindingField::Arguments,
                &payload.arguments_digest[..],
                &binding.arguments_digest[..],
            ),
        ];
        for (field, sealed, presented) in fields {
            if !ct_eq(sealed, presented) {
                return Err(StateError::WrongRequest { field });
            }
        }
        // Last: only a genuine token presented with its own request spends
        // its id.
        if let Some(store) = &self.redemptions {
            let id = TokenId::from_bytes(payload.token_id);
            match store.redeem(&id, payload.expires_at, now) {
                Ok(Redemption::First) => {}
                Ok(Redemption::Replay) => return Err(StateError::Replayed(id)),
                Err(error) => return Err(StateError::Unrecorded(error)),
            }
        }
        Ok(OpenedState {
            round: payload.round,
            guest_state: payload.guest_state.map(<[u8]>::to_vec),
            token_id: payload.token_id,
            issued_at: payload.issued_at,
            expires_at: payload.expires_at,
        })
    }
}

/// Length of the unpadded base64 text for `bytes` bytes.
fn base64_len(bytes: usize) -> Option<usize> {
    Some(bytes.checked_mul(4)?.div_ceil(3))
}

/// Seconds since the unix epoch (0 if the clock is before it).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

// The default limits must let the largest default guest state through with
// a generous binding (4 KiB of principal, method and target together).
const _: () = {
    let envelope =
        HEADER_LEN + token::PAYLOAD_FIXED_LEN + 4 + DEFAULT_MAX_GUEST_STATE + 4096 + TAG_LEN;
    assert!((envelope * 4).div_ceil(3) <= DEFAULT_MAX_TOKEN_LEN);
};
