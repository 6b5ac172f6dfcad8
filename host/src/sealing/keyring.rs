//! The key ring: the 256-bit keys that seal and open `requestState` tokens
//! and task payloads.
//!
//! The first key seals; every key opens. Each key is named by its [`KeyId`],
//! the first 8 bytes of SHA-256 of the key, which every sealed envelope
//! carries in clear so that opening picks the right key without trial
//! decryption. Only the envelope (`envelope.rs`) uses the keys themselves. The id says
//! nothing useful about the key (it is a truncated hash of 256 random bits).

use std::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ring::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use ring::digest::{SHA256, digest};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};

/// Length of one key in bytes (AES-256).
pub const KEY_LEN: usize = 32;

/// Environment variable holding state keys (comma- or newline-separated).
pub const STATE_KEYS_ENV: &str = "AIRLOCK_STATE_KEYS";

/// Length of a [`KeyId`] in bytes.
pub const KEY_ID_LEN: usize = 8;

/// Accepts base64url or standard base64, padded or not (the alphabet is tried
/// in that order); trailing bits must be zero, as every encoder writes them.
const KEY_CONFIG: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const KEY_ENGINES: [GeneralPurpose; 2] = [
    GeneralPurpose::new(&alphabet::URL_SAFE, KEY_CONFIG),
    GeneralPurpose::new(&alphabet::STANDARD, KEY_CONFIG),
];

/// The public name of a key: the first 8 bytes of SHA-256(key).
///
/// Shown in hex by `Display` and `Debug`; safe to log.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; KEY_ID_LEN]);

impl KeyId {
    /// The id of `key`.
    pub fn of(key: &[u8; KEY_LEN]) -> KeyId {
        let hash = digest(&SHA256, key);
        let mut id = [0u8; KEY_ID_LEN];
        id.copy_from_slice(&hash.as_ref()[..KEY_ID_LEN]);
        KeyId(id)
    }

    /// Wraps the 8 id bytes as read from a token.
    pub fn from_bytes(bytes: [u8; KEY_ID_LEN]) -> KeyId {
        KeyId(bytes)
    }

    /// The 8 id bytes, as written into tokens.
    pub fn as_bytes(&self) -> &[u8; KEY_ID_LEN] {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

/// Why a key ring could not be built. Never contains key material.
///
/// `line` is the 1-based line of the key text and `entry` the 1-based position
/// of the key among all keys in it. For [`KeyRing::from_keys`] both are the
/// 1-based index into the slice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No key at all (empty text, or only blank lines and comments).
    #[error("the key ring is empty: give at least one 256-bit key (`airlock keygen` makes one)")]
    Empty,
    /// The entry is neither base64url nor standard base64.
    #[error("key on line {line} (entry {entry}) is not valid base64url or base64")]
    BadBase64 {
        /// 1-based line.
        line: usize,
        /// 1-based key position.
        entry: usize,
    },
    /// The entry decodes, but not to 32 bytes.
    #[error(
        "key on line {line} (entry {entry}) decodes to {len} bytes; a key must be exactly 32 bytes"
    )]
    WrongLength {
        /// 1-based line.
        line: usize,
        /// 1-based key position.
        entry: usize,
        /// The decoded length.
        len: usize,
    },
    /// The same key appears twice.
    #[error(
        "key on line {line} (entry {entry}) repeats the key on line {first_line} (entry {first_entry})"
    )]
    Duplicate {
        /// 1-based line of the repeat.
        line: usize,
        /// 1-based key position of the repeat.
        entry: usize,
        /// 1-based line of the first occurrence.
        first_line: usize,
        /// 1-based key position of the first occurrence.
        first_entry: usize,
    },
    /// Two different keys have the same [`KeyId`] (a 64-bit collision: in
    /// practice never; replace one of the keys).
    #[error(
        "keys on lines {first_line} and {line} differ but share key id {id}; replace one of them"
    )]
    IdCollision {
        /// 1-based line of the later key.
        line: usize,
        /// 1-based line of the earlier key.
        first_line: usize,
        /// The shared id.
        id: KeyId,
    },
}

/// One key of the ring, ready for AES-256-GCM.
#[derive(Clone)]
struct RingKey {
    id: KeyId,
    aead: LessSafeKey,
    /// The key as HKDF input, for the keys derived from it ([`KeyRing::derive`]).
    prk: hkdf::Prk,
}

