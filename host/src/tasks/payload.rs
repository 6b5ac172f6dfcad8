//! What a task keeps of its guest between rounds: the call's arguments,
//! the guest's state, the client's answers so far and the capabilities of
//! the request that created the task. A [`TaskStore`](super::TaskStore) (a
//! file, Redis) holds it only sealed.
//!
//! It travels in the envelope `requestState` travels in, under the same key
//! ring, in its own domain, and bound to the task's id and owner: a payload
//! copied onto another task, or read by a store's administrator, gives
//! nothing.
//!
//! ```text
//! sealed     = version (0x01) || key_id (8) || nonce (12) || ciphertext || tag (16)
//! aad        = "airlock/task-payload" || version || key_id || associated
//! associated = u32 length || task id || u32 length || owner
//! plaintext  = the payload as JSON
//! ```
//!
//! A task whose sealing key has been removed from the ring no longer opens:
//! keep a retired key in the ring for as long as tasks live (`--task-ttl`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::sealing::KeyRing;
use crate::sealing::envelope::{self, Domain, FreshNonce, SealFailed};

/// Room for a small payload's JSON, to size the sealing buffer.
const TYPICAL_LEN: usize = 256;

/// What a task keeps between rounds, in the clear (only ever in memory).
/// `C` is what the client declared it can answer, as the protocol reads it;
/// this module only keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPayload<C> {
    /// The call's arguments: a JSON object, as text.
    pub arguments: String,
    /// The guest's state for its next round, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The keys (as the tool chose them) of the input requests of the last
    /// round that the client has not answered yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The client's answers so far, by the tool's keys.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub answers: Map<String, Value>,
    /// What the client that created the task declared it can answer: its
    /// rounds ask only for what that client can answer.
    pub client: C,
}

impl<C> TaskPayload<C> {
    /// The guest's state bytes.
    pub fn state_bytes(&self) -> Option<Vec<u8>> {
        let state = self.state.as_ref()?;
        STANDARD.decode(state).ok()
    }

    /// Sets the guest's state bytes.
    pub fn set_state(&mut self, state: Option<&[u8]>) {
        self.state = state.map(|bytes| STANDARD.encode(bytes));
    }
}

impl<C: Serialize> TaskPayload<C> {
    /// Seals the payload for task `task` of `owner` with the ring's sealing
    /// key.
    pub fn seal(&self, keys: &KeyRing, task: &str, owner: &str) -> Result<Vec<u8>, SealError> {
        self.seal_with(keys, task, owner, FreshNonce::draw()?)
    }

    /// [`TaskPayload::seal`] with this nonce.
    fn seal_with(
        &self,
        keys: &KeyRing,
        task: &str,
        owner: &str,
        nonce: FreshNonce,
    ) -> Result<Vec<u8>, SealError> {
        let associated = associated(task, owner);
        envelope::seal(
            keys,
            Domain::TaskPayload,
            &associated,
            nonce,
            TYPICAL_LEN,
            |out| serde_json::to_writer(out, self).map_err(|_| SealError::Seal),
        )
    }
}

impl<C: DeserializeOwned> TaskPayload<C> {
    /// Opens what [`TaskPayload::seal`] sealed for the same task and owner.
    pub fn open(keys: &KeyRing, task: &str, owner: &str, sealed: &[u8]) -> Result<Self, SealError> {
        let mut sealed = sealed.to_vec();
        let associated = associated(task, owner);
        let plain = envelope::open(keys, Domain::TaskPayload, &associated, &mut sealed)
            .map_err(|_| SealError::Open)?;
        serde_json::from_slice(plain).map_err(|_| SealError::Open)
    }
}

/// Why a payload could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The random number generator or the cipher failed.
    #[error("cannot seal the task's data")]
    Seal,
    /// The ciphertext is damaged, belongs to another task, or its key is no
    /// longer in the ring.
    #[error(
        "the task's stored data cannot be opened (its key left the key ring, or it was altered)"
    )]
    Open,
}

