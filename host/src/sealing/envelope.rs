//! The one envelope of everything Airlock seals: AES-256-GCM under the key
//! ring's sealing key, for one [`Domain`], bound to associated data.
//!
//! ```text
//! sealed = version (0x01) || key_id (8) || nonce (12) || ciphertext || tag (16)
//! aad    = label || version || key_id || associated
//! ```
//!
//! The version and key id travel in clear (the key id picks the key without
//! trial decryption) and are authenticated, as are the domain's label, so
//! that what is sealed for one domain never opens in another, and the
//! `associated` bytes its user binds the plaintext to (a task's id and
//! owner), which are not in the envelope. Each seal takes a fresh random
//! 96-bit nonce ([`FreshNonce`]); with random nonces a key should seal fewer
//! than 2^32 envelopes, so rotate long before that.
//!
//! Only this file uses the keys.

use std::sync::LazyLock;

use ring::aead::{Aad, Nonce};
use ring::rand::{SecureRandom, SystemRandom};

use super::keyring::{KEY_ID_LEN, KeyId, KeyRing};

/// The only format version so far.
pub(crate) const VERSION: u8 = 0x01;
/// AES-GCM nonce length.
pub(crate) const NONCE_LEN: usize = 12;
/// AES-GCM tag length.
pub(crate) const TAG_LEN: usize = 16;
/// version || key_id || nonce.
pub(crate) const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;

/// Most random bytes one [`FreshNonce::draw_with`] draws, nonce included.
const MAX_DRAW: usize = 64;

/// The operating system's random number generator.
static RANDOM: LazyLock<SystemRandom> = LazyLock::new(SystemRandom::new);

/// What a sealed thing is for. Its label starts the associated data, so a
/// ciphertext of one domain never opens as another's, under any key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Domain {
    /// `requestState` tokens, which the client holds between rounds
    /// ([`StateSealer`](super::StateSealer)); no associated data (the
    /// binding is inside the plaintext).
    RequestState,
    /// What a task keeps of its guest between rounds, in the task store;
    /// bound to the task's id and owner.
    TaskPayload,
}

impl Domain {
    /// The label at the start of the associated data.
    fn label(self) -> &'static [u8] {
        match self {
            Domain::RequestState => b"airlock/request-state",
            Domain::TaskPayload => b"airlock/task-payload",
        }
    }
}

/// A random nonce for one seal. [`seal`] takes it by value, and it is
/// neither `Clone` nor `Copy`, so no nonce seals twice.
pub(crate) struct FreshNonce([u8; NONCE_LEN]);

impl FreshNonce {
    /// Draws a nonce from the operating system.
    pub(crate) fn draw() -> Result<FreshNonce, SealFailed> {
        Ok(FreshNonce::draw_with::<0>()?.0)
    }

    /// Draws a nonce and `N` more random bytes for the caller in one call
    /// to the operating system (a `requestState` token's id: a system call
    /// each would cost more than the rest of sealing a small token).
    pub(crate) fn draw_with<const N: usize>() -> Result<(FreshNonce, [u8; N]), SealFailed> {
        const { assert!(N + NONCE_LEN <= MAX_DRAW) };
        let mut random = [0u8; MAX_DRAW];
        let random = &mut random[..N + NONCE_LEN];
        RANDOM.fill(random).map_err(|_| SealFailed::Random)?;
        let (extra, nonce) = random.split_at(N);
        Ok((
            FreshNonce(nonce.try_into().expect("the rest is a nonce")),
            extra.try_into().expect("split at its length"),
        ))
    }

    /// A nonce the caller chose: for tests that compare exact bytes.
    #[cfg(test)]
    pub(crate) fn given(nonce: [u8; NONCE_LEN]) -> FreshNonce {
        FreshNonce(nonce)
    }
}

/// Why sealing failed: the server's fault, never its caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SealFailed {
    /// The operating system's random number generator failed.
    Random,
    /// The cipher refused (more plaintext than AES-GCM takes).
    Cipher,
}

impl SealFailed {
    /// What failed, in a few words.
    pub(crate) fn message(self) -> &'static str {
        match self {
            SealFailed::Random => "the system random number generator failed",
            SealFailed::Cipher => "AES-256-GCM refused to seal",
        }
    }
}