/// The keys that seal and open `requestState` and task payloads: the first
/// key seals, every key opens.
///
/// To rotate without downtime across a fleet: (1) add the new key at the END
/// of every process's ring and roll out (everyone can now open tokens sealed
/// with it); (2) move it to the FRONT and roll out (new tokens use it);
/// (3) once the old tokens have expired (the TTL), remove the old key.
///
/// `Debug` prints key ids only, never key bytes.
#[derive(Clone)]
pub struct KeyRing {
    /// Never empty; `keys[0]` seals.
    keys: Vec<RingKey>,
}

/// Where a key came from, for error messages.
#[derive(Clone, Copy)]
struct Origin {
    line: usize,
    entry: usize,
}

impl KeyRing {
    /// Parses a key ring from text, e.g. a key file or an environment value.
    ///
    /// Each key is 32 bytes in base64url or standard base64, padded or not.
    /// Keys are separated by newlines, commas or other whitespace; blank lines
    /// are ignored and `#` starts a comment that runs to the end of the line.
    /// The first key seals. Errors give the line and entry and the problem,
    /// never the key text. A repeated key and an empty ring are refused.
    pub fn parse(text: &str) -> Result<KeyRing, KeyError> {
        let mut keys: Vec<([u8; KEY_LEN], Origin)> = Vec::new();
        let mut entry = 0;
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let content = line.split('#').next().unwrap_or("");
            for item in content.split(|c: char| c == ',' || c.is_whitespace()) {
                if item.is_empty() {
                    continue;
                }
                entry += 1;
                let origin = Origin {
                    line: line_no,
                    entry,
                };
                keys.push((decode_key(item, origin)?, origin));
            }
        }
        KeyRing::build(&keys)
    }

    /// Builds a ring from raw keys; `keys[0]` seals. Refuses an empty slice
    /// and repeated keys.
    pub fn from_keys(keys: &[[u8; KEY_LEN]]) -> Result<KeyRing, KeyError> {
        let keys: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                (
                    *key,
                    Origin {
                        line: i + 1,
                        entry: i + 1,
                    },
                )
            })
            .collect();
        KeyRing::build(&keys)
    }

    /// A ring of one fresh random key, for a single process with no
    /// configured keys. Tokens it seals open only in this process, and only
    /// until it exits: a fleet behind a load balancer needs a shared ring.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails.
    pub fn ephemeral() -> KeyRing {
        let key = random_key();
        match KeyRing::from_keys(&[key]) {
            Ok(ring) => ring,
            // One key is never empty nor duplicated.
            Err(e) => unreachable!("a one-key ring is always valid: {e}"),
        }
    }

    /// The id of the key that seals (the first one).
    pub fn sealing_key_id(&self) -> KeyId {
        self.keys[0].id
    }

    /// The ids of all keys, sealing key first. Safe to log.
    pub fn key_ids(&self) -> Vec<KeyId> {
        self.keys.iter().map(|k| k.id).collect()
    }

    /// A 256-bit key for another use, derived from the sealing key with
    /// HKDF-SHA256 under `label`: every process with the same first key
    /// derives the same key, and it tells nothing about the sealing key.
    pub fn derive(&self, label: &str) -> [u8; KEY_LEN] {
        let info = [label.as_bytes()];
        let mut out = [0u8; KEY_LEN];
        let filled = self.keys[0]
            .prk
            .expand(&info, hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut out));
        match filled {
            Ok(()) => out,
            // Only fails for an output longer than 255 hash lengths.
            Err(_) => unreachable!("HKDF-SHA256 gives 32 bytes"),
        }
    }

    /// The sealing key, for the envelope.
    pub(super) fn sealing_key(&self) -> (KeyId, &LessSafeKey) {
        (self.keys[0].id, &self.keys[0].aead)
    }

    /// The key with this id, if the ring has it, for the envelope.
    pub(super) fn find(&self, id: &KeyId) -> Option<&LessSafeKey> {
        self.keys.iter().find(|k| k.id == *id).map(|k| &k.aead)
    }

    fn build(keys: &[([u8; KEY_LEN], Origin)]) -> Result<KeyRing, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        let mut ring: Vec<RingKey> = Vec::with_capacity(keys.len());
        for (i, (key, origin)) in keys.iter().enumerate() {
            let id = KeyId::of(key);
            for (first_key, first) in &keys[..i] {
                if KeyId::of(first_key) != id {
                    continue;
                }
                return Err(if first_key == key {
                    KeyError::Duplicate {
                        line: origin.line,
                        entry: origin.entry,
                        first_line: first.line,
                        first_entry: first.entry,
                    }
                } else {
                    KeyError::IdCollision {
                        line: origin.line,
                        first_line: first.line,
                        id,
                    }
                });
            }
            let unbound = match UnboundKey::new(&AES_256_GCM, key) {
                Ok(k) => k,
                // Only fails on a wrong key length, which the type rules out.
                Err(_) => unreachable!("AES-256-GCM accepts every 32-byte key"),
            };
            ring.push(RingKey {
                id,
                aead: LessSafeKey::new(unbound),
                prk: hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(key),
            });
        }
        Ok(KeyRing { keys: ring })
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("sealing_key_id", &self.sealing_key_id())
            .field("key_ids", &self.key_ids())
            .finish()
    }
}

