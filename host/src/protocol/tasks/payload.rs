//! What a task keeps of its guest between rounds, sealed: the call's
//! arguments, the guest's state bytes, the client's answers so far and the
//! capabilities of the request that created the task.
//!
//! A [`TaskStore`](crate::tasks::TaskStore) (a file, Redis) holds this only as
//! ciphertext, sealed with the same key ring as `requestState` (AES-256-GCM)
//! under its own domain label, and bound to the task's id and owner: a
//! payload copied onto another task, or read by a store's administrator,
//! gives nothing.
//!
//! ```text
//! sealed = version (0x01) || key_id (8) || nonce (12) || ciphertext || tag (16)
//! aad    = "airlock/task-payload" || version || key_id
//!          || u32 length || task id || u32 length || owner
//! ```
//!
//! A task whose sealing key has been removed from the ring no longer opens:
//! keep a retired key in the ring for as long as tasks live (`--task-ttl`).

use base64::Engine;
use ring::aead::{Aad, NONCE_LEN, Nonce};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::envelope::ClientCapabilities;
use crate::sealing::{KEY_ID_LEN, KeyId, KeyRing};

/// The only format version so far.
const VERSION: u8 = 0x01;
/// The domain label at the start of the associated data.
const AAD_LABEL: &[u8] = b"airlock/task-payload";
/// version || key id || nonce.
const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;

/// What a task keeps between rounds, in the clear (only ever in memory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPayload {
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
    pub client: ClientCapabilities,
}

impl TaskPayload {
    /// The guest's state bytes.
    pub fn state_bytes(&self) -> Option<Vec<u8>> {
        let state = self.state.as_ref()?;
        base64::engine::general_purpose::STANDARD.decode(state).ok()
    }

    /// Sets the guest's state bytes.
    pub fn set_state(&mut self, state: Option<&[u8]>) {
        self.state = state.map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes));
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

/// The associated data of a payload of `task` owned by `owner`.
fn aad(key_id: &KeyId, task: &str, owner: &str) -> Vec<u8> {
    let mut aad =
        Vec::with_capacity(AAD_LABEL.len() + 1 + KEY_ID_LEN + 8 + task.len() + owner.len());
    aad.extend_from_slice(AAD_LABEL);
    aad.push(VERSION);
    aad.extend_from_slice(key_id.as_bytes());
    for part in [task, owner] {
        aad.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad
}

/// Seals `payload` for task `task` of `owner` with the ring's sealing key.
pub fn seal(
    keys: &KeyRing,
    task: &str,
    owner: &str,
    payload: &TaskPayload,
) -> Result<Vec<u8>, SealError> {
    let (key_id, key) = keys.sealing_key();
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| SealError::Seal)?;
    let mut sealed = Vec::with_capacity(HEADER_LEN + 256);
    sealed.push(VERSION);
    sealed.extend_from_slice(key_id.as_bytes());
    sealed.extend_from_slice(&nonce);
    let mut body = serde_json::to_vec(payload).map_err(|_| SealError::Seal)?;
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(aad(&key_id, task, owner)),
        &mut body,
    )
    .map_err(|_| SealError::Seal)?;
    sealed.extend_from_slice(&body);
    Ok(sealed)
}

/// Opens what [`seal`] sealed for the same task and owner.
pub fn open(
    keys: &KeyRing,
    task: &str,
    owner: &str,
    sealed: &[u8],
) -> Result<TaskPayload, SealError> {
    if sealed.len() < HEADER_LEN || sealed[0] != VERSION {
        return Err(SealError::Open);
    }
    let key_id = KeyId::from_bytes(
        sealed[1..1 + KEY_ID_LEN]
            .try_into()
            .map_err(|_| SealError::Open)?,
    );
    let key = keys.find(&key_id).ok_or(SealError::Open)?;
    let nonce: [u8; NONCE_LEN] = sealed[1 + KEY_ID_LEN..HEADER_LEN]
        .try_into()
        .map_err(|_| SealError::Open)?;
    let mut body = sealed[HEADER_LEN..].to_vec();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(&key_id, task, owner)),
            &mut body,
        )
        .map_err(|_| SealError::Open)?;
    serde_json::from_slice(plain).map_err(|_| SealError::Open)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> TaskPayload {
        let mut payload = TaskPayload {
            arguments: r#"{"seconds":2}"#.to_owned(),
            state: None,
            pending: vec!["confirm".to_owned()],
            answers: Map::new(),
            client: ClientCapabilities {
                elicitation_form: true,
                ..ClientCapabilities::default()
            },
        };
        payload.set_state(Some(b"secret guest state"));
        payload
    }

    #[test]
    fn a_payload_opens_only_for_its_task_and_owner() {
        let keys = KeyRing::ephemeral();
        let sealed = seal(&keys, "t1", "token:alice", &payload()).unwrap();
        assert!(
            !sealed.windows(b"secret".len()).any(|w| w == b"secret"),
            "the state is not in the clear"
        );
        let opened = open(&keys, "t1", "token:alice", &sealed).unwrap();
        assert_eq!(opened, payload());
        assert_eq!(opened.state_bytes().unwrap(), b"secret guest state");
        assert!(
            open(&keys, "t2", "token:alice", &sealed).is_err(),
            "another task"
        );
        assert!(
            open(&keys, "t1", "token:bob", &sealed).is_err(),
            "another owner"
        );
        assert!(open(&KeyRing::ephemeral(), "t1", "token:alice", &sealed).is_err());
        for i in [0, 5, HEADER_LEN, sealed.len() - 1] {
            let mut altered = sealed.clone();
            altered[i] ^= 1;
            assert!(
                open(&keys, "t1", "token:alice", &altered).is_err(),
                "byte {i}"
            );
        }
        assert!(open(&keys, "t1", "token:alice", &sealed[..HEADER_LEN - 1]).is_err());
    }
}