/// Why an envelope did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenFailed {
    /// Shorter than a header and a tag.
    TooShort,
    /// A format version this build does not read.
    Version(u8),
    /// Sealed with a key that is not in the ring.
    UnknownKey(KeyId),
    /// The tag does not authenticate: altered, sealed for another domain or
    /// other associated data, or not sealed by a key in the ring.
    Forged,
}

/// Seals, for `domain` and `associated`, the plaintext that `write`
/// appends to the buffer it is given (`plaintext_len` bytes, to size the
/// buffer), under the ring's sealing key. The plaintext is encrypted where
/// `write` put it: it is never copied.
pub(crate) fn seal<E: From<SealFailed>>(
    keys: &KeyRing,
    domain: Domain,
    associated: &[u8],
    nonce: FreshNonce,
    plaintext_len: usize,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<Vec<u8>, E> {
    let (key_id, key) = keys.sealing_key();
    let mut sealed = Vec::with_capacity(HEADER_LEN + plaintext_len + TAG_LEN);
    sealed.push(VERSION);
    sealed.extend_from_slice(key_id.as_bytes());
    sealed.extend_from_slice(&nonce.0);
    write(&mut sealed)?;
    let aad = aad(domain, VERSION, &key_id, associated);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce.0),
            Aad::from(&aad),
            &mut sealed[HEADER_LEN..],
        )
        .map_err(|_| SealFailed::Cipher)?;
    sealed.extend_from_slice(tag.as_ref());
    Ok(sealed)
}

/// Opens what [`seal`] sealed for the same `domain` and `associated`, in
/// place: the plaintext is returned as a part of `sealed`. Checks, in
/// order: length, version, key id, tag.
pub(crate) fn open<'s>(
    keys: &KeyRing,
    domain: Domain,
    associated: &[u8],
    sealed: &'s mut [u8],
) -> Result<&'s mut [u8], OpenFailed> {
    if sealed.len() < HEADER_LEN + TAG_LEN {
        return Err(OpenFailed::TooShort);
    }
    let (header, ciphertext) = sealed.split_at_mut(HEADER_LEN);
    let version = header[0];
    if version != VERSION {
        return Err(OpenFailed::Version(version));
    }
    let key_id = KeyId::from_bytes(
        header[1..1 + KEY_ID_LEN]
            .try_into()
            .expect("the header holds a key id"),
    );
    let nonce: [u8; NONCE_LEN] = header[1 + KEY_ID_LEN..]
        .try_into()
        .expect("the header ends with the nonce");
    let key = keys.find(&key_id).ok_or(OpenFailed::UnknownKey(key_id))?;
    let aad = aad(domain, version, &key_id, associated);
    key.open_in_place(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(&aad),
        ciphertext,
    )
    .map_err(|_| OpenFailed::Forged)
}

/// The associated data of an envelope.
fn aad(domain: Domain, version: u8, key_id: &KeyId, associated: &[u8]) -> Vec<u8> {
    let label = domain.label();
    let mut aad = Vec::with_capacity(label.len() + 1 + KEY_ID_LEN + associated.len());
    aad.extend_from_slice(label);
    aad.push(version);
    aad.extend_from_slice(key_id.as_bytes());
    aad.extend_from_slice(associated);
    aad
}

#[cfg(test)]
mod tests {
    use ring::aead::{AES_256_GCM, LessSafeKey, UnboundKey};

    use super::*;

    const KEY: [u8; 32] = [0x42; 32];
    const OTHER: [u8; 32] = [0x43; 32];

    fn keys() -> KeyRing {
        KeyRing::from_keys(&[KEY]).unwrap()
    }

    fn sealed(domain: Domain, associated: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let nonce = FreshNonce::draw().unwrap();
        seal(&keys(), domain, associated, nonce, plaintext.len(), |out| {
            out.extend_from_slice(plaintext);
            Ok::<_, SealFailed>(())
        })
        .unwrap()
    }