/// A new random 256-bit key, as base64url without padding: what
/// `airlock keygen` prints and [`KeyRing::parse`] reads.
///
/// # Panics
///
/// If the operating system's random number generator fails.
pub fn generate_key() -> String {
    URL_SAFE_NO_PAD.encode(random_key())
}

fn random_key() -> [u8; KEY_LEN] {
    let mut key = [0u8; KEY_LEN];
    if SystemRandom::new().fill(&mut key).is_err() {
        panic!("the system random number generator failed; cannot make a key");
    }
    key
}

fn decode_key(item: &str, origin: Origin) -> Result<[u8; KEY_LEN], KeyError> {
    let decoded = KEY_ENGINES
        .iter()
        .find_map(|engine| engine.decode(item).ok())
        .ok_or(KeyError::BadBase64 {
            line: origin.line,
            entry: origin.entry,
        })?;
    <[u8; KEY_LEN]>::try_from(decoded.as_slice()).map_err(|_| KeyError::WrongLength {
        line: origin.line,
        entry: origin.entry,
        len: decoded.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};

    /// A key whose encodings differ between the alphabets and need padding.
    const KEY: [u8; KEY_LEN] = [
        0xfb, 0xff, 0xfe, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
        20, 21, 22, 23, 24, 25, 26, 0xfb, 0xef,
    ];
    const KEY2: [u8; KEY_LEN] = [0x42; KEY_LEN];

    #[test]
    fn parses_every_accepted_encoding() {
        let encodings = [
            URL_SAFE_NO_PAD.encode(KEY),
            URL_SAFE.encode(KEY),
            STANDARD.encode(KEY),
            STANDARD_NO_PAD.encode(KEY),
        ];
        assert!(encodings[0].contains('-') || encodings[0].contains('_'));
        assert!(encodings[2].contains('+') || encodings[2].contains('/'));
        assert!(encodings[1].ends_with('='));
        for text in &encodings {
            let ring = KeyRing::parse(text).unwrap();
            assert_eq!(ring.key_ids(), vec![KeyId::of(&KEY)], "{text}");
        }
    }

    #[test]
    fn parses_separators_comments_and_order() {
        let a = URL_SAFE_NO_PAD.encode(KEY);
        let b = URL_SAFE_NO_PAD.encode(KEY2);
        let text = format!("# keys\n\n  {b} , # new\n{a}\n,\n# old one above\n");
        let ring = KeyRing::parse(&text).unwrap();
        assert_eq!(ring.key_ids(), vec![KeyId::of(&KEY2), KeyId::of(&KEY)]);
        assert_eq!(ring.sealing_key_id(), KeyId::of(&KEY2));

        let ring = KeyRing::parse(&format!("{a},{b}")).unwrap();
        assert_eq!(ring.key_ids(), vec![KeyId::of(&KEY), KeyId::of(&KEY2)]);
        let ring = KeyRing::parse(&format!("{a}\r\n{b}\r\n")).unwrap();
        assert_eq!(ring.key_ids().len(), 2);
    }

    #[test]
    fn key_id_is_sha256_prefix() {
        let hash = digest(&SHA256, &KEY);
        assert_eq!(KeyId::of(&KEY).as_bytes(), &hash.as_ref()[..8]);
        assert_eq!(KeyId::of(&KEY).to_string().len(), 16);
    }

    #[test]
    fn refuses_empty_rings() {
        for text in ["", "\n\n", "# only a comment\n", " , ,\n\t"] {
            assert_eq!(
                KeyRing::parse(text).unwrap_err(),
                KeyError::Empty,
                "{text:?}"
            );
        }
        assert_eq!(KeyRing::from_keys(&[]).unwrap_err(), KeyError::Empty);
    }

    #[test]
    fn refuses_bad_base64_without_echoing_it() {
        let a = URL_SAFE_NO_PAD.encode(KEY);
        let secretish = "SECRETSECRETSECRETSECRETSECRETSECRETSECR!!";
        let err = KeyRing::parse(&format!("{a}\n# c\n{secretish}\n")).unwrap_err();
        assert_eq!(err, KeyError::BadBase64 { line: 3, entry: 2 });
        let msg = err.to_string();
        assert!(!msg.contains("SECRET"), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");

        // Mixed alphabets are neither encoding.
        let mixed = format!("-+{}", &a[2..]);
        assert_eq!(
            KeyRing::parse(&mixed).unwrap_err(),
            KeyError::BadBase64 { line: 1, entry: 1 }
        );
        // Nonzero trailing bits are not a canonical encoding.
        let mut bad_tail = a.clone();
        bad_tail.pop();
        bad_tail.push('B');
        assert_ne!(bad_tail, a);
        assert_eq!(
            KeyRing::parse(&bad_tail).unwrap_err(),
            KeyError::BadBase64 { line: 1, entry: 1 }
        );
    }

    #[test]
    fn refuses_wrong_lengths_without_echoing_them() {
        let short = URL_SAFE_NO_PAD.encode([7u8; 16]);
        let long = URL_SAFE_NO_PAD.encode([7u8; 33]);
        let err = KeyRing::parse(&short).unwrap_err();
        assert_eq!(
            err,
            KeyError::WrongLength {
                line: 1,
                entry: 1,
                len: 16
            }
        );
        assert!(!err.to_string().contains(&short));
        let a = URL_SAFE_NO_PAD.encode(KEY);
        assert_eq!(
            KeyRing::parse(&format!("{a}, {long}")).unwrap_err(),
            KeyError::WrongLength {
                line: 1,
                entry: 2,
                len: 33
            }
        );
    }

    #[test]
    fn refuses_duplicates_even_in_other_encodings() {
        let a = URL_SAFE_NO_PAD.encode(KEY);
        let a_std = STANDARD.encode(KEY);
        let b = URL_SAFE_NO_PAD.encode(KEY2);
        let err = KeyRing::parse(&format!("{a}\n{b}\n{a_std}\n")).unwrap_err();
        assert_eq!(
            err,
            KeyError::Duplicate {
                line: 3,
                entry: 3,
                first_line: 1,
                first_entry: 1
            }
        );
        assert!(!err.to_string().contains(&a));
        assert_eq!(
            KeyRing::from_keys(&[KEY2, KEY, KEY2]).unwrap_err(),
            KeyError::Duplicate {
                line: 3,
                entry: 3,
                first_line: 1,
                first_entry: 1
            }
        );
    }

    #[test]
    fn debug_shows_ids_not_keys() {
        let ring = KeyRing::from_keys(&[KEY, KEY2]).unwrap();
        let shown = format!("{ring:?} {ring:#?}");
        assert!(shown.contains(&KeyId::of(&KEY).to_string()), "{shown}");
        for key in [KEY, KEY2] {
            for encoded in [
                URL_SAFE_NO_PAD.encode(key),
                STANDARD.encode(key),
                format!("{key:?}"),
                key.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            ] {
                assert!(!shown.contains(&encoded), "{shown}");
            }
        }
    }

    #[test]
    fn generated_keys_parse_and_differ() {
        let a = generate_key();
        let b = generate_key();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(!a.contains('=') && !a.contains('+') && !a.contains('/'));
        let ring = KeyRing::parse(&format!("{a}\n{b}")).unwrap();
        assert_eq!(ring.key_ids().len(), 2);
        assert_ne!(
            KeyRing::ephemeral().sealing_key_id(),
            KeyRing::ephemeral().sealing_key_id()
        );
    }
}