impl From<SealFailed> for SealError {
    fn from(_: SealFailed) -> Self {
        SealError::Seal
    }
}

/// The associated data of a payload of `task` owned by `owner`.
fn associated(task: &str, owner: &str) -> Vec<u8> {
    let mut associated = Vec::with_capacity(8 + task.len() + owner.len());
    for part in [task, owner] {
        let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
        associated.extend_from_slice(&len.to_be_bytes());
        associated.extend_from_slice(part.as_bytes());
    }
    associated
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::value::RawValue;
    use serde_json::{Value, json};

    use super::*;
    use crate::sealing::envelope::HEADER_LEN;
    use crate::sealing::{Binding, StateError, StateLimits, StateSealer};

    /// A payload sealed before task payloads shared the `requestState`
    /// envelope (key `[0x5a; 32]`, for task [`VECTOR_TASK`] of
    /// `token:alice`; the plaintext is [`VECTOR_JSON`]): what the stores of
    /// a fleet hold across an upgrade must keep opening, and the layout
    /// must not change.
    const VECTOR: &str = "0160bf07c488aad18f7f2513553ec23f740813e0784fb09623b66a9840fd87380222577fa7cac823094b55ef10e0422220295620fd5cabcf27e505ad6b61ee457201b58e5d98d1338fee843a77a20dba82fc2f4ac7a02b78ef3560a3b18473d702ad12b67f728ba8adef09a4b673688931e4e7a74e609b01b5aaca1ec3163674b1eaff74fac8c2848a23f2dd1e921b86c465ecd618139dc7af145b647942f255ab6d959e6ec4ab5d6d5fd52933ae6d90f1c669cd3cb678e1c2cf723313b25558320b54569e3a4a0ff89e15bd48ddac73b6dbde139ca2d885e60ab6b58387b03131cf4791f16b34bf94319fcb6212212955fbc1272d9fe9397e8508cc8da507fc4361e84b9ee1aef82d3f19fe5d0376c5acaf1cb906c7c3d70fbbff28492fd9a54565d9a5c0484182ce7fcbd8cbd411c66c9de8c75489bbeaf0df9352de10902df1d1325ea0c5eb8d20c6104d3c";
    /// The task [`VECTOR`] was sealed for.
    const VECTOR_TASK: &str = "0123456789abcdef0123456789abcdef";
    /// What [`VECTOR`] holds: a payload as the protocol's rounds write it.
    pub(crate) const VECTOR_JSON: &str = r#"{"arguments":"{\"seconds\":2}","state":"Z3Vlc3Qgc3RhdGUgAP8=","pending":["again"],"answers":{"confirm":{"action":"accept","content":{"ok":true}}},"client":{"elicitation_form":true,"elicitation_url":false,"sampling":false,"sampling_tools":false,"sampling_context":false,"roots":true,"tasks":true}}"#;

    fn keys() -> KeyRing {
        KeyRing::from_keys(&[[0x5a; 32]]).unwrap()
    }

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A payload whose client capabilities stay as the store had them.
    type Payload = TaskPayload<Box<RawValue>>;

    #[test]
    fn a_payload_sealed_before_the_shared_envelope_still_opens_and_seals_alike() {
        let old = unhex(VECTOR);
        let opened = Payload::open(&keys(), VECTOR_TASK, "token:alice", &old).unwrap();
        assert_eq!(opened.arguments, r#"{"seconds":2}"#);
        assert_eq!(opened.state_bytes().unwrap(), b"guest state \0\xff");
        assert_eq!(opened.pending, ["again"]);
        assert_eq!(
            Value::Object(opened.answers.clone()),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        assert_eq!(serde_json::to_string(&opened).unwrap(), VECTOR_JSON);
        // The same payload and nonce seal to the same bytes.
        let nonce: [u8; 12] = old[9..HEADER_LEN].try_into().unwrap();
        let again = opened
            .seal_with(
                &keys(),
                VECTOR_TASK,
                "token:alice",
                FreshNonce::given(nonce),
            )
            .unwrap();
        assert_eq!(again, old);
    }

    fn payload() -> TaskPayload<Value> {
        let mut payload = TaskPayload {
            arguments: "{}".to_owned(),
            state: None,
            pending: Vec::new(),
            answers: Map::new(),
            client: json!({"roots": true}),
        };
        payload.set_state(Some(b"secret guest state"));
        payload
    }

    #[test]
    fn a_payload_opens_only_for_its_task_and_owner() {
        let sealed = payload().seal(&keys(), "t1", "token:alice").unwrap();
        assert!(
            !sealed.windows(b"secret".len()).any(|w| w == b"secret"),
            "the state is not in the clear"
        );
        let open_as = |keys: &KeyRing, task, owner, sealed: &[u8]| {
            TaskPayload::<Value>::open(keys, task, owner, sealed)
        };
        let opened = open_as(&keys(), "t1", "token:alice", &sealed).unwrap();
        assert_eq!(opened, payload());
        assert_eq!(opened.state_bytes().unwrap(), b"secret guest state");
        assert!(
            open_as(&keys(), "t2", "token:alice", &sealed).is_err(),
            "another task"
        );
        assert!(
            open_as(&keys(), "t1", "token:bob", &sealed).is_err(),
            "another owner"
        );
        // Where the id ends and the owner starts is bound too.
        assert!(open_as(&keys(), "t1t", "oken:alice", &sealed).is_err());
        assert!(open_as(&KeyRing::ephemeral(), "t1", "token:alice", &sealed).is_err());
        for i in [0, 5, HEADER_LEN, sealed.len() - 1] {
            let mut altered = sealed.clone();
            altered[i] ^= 1;
            assert!(
                open_as(&keys(), "t1", "token:alice", &altered).is_err(),
                "byte {i}"
            );
        }
        assert!(open_as(&keys(), "t1", "token:alice", &sealed[..HEADER_LEN - 1]).is_err());
    }

    #[test]
    fn a_payload_is_no_request_state_and_a_request_state_no_payload() {
        let sealer = StateSealer::new(keys(), Duration::from_secs(600), StateLimits::default());
        let arguments = json!({});
        let binding = Binding::new("token:alice", "tools/call", "slow", &arguments);
        let now = 1_785_000_000;

        // Long enough to be a token, were it one.
        let mut long = payload();
        long.set_state(Some(&[7; 200]));
        let sealed = long.seal(&keys(), "t1", "token:alice").unwrap();
        assert_eq!(
            sealer.open_at(&URL_SAFE_NO_PAD.encode(&sealed), &binding, now),
            Err(StateError::Forged),
            "a task payload opened as a requestState"
        );

        let token = sealer.seal_at(&binding, 1, Some(b"state"), now).unwrap();
        assert!(sealer.open_at(&token, &binding, now).is_ok());
        let token = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for (task, owner) in [("t1", "token:alice"), ("", ""), ("tools/call", "slow")] {
            assert!(
                matches!(
                    TaskPayload::<Value>::open(&keys(), task, owner, &token),
                    Err(SealError::Open)
                ),
                "a requestState opened as the payload of {task:?} of {owner:?}"
            );
        }
        // Nor does a payload sealed as a requestState, though its plaintext
        // is a payload's and its associated data the task's.
        for associated in [associated("t1", "token:alice"), Vec::new()] {
            let nonce = FreshNonce::draw().unwrap();
            let other = envelope::seal(
                &keys(),
                Domain::RequestState,
                &associated,
                nonce,
                0,
                |out| serde_json::to_writer(out, &payload()).map_err(|_| SealError::Seal),
            )
            .unwrap();
            assert!(matches!(
                TaskPayload::<Value>::open(&keys(), "t1", "token:alice", &other),
                Err(SealError::Open)
            ));
        }
    }
}