    #[test]
    fn layout_and_associated_data_are_as_documented() {
        let nonce = [0x33; NONCE_LEN];
        let bytes = seal(
            &keys(),
            Domain::TaskPayload,
            b"bound",
            FreshNonce::given(nonce),
            5,
            |out| {
                out.extend_from_slice(b"plain");
                Ok::<_, SealFailed>(())
            },
        )
        .unwrap();
        assert_eq!(bytes.len(), HEADER_LEN + 5 + TAG_LEN);
        assert_eq!(bytes[0], VERSION);
        assert_eq!(&bytes[1..9], KeyId::of(&KEY).as_bytes());
        assert_eq!(&bytes[9..HEADER_LEN], &nonce);
        // Opened by hand, with the documented associated data.
        let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY).unwrap());
        let mut aad = b"airlock/task-payload".to_vec();
        aad.extend_from_slice(&bytes[..9]);
        aad.extend_from_slice(b"bound");
        let mut rest = bytes[HEADER_LEN..].to_vec();
        let plain = aead
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut rest,
            )
            .unwrap();
        assert_eq!(plain, b"plain");
    }

    #[test]
    fn opens_only_for_its_own_domain_and_associated_data() {
        for (domain, other) in [
            (Domain::RequestState, Domain::TaskPayload),
            (Domain::TaskPayload, Domain::RequestState),
        ] {
            let bytes = sealed(domain, b"a", b"secret");
            let open_as = |domain, associated: &[u8]| {
                let mut copy = bytes.clone();
                open(&keys(), domain, associated, &mut copy).map(|plain| plain.to_vec())
            };
            assert_eq!(open_as(domain, b"a").unwrap(), b"secret");
            assert_eq!(open_as(other, b"a"), Err(OpenFailed::Forged));
            assert_eq!(open_as(domain, b"b"), Err(OpenFailed::Forged));
            assert_eq!(open_as(domain, b""), Err(OpenFailed::Forged));
            // Moving a byte between the label and the associated data is no
            // way in either: the label is fixed.
            assert_eq!(open_as(domain, b"a\0"), Err(OpenFailed::Forged));
        }
    }

    #[test]
    fn every_failure_is_named_in_order() {
        let bytes = sealed(Domain::TaskPayload, b"", b"x");
        let try_open = |mut bytes: Vec<u8>, keys: &KeyRing| {
            open(keys, Domain::TaskPayload, b"", &mut bytes).map(|plain| plain.to_vec())
        };
        assert_eq!(try_open(bytes.clone(), &keys()).unwrap(), b"x");
        for len in 0..HEADER_LEN + TAG_LEN {
            assert_eq!(
                try_open(bytes[..len].to_vec(), &keys()),
                Err(OpenFailed::TooShort)
            );
        }
        let mut version = bytes.clone();
        version[0] = 2;
        assert_eq!(try_open(version, &keys()), Err(OpenFailed::Version(2)));
        let foreign = KeyRing::from_keys(&[OTHER]).unwrap();
        assert_eq!(
            try_open(bytes.clone(), &foreign),
            Err(OpenFailed::UnknownKey(KeyId::of(&KEY)))
        );
        // The key that sealed opens it anywhere in the ring.
        let rotated = KeyRing::from_keys(&[OTHER, KEY]).unwrap();
        assert_eq!(try_open(bytes.clone(), &rotated).unwrap(), b"x");
        for at in [HEADER_LEN - 1, HEADER_LEN, bytes.len() - 1] {
            let mut altered = bytes.clone();
            altered[at] ^= 1;
            assert_eq!(try_open(altered, &keys()), Err(OpenFailed::Forged), "{at}");
        }
    }

    #[test]
    fn nonces_and_extra_bytes_are_fresh() {
        let (a, extra_a) = FreshNonce::draw_with::<16>().unwrap();
        let (b, extra_b) = FreshNonce::draw_with::<16>().unwrap();
        assert_ne!(a.0, b.0);
        assert_ne!(extra_a, extra_b);
        assert_ne!(&extra_a[..NONCE_LEN], &a.0);
        assert_ne!(
            sealed(Domain::RequestState, b"", b"same"),
            sealed(Domain::RequestState, b"", b"same")
        );
    }
}
