//! Sealing and opening, end to end.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use serde_json::{Value, json};

use super::envelope::{self, Domain, FreshNonce, HEADER_LEN, SealFailed, TAG_LEN};
use super::token::{self, Payload};
use super::*;

const KEY_A: [u8; 32] = [0x11; 32];
const KEY_B: [u8; 32] = [0x22; 32];
const KEY_C: [u8; 32] = [0x33; 32];
const NOW: u64 = 1_785_000_000;
const STATE: &[u8] = b"step=2;city=New York";

fn sealer(keys: &[[u8; 32]]) -> StateSealer {
    StateSealer::new(
        KeyRing::from_keys(keys).unwrap(),
        DEFAULT_TTL,
        StateLimits::default(),
    )
}

fn args() -> Value {
    json!({"location": "New York", "days": 3})
}

fn binding(args: &Value) -> Binding<'_> {
    Binding::new("iss|alice|client-1", "tools/call", "get_weather", args)
}

fn decode(token: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(token).unwrap()
}

/// Seals `plaintext` as a version 1 token under `key`, bypassing the payload
/// encoder: for payloads the sealer would never produce.
fn seal_raw(key: &[u8; 32], plaintext: &[u8]) -> String {
    seal_raw_with_nonce(key, [7u8; 12], plaintext)
}

/// [`seal_raw`] with the given nonce: deterministic tokens.
fn seal_raw_with_nonce(key: &[u8; 32], nonce: [u8; 12], plaintext: &[u8]) -> String {
    seal_raw_in(Domain::RequestState, &[], key, nonce, plaintext)
}

/// [`seal_raw_with_nonce`] in any domain, with any associated data.
fn seal_raw_in(
    domain: Domain,
    associated: &[u8],
    key: &[u8; 32],
    nonce: [u8; 12],
    plaintext: &[u8],
) -> String {
    let keys = KeyRing::from_keys(&[*key]).unwrap();
    let sealed = envelope::seal(
        &keys,
        domain,
        associated,
        FreshNonce::given(nonce),
        plaintext.len(),
        |out| {
            out.extend_from_slice(plaintext);
            Ok::<_, SealFailed>(())
        },
    )
    .unwrap();
    URL_SAFE_NO_PAD.encode(sealed)
}

#[test]
fn round_trip_with_guest_state() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let token = s.seal_at(&binding(&a), 2, Some(STATE), NOW).unwrap();
    let opened = s.open_at(&token, &binding(&a), NOW + 1).unwrap();
    assert_eq!(opened.round, 2);
    assert_eq!(opened.guest_state.as_deref(), Some(STATE));
    assert_eq!(opened.issued_at, NOW);
    assert_eq!(opened.expires_at, NOW + 600);
}

#[test]
fn round_trip_without_and_with_empty_guest_state() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let none = s.seal_at(&binding(&a), 1, None, NOW).unwrap();
    let empty = s.seal_at(&binding(&a), u32::MAX, Some(b""), NOW).unwrap();
    let opened = s.open_at(&none, &binding(&a), NOW).unwrap();
    assert_eq!((opened.round, opened.guest_state), (1, None));
    let opened = s.open_at(&empty, &binding(&a), NOW).unwrap();
    assert_eq!((opened.round, opened.guest_state), (u32::MAX, Some(vec![])));
}

#[test]
fn round_trip_with_the_real_clock() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let token = s.seal(&binding(&a), 1, Some(STATE)).unwrap();
    let opened = s.open(&token, &binding(&a)).unwrap();
    assert_eq!(opened.guest_state.as_deref(), Some(STATE));
    assert_eq!(opened.expires_at - opened.issued_at, 600);
}

#[test]
fn envelope_is_as_documented() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 3, Some(STATE), NOW).unwrap();
    assert!(
        token
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    );
    let bytes = decode(&token);
    assert_eq!(bytes[0], 0x01);
    assert_eq!(&bytes[1..9], KeyId::of(&KEY_A).as_bytes());
    let payload_len = token::PAYLOAD_FIXED_LEN
        + b.principal.len()
        + b.method.len()
        + b.target.len()
        + 4
        + STATE.len();
    assert_eq!(bytes.len(), HEADER_LEN + payload_len + TAG_LEN);

    // Decrypt by hand with the documented AAD.
    let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &KEY_A).unwrap());
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&bytes[9..21]);
    let mut aad = b"airlock/request-state".to_vec();
    aad.extend_from_slice(&bytes[..9]);
    let mut sealed = bytes[21..].to_vec();
    let plain = aead
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad),
            &mut sealed,
        )
        .unwrap();
    let p = Payload::decode(plain).unwrap();
    assert_eq!((p.issued_at, p.expires_at, p.round), (NOW, NOW + 600, 3));
    assert_eq!(
        (p.principal, p.method, p.target),
        (b.principal, b.method, b.target)
    );
    assert_eq!(p.arguments_digest, digest_arguments(&a));
    assert_eq!(p.guest_state, Some(STATE));
}

/// Tokens sealed by the code before the envelope was shared by task
/// payloads (key `[0x5a; 32]`, at [`VECTOR_NOW`], TTL 600 s, for
/// [`vector_binding`]): round 2 with guest state `b"guest state \0\xff"`,
/// and round 1 without. Tokens in flight across an upgrade must keep
/// opening, and the layout must not change.
const VECTORS: [&str; 2] = [
    "AWC_B8SIqtGPwm7lbOdq83O2AfKvuSviYzaXTLQRWq4LNLNAS0oyhUNE2S4yohwnUQli4LVi8CdAWGhKWVVJsmLLepIPZot_ohnWX2PaheOTWCJ1kjQIHMME-5WT2tSQYo9GmT5QMHYBmmWvj_-IMehZilWWY-9EL34T8JO3OCcaLaDacuNUbM9K9RkQA_cG0NQCgUrZ0hEvM-pxjJIw4wjXjwY",
    "AWC_B8SIqtGPdAty3eyzze209FYWzg5au12cFVgf1ryrVaCYmapn7HKJbxSh9qPCFvb55-bkJXpMKwyUx3JH8DleETbUT-ntrZNisKXUE01SowbtNRHzBIybRFuZ6yDpvVguOWL82O-_NN4c6ClPEbG4sT-53DGD8StGhE_KLzwFiOHXzw1p3b5pPASJZpf2SJI",
];
const VECTOR_KEY: [u8; 32] = [0x5a; 32];
const VECTOR_NOW: u64 = 1_785_000_000;

fn vector_binding(args: &Value) -> Binding<'_> {
    Binding::new("token:alice", "tools/call", "weather", args)
}

#[test]
fn tokens_sealed_before_the_shared_envelope_still_open_and_seal_alike() {
    let s = sealer(&[VECTOR_KEY]);
    let a = json!({"city": "Oslo", "days": 3});
    let b = vector_binding(&a);
    let expected: [(u32, Option<&[u8]>); 2] = [(2, Some(b"guest state \0\xff")), (1, None)];
    for (token, (round, state)) in VECTORS.iter().zip(expected) {
        let opened = s.open_at(token, &b, VECTOR_NOW + 1).unwrap();
        assert_eq!(opened.round, round);
        assert_eq!(opened.guest_state.as_deref(), state);
        assert_eq!(
            (opened.issued_at, opened.expires_at),
            (VECTOR_NOW, VECTOR_NOW + 600)
        );
        // The same inputs, nonce and token id seal to the same bytes.
        let nonce: [u8; 12] = decode(token)[9..HEADER_LEN].try_into().unwrap();
        let again = s
            .seal_drawn(
                &b,
                round,
                state,
                VECTOR_NOW,
                FreshNonce::given(nonce),
                opened.token_id,
            )
            .unwrap();
        assert_eq!(&again, token);
    }
}

#[test]
fn every_seal_is_fresh() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let t1 = s.seal_at(&binding(&a), 1, Some(STATE), NOW).unwrap();
    let t2 = s.seal_at(&binding(&a), 1, Some(STATE), NOW).unwrap();
    assert_ne!(t1, t2);
    let (b1, b2) = (decode(&t1), decode(&t2));
    assert_ne!(b1[9..21], b2[9..21], "nonces must differ");
    let o1 = s.open_at(&t1, &binding(&a), NOW).unwrap();
    let o2 = s.open_at(&t2, &binding(&a), NOW).unwrap();
    assert_ne!(o1.token_id, o2.token_id);
    assert_eq!(o1.guest_state, o2.guest_state);
}

#[test]
fn every_byte_flip_is_rejected() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let bytes = decode(&token);
    for pos in 0..bytes.len() {
        for mask in 1..=255u8 {
            let mut altered = bytes.clone();
            altered[pos] ^= mask;
            let err = s
                .open_at(&URL_SAFE_NO_PAD.encode(&altered), &b, NOW)
                .unwrap_err();
            match pos {
                0 => assert_eq!(err, StateError::UnsupportedVersion(1 ^ mask)),
                1..=8 => {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&altered[1..9]);
                    assert_eq!(err, StateError::UnknownKey(KeyId::from_bytes(id)));
                }
                _ => assert_eq!(err, StateError::Forged, "pos {pos} mask {mask}"),
            }
        }
    }
}

#[test]
fn every_character_substitution_is_rejected() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let alphabet: Vec<char> =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=. \n\0é"
            .chars()
            .collect();
    let chars: Vec<char> = token.chars().collect();
    let mut tried = 0;
    for pos in 0..chars.len() {
        for &c in &alphabet {
            if c == chars[pos] {
                continue;
            }
            let mut altered = chars.clone();
            altered[pos] = c;
            let altered: String = altered.into_iter().collect();
            let err = s.open_at(&altered, &b, NOW).unwrap_err();
            assert!(
                matches!(
                    err,
                    StateError::Malformed(_)
                        | StateError::UnsupportedVersion(_)
                        | StateError::UnknownKey(_)
                        | StateError::Forged
                ),
                "pos {pos} char {c:?}: {err:?}"
            );
            tried += 1;
        }
    }
    assert_eq!(tried, chars.len() * (alphabet.len() - 1));
}

#[test]
fn every_truncation_and_extension_is_rejected() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, None, NOW).unwrap();
    for len in 0..token.len() {
        let err = s.open_at(&token[..len], &b, NOW).unwrap_err();
        assert!(
            matches!(err, StateError::Malformed(_) | StateError::Forged),
            "len {len}: {err:?}"
        );
    }
    for suffix in ["A", "AA", "AAA", "AAAA", "=", "==", " ", "\n", "."] {
        let err = s.open_at(&format!("{token}{suffix}"), &b, NOW).unwrap_err();
        assert!(
            matches!(err, StateError::Malformed(_) | StateError::Forged),
            "{suffix:?}: {err:?}"
        );
    }
    // Whole-byte truncation of the decoded envelope.
    let bytes = decode(&token);
    for len in 0..bytes.len() {
        let err = s
            .open_at(&URL_SAFE_NO_PAD.encode(&bytes[..len]), &b, NOW)
            .unwrap_err();
        let expected_malformed = len < token::MIN_ENVELOPE_LEN;
        assert_eq!(
            matches!(err, StateError::Malformed(_)),
            expected_malformed,
            "len {len}: {err:?}"
        );
        if !expected_malformed {
            assert_eq!(err, StateError::Forged, "len {len}");
        }
    }
}

#[test]
fn wrong_principal_method_target_or_arguments_are_rejected() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let other_args = json!({"location": "Boston", "days": 3});
    let cases = [
        (
            Binding {
                principal: "iss|mallory|client-1",
                ..b
            },
            StateError::WrongPrincipal,
        ),
        (
            Binding {
                principal: "iss|alice|client-1 ",
                ..b
            },
            StateError::WrongPrincipal,
        ),
        (Binding { principal: "", ..b }, StateError::WrongPrincipal),
        (
            Binding {
                method: "prompts/get",
                ..b
            },
            StateError::WrongRequest {
                field: BindingField::Method,
            },
        ),
        (
            Binding {
                target: "get_weather2",
                ..b
            },
            StateError::WrongRequest {
                field: BindingField::Target,
            },
        ),
        (
            Binding::new(b.principal, b.method, b.target, &other_args),
            StateError::WrongRequest {
                field: BindingField::Arguments,
            },
        ),
        (
            Binding::new(b.principal, b.method, b.target, &json!({})),
            StateError::WrongRequest {
                field: BindingField::Arguments,
            },
        ),
    ];
    for (wrong, expected) in cases {
        assert_eq!(s.open_at(&token, &wrong, NOW).unwrap_err(), expected);
    }
    // Principal is checked before the request fields.
    let all_wrong = Binding {
        principal: "x",
        method: "y",
        target: "z",
        arguments_digest: [0; 32],
    };
    assert_eq!(
        s.open_at(&token, &all_wrong, NOW).unwrap_err(),
        StateError::WrongPrincipal
    );
    assert!(s.open_at(&token, &b, NOW).is_ok());
}

#[test]
fn arguments_match_in_any_member_order_and_spacing() {
    let s = sealer(&[KEY_A]);
    let sealed_args: Value =
        serde_json::from_str(r#"{"location":"New York","opts":{"unit":"F","days":[1,2]}}"#)
            .unwrap();
    let retried_args: Value = serde_json::from_str(
        "{ \"opts\" : {\n \"days\" : [ 1 , 2 ] , \"unit\" : \"F\" } ,\n \"location\" : \"New York\" }",
    )
    .unwrap();
    let token = s
        .seal_at(&binding(&sealed_args), 1, Some(STATE), NOW)
        .unwrap();
    let opened = s.open_at(&token, &binding(&retried_args), NOW).unwrap();
    assert_eq!(opened.guest_state.as_deref(), Some(STATE));

    // Absent arguments (`{}`) and `null` are the same.
    let token = s.seal_at(&binding(&json!({})), 1, None, NOW).unwrap();
    assert!(s.open_at(&token, &binding(&Value::Null), NOW).is_ok());
}

#[test]
fn expiry_and_issue_time_use_the_given_clock() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, None, NOW).unwrap();
    assert!(s.open_at(&token, &b, NOW).is_ok());
    assert!(s.open_at(&token, &b, NOW + 599).is_ok());
    assert_eq!(
        s.open_at(&token, &b, NOW + 600).unwrap_err(),
        StateError::Expired {
            expires_at: NOW + 600,
            now: NOW + 600
        }
    );
    assert_eq!(
        s.open_at(&token, &b, u64::MAX).unwrap_err(),
        StateError::Expired {
            expires_at: NOW + 600,
            now: u64::MAX
        }
    );
    // Another process whose clock is behind: up to 60 s is tolerated.
    assert!(s.open_at(&token, &b, NOW - 60).is_ok());
    assert_eq!(
        s.open_at(&token, &b, NOW - 61).unwrap_err(),
        StateError::NotYetValid {
            issued_at: NOW,
            now: NOW - 61
        }
    );
    assert_eq!(
        s.open_at(&token, &b, 0).unwrap_err(),
        StateError::NotYetValid {
            issued_at: NOW,
            now: 0
        }
    );
}

#[test]
fn ttl_is_configurable_and_at_least_one_second() {
    let ring = || KeyRing::from_keys(&[KEY_A]).unwrap();
    let a = args();
    let b = binding(&a);
    let short = StateSealer::new(ring(), Duration::from_secs(30), StateLimits::default());
    let token = short.seal_at(&b, 1, None, NOW).unwrap();
    assert!(short.open_at(&token, &b, NOW + 29).is_ok());
    assert!(matches!(
        short.open_at(&token, &b, NOW + 30),
        Err(StateError::Expired { .. })
    ));
    // The token carries its own expiry: a sealer with a longer TTL honours it.
    assert!(matches!(
        sealer(&[KEY_A]).open_at(&token, &b, NOW + 30),
        Err(StateError::Expired { .. })
    ));

    let zero = StateSealer::new(ring(), Duration::ZERO, StateLimits::default());
    assert_eq!(zero.ttl(), Duration::from_secs(1));
    let token = zero.seal_at(&b, 1, None, NOW).unwrap();
    assert!(zero.open_at(&token, &b, NOW).is_ok());
    assert!(zero.open_at(&token, &b, NOW + 1).is_err());
    // Expiry saturates instead of wrapping.
    let token = zero.seal_at(&b, 1, None, u64::MAX).unwrap();
    assert_eq!(
        zero.open_at(&token, &b, u64::MAX).unwrap_err(),
        StateError::Expired {
            expires_at: u64::MAX,
            now: u64::MAX
        }
    );
}

#[test]
fn rotation_adds_then_retires_keys() {
    let a = args();
    let b = binding(&a);
    let old = sealer(&[KEY_A]);
    let rotated = sealer(&[KEY_B, KEY_A]);
    let retired = sealer(&[KEY_B]);

    let from_a = old.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let opened = rotated.open_at(&from_a, &b, NOW).unwrap();
    assert_eq!(opened.guest_state.as_deref(), Some(STATE));
    assert_eq!(
        retired.open_at(&from_a, &b, NOW).unwrap_err(),
        StateError::UnknownKey(KeyId::of(&KEY_A))
    );

    let from_b = rotated.seal_at(&b, 2, None, NOW).unwrap();
    assert_eq!(&decode(&from_b)[1..9], KeyId::of(&KEY_B).as_bytes());
    assert_eq!(rotated.keys().sealing_key_id(), KeyId::of(&KEY_B));
    assert_eq!(retired.open_at(&from_b, &b, NOW).unwrap().round, 2);
    assert_eq!(rotated.open_at(&from_b, &b, NOW).unwrap().round, 2);
    // A process not yet given the new key cannot open it.
    assert_eq!(
        old.open_at(&from_b, &b, NOW).unwrap_err(),
        StateError::UnknownKey(KeyId::of(&KEY_B))
    );
}

#[test]
fn fleet_members_with_the_same_ring_open_each_others_tokens() {
    let text = format!(
        "{}\n{}\n",
        URL_SAFE_NO_PAD.encode(KEY_B),
        URL_SAFE_NO_PAD.encode(KEY_A)
    );
    let one = StateSealer::new(
        KeyRing::parse(&text).unwrap(),
        DEFAULT_TTL,
        StateLimits::default(),
    );
    let two = StateSealer::new(
        KeyRing::parse(&text).unwrap(),
        DEFAULT_TTL,
        StateLimits::default(),
    );
    let a = args();
    let token = one.seal_at(&binding(&a), 1, Some(STATE), NOW).unwrap();
    assert!(two.open_at(&token, &binding(&a), NOW).is_ok());
    // Ephemeral rings do not share keys.
    let e1 = StateSealer::new(KeyRing::ephemeral(), DEFAULT_TTL, StateLimits::default());
    let e2 = StateSealer::new(KeyRing::ephemeral(), DEFAULT_TTL, StateLimits::default());
    let token = e1.seal_at(&binding(&a), 1, None, NOW).unwrap();
    assert!(e1.open_at(&token, &binding(&a), NOW).is_ok());
    assert!(matches!(
        e2.open_at(&token, &binding(&a), NOW),
        Err(StateError::UnknownKey(_))
    ));
}

#[test]
fn a_borrowed_key_id_does_not_help_a_forger() {
    // Sealed with key C but labelled with key A's id.
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let from_c = sealer(&[KEY_C]).seal_at(&b, 1, None, NOW).unwrap();
    let mut bytes = decode(&from_c);
    bytes[1..9].copy_from_slice(KeyId::of(&KEY_A).as_bytes());
    assert_eq!(
        s.open_at(&URL_SAFE_NO_PAD.encode(&bytes), &b, NOW)
            .unwrap_err(),
        StateError::Forged
    );
}

#[test]
fn a_token_sealed_in_another_domain_does_not_open() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let payload = Payload {
        issued_at: NOW,
        expires_at: NOW + 600,
        round: 1,
        token_id: [5; 16],
        principal: b.principal,
        method: b.method,
        target: b.target,
        arguments_digest: b.arguments_digest,
        guest_state: Some(STATE),
    };
    let mut plain = Vec::new();
    payload.encode(&mut plain).unwrap();
    let genuine = seal_raw_in(Domain::RequestState, &[], &KEY_A, [9; 12], &plain);
    assert!(s.open_at(&genuine, &b, NOW).is_ok());
    // The same plaintext as a task payload, bound to a task or to nothing.
    for associated in [&b""[..], b"\0\0\0\x02t1\0\0\0\x12iss|alice|client-1"] {
        let other = seal_raw_in(Domain::TaskPayload, associated, &KEY_A, [9; 12], &plain);
        assert_eq!(s.open_at(&other, &b, NOW), Err(StateError::Forged));
    }
}

#[test]
fn authenticated_but_malformed_payloads_are_reported() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let good = Payload {
        issued_at: NOW,
        expires_at: NOW + 600,
        round: 1,
        token_id: [5; 16],
        principal: b.principal,
        method: b.method,
        target: b.target,
        arguments_digest: b.arguments_digest,
        guest_state: None,
    };
    let mut plain = Vec::new();
    good.encode(&mut plain).unwrap();
    assert_eq!(
        s.open_at(&seal_raw(&KEY_A, &plain), &b, NOW).unwrap().round,
        1
    );

    let mut extra = plain.clone();
    extra.push(0);
    assert_eq!(
        s.open_at(&seal_raw(&KEY_A, &extra), &b, NOW).unwrap_err(),
        StateError::BadPayload(PayloadError::TrailingBytes(1))
    );
    let short = &plain[..plain.len() - 1];
    assert_eq!(
        s.open_at(&seal_raw(&KEY_A, short), &b, NOW).unwrap_err(),
        StateError::BadPayload(PayloadError::Truncated("guest_state"))
    );
    let mut flag = plain.clone();
    *flag.last_mut().unwrap() = 9;
    assert_eq!(
        s.open_at(&seal_raw(&KEY_A, &flag), &b, NOW).unwrap_err(),
        StateError::BadPayload(PayloadError::BadFlag(9))
    );
    // Too short for any payload: refused before decryption.
    assert_eq!(
        s.open_at(&seal_raw(&KEY_A, b""), &b, NOW).unwrap_err(),
        StateError::Malformed("too short to be a requestState token")
    );
}

#[test]
fn garbage_never_panics_and_is_rejected() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let max = StateLimits::default().max_token_len;
    let mut inputs: Vec<String> = [
        "",
        "=",
        "==",
        "====",
        "A",
        "AA",
        "AAA",
        "AAAA",
        "!!!!",
        "ééé",
        " ",
        "\n",
        "\0",
        "null",
        "{}",
        "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0",
        "AQ",
        "AQAAAAAAAAAA",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    inputs.push(format!("{token}="));
    inputs.push(format!("{token}=="));
    inputs.push(format!(" {token}"));
    inputs.push(token.replace('-', "+").replace('_', "/") + "+");
    inputs.push("A".repeat(max));
    inputs.push("\u{1F600}".repeat(max / 4));
    for input in &inputs {
        let err = s.open_at(input, &b, NOW).unwrap_err();
        assert!(err.is_client_error(), "{err:?}");
        assert_eq!(err.client_message(), INVALID_STATE_MESSAGE);
    }
    assert_eq!(
        s.open_at("A", &b, NOW).unwrap_err(),
        StateError::Malformed("not base64url without padding")
    );
    assert_eq!(
        s.open_at("AAAA", &b, NOW).unwrap_err(),
        StateError::Malformed("too short to be a requestState token")
    );
    assert_eq!(
        s.open_at(&format!("{token}="), &b, NOW).unwrap_err(),
        StateError::Malformed("not base64url without padding")
    );
    assert_eq!(
        s.open_at(&"A".repeat(max), &b, NOW).unwrap_err(),
        StateError::UnsupportedVersion(0)
    );
    // Over the length bound: refused before decoding.
    for len in [max + 1, 10 * 1024 * 1024] {
        let huge = "A".repeat(len);
        assert_eq!(
            s.open_at(&huge, &b, NOW).unwrap_err(),
            StateError::TokenTooLong { len, max }
        );
    }
}

#[test]
fn guest_state_and_token_size_are_bounded_at_seal() {
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let biggest = vec![0xabu8; DEFAULT_MAX_GUEST_STATE];
    let token = s.seal_at(&b, 1, Some(&biggest), NOW).unwrap();
    assert!(token.len() <= DEFAULT_MAX_TOKEN_LEN);
    assert_eq!(
        s.open_at(&token, &b, NOW).unwrap().guest_state,
        Some(biggest.clone())
    );

    let over = vec![0u8; DEFAULT_MAX_GUEST_STATE + 1];
    let err = s.seal_at(&b, 1, Some(&over), NOW).unwrap_err();
    assert_eq!(
        err,
        StateError::TooLarge {
            what: GUEST_STATE_SIZE,
            len: DEFAULT_MAX_GUEST_STATE + 1,
            max: DEFAULT_MAX_GUEST_STATE
        }
    );
    assert!(!err.is_client_error());
    assert_eq!(err.client_message(), SEAL_FAILED_MESSAGE);

    // A huge binding would make a token that could not be opened again.
    let long_target = "t".repeat(20 * 1024);
    let wide = Binding {
        target: &long_target,
        ..b
    };
    let err = s.seal_at(&wide, 1, Some(&biggest), NOW).unwrap_err();
    assert!(
        matches!(err, StateError::TooLarge { what, max, .. } if what == TOKEN_LENGTH && max == DEFAULT_MAX_TOKEN_LEN),
        "{err:?}"
    );

    // Custom limits, exactly at the edge.
    let limits = StateLimits {
        max_guest_state: 10,
        max_token_len: 0,
    };
    let probe = StateSealer::new(KeyRing::from_keys(&[KEY_A]).unwrap(), DEFAULT_TTL, limits);
    let err = probe.seal_at(&b, 1, Some(b"0123456789"), NOW).unwrap_err();
    let StateError::TooLarge { len: needed, .. } = err else {
        panic!("{err:?}");
    };
    let exact = StateSealer::new(
        KeyRing::from_keys(&[KEY_A]).unwrap(),
        DEFAULT_TTL,
        StateLimits {
            max_token_len: needed,
            ..limits
        },
    );
    let token = exact.seal_at(&b, 1, Some(b"0123456789"), NOW).unwrap();
    assert_eq!(token.len(), needed);
    assert!(exact.open_at(&token, &b, NOW).is_ok());
    assert!(matches!(
        exact.seal_at(&b, 1, Some(b"0123456789X"), NOW),
        Err(StateError::TooLarge { what, .. }) if what == GUEST_STATE_SIZE
    ));
}

#[test]
fn every_open_failure_gets_the_same_client_message() {
    let errors = [
        StateError::TokenTooLong { len: 2, max: 1 },
        StateError::Malformed("x"),
        StateError::UnsupportedVersion(2),
        StateError::UnknownKey(KeyId::of(&KEY_A)),
        StateError::Forged,
        StateError::BadPayload(PayloadError::BadFlag(3)),
        StateError::Expired {
            expires_at: 1,
            now: 2,
        },
        StateError::NotYetValid {
            issued_at: 100,
            now: 1,
        },
        StateError::WrongPrincipal,
        StateError::WrongRequest {
            field: BindingField::Target,
        },
        StateError::Replayed(TokenId::from_bytes([1; 16])),
    ];
    for e in &errors {
        assert!(e.is_client_error());
        assert_eq!(e.client_message(), INVALID_STATE_MESSAGE);
        assert!(!e.to_string().is_empty());
    }
    for e in [
        StateError::TooLarge {
            what: GUEST_STATE_SIZE,
            len: 2,
            max: 1,
        },
        StateError::Sealing("rng"),
    ] {
        assert!(!e.is_client_error());
        assert_eq!(e.client_message(), SEAL_FAILED_MESSAGE);
    }
    for e in [
        StateError::Unrecorded(StoreError::Full { capacity: 1 }),
        StateError::Unrecorded(StoreError::Unavailable("timeout".into())),
    ] {
        assert!(!e.is_client_error());
        assert_eq!(e.client_message(), STATE_UNRECORDED_MESSAGE);
        assert!(e.to_string().contains("single-use record"), "{e}");
    }
    // The log tells a replay apart from every other refusal.
    let replay = StateError::Replayed(TokenId::from_bytes([0xab; 16])).to_string();
    assert!(replay.contains("already used"), "{replay}");
    assert!(replay.contains(&"ab".repeat(16)), "{replay}");
    assert!(
        INVALID_STATE_MESSAGE
            .contains("retry the original request without requestState and inputResponses")
    );
    assert_eq!(
        StateError::WrongRequest {
            field: BindingField::Arguments
        }
        .to_string(),
        "requestState belongs to a different request: the arguments differs"
    );
}

#[test]
fn debug_output_hides_keys_and_guest_state() {
    let s = sealer(&[KEY_A, KEY_B]);
    let shown = format!("{s:?}");
    assert!(shown.contains(&KeyId::of(&KEY_A).to_string()), "{shown}");
    assert!(!shown.contains(&URL_SAFE_NO_PAD.encode(KEY_A)));
    assert!(!shown.contains("1111111111"), "{shown}");
    assert!(!shown.contains("17, 17"), "{shown}");

    let a = args();
    let token = s
        .seal_at(&binding(&a), 1, Some(b"secret-bytes"), NOW)
        .unwrap();
    let opened = s.open_at(&token, &binding(&a), NOW).unwrap();
    let shown = format!("{opened:?}");
    assert!(shown.contains("guest_state_len: Some(12)"), "{shown}");
    assert!(!shown.contains("115, 101, 99"), "{shown}"); // "sec"
}

// ---------------------------------------------------------------------------
// Single use
// ---------------------------------------------------------------------------

fn single_use(keys: &[[u8; 32]], store: Arc<dyn RedemptionStore>) -> StateSealer {
    sealer(keys).with_redemption_store(store)
}

/// The id of a token sealed with `KEY_A`, read without redeeming it.
fn id_of(token: &str, b: &Binding<'_>) -> TokenId {
    TokenId::from_bytes(sealer(&[KEY_A]).open_at(token, b, NOW).unwrap().token_id)
}

#[test]
fn without_single_use_a_token_opens_again_and_again() {
    let s = sealer(&[KEY_A]);
    assert!(!s.single_use());
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    for _ in 0..3 {
        assert_eq!(
            s.open_at(&token, &b, NOW).unwrap().guest_state.as_deref(),
            Some(STATE)
        );
    }
}

#[test]
fn single_use_opens_each_token_once() {
    let s = single_use(&[KEY_A], Arc::new(InMemoryRedemptions::new(100)));
    assert!(s.single_use());
    assert!(format!("{s:?}").contains("single_use: true"));
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let other = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let opened = s.open_at(&token, &b, NOW).unwrap();
    assert_eq!(opened.guest_state.as_deref(), Some(STATE));
    let err = s.open_at(&token, &b, NOW + 1).unwrap_err();
    assert_eq!(
        err,
        StateError::Replayed(TokenId::from_bytes(opened.token_id))
    );
    assert!(err.is_client_error());
    assert_eq!(err.client_message(), INVALID_STATE_MESSAGE);
    // Another token of the same request is its own id.
    assert!(s.open_at(&other, &b, NOW).is_ok());
    assert!(matches!(
        s.open_at(&other, &b, NOW),
        Err(StateError::Replayed(_))
    ));
}

#[test]
fn refused_tokens_never_spend_their_id() {
    let s = single_use(&[KEY_A], Arc::new(InMemoryRedemptions::new(100)));
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let other_args = json!({"location": "Boston"});
    let mut altered = decode(&token);
    let last = altered.len() - 1;
    altered[last] ^= 1;
    let failures = [
        (
            s.open_at(
                &token,
                &Binding {
                    principal: "mallory",
                    ..b
                },
                NOW,
            ),
            "wrong principal",
        ),
        (
            s.open_at(
                &token,
                &Binding {
                    method: "prompts/get",
                    ..b
                },
                NOW,
            ),
            "wrong method",
        ),
        (
            s.open_at(
                &token,
                &Binding {
                    target: "other",
                    ..b
                },
                NOW,
            ),
            "wrong target",
        ),
        (
            s.open_at(&token, &binding(&other_args), NOW),
            "wrong arguments",
        ),
        (s.open_at(&token, &b, NOW + 600), "expired"),
        (s.open_at(&token, &b, NOW - 61), "not yet valid"),
        (
            s.open_at(&URL_SAFE_NO_PAD.encode(&altered), &b, NOW),
            "altered tag",
        ),
        (
            single_use(&[KEY_B], Arc::new(InMemoryRedemptions::new(1))).open_at(&token, &b, NOW),
            "unknown key",
        ),
    ];
    for (result, what) in failures {
        let err = result.unwrap_err();
        assert!(!matches!(err, StateError::Replayed(_)), "{what}: {err:?}");
    }
    // The genuine request still gets its one use.
    assert!(s.open_at(&token, &b, NOW).is_ok());
    assert!(matches!(
        s.open_at(&token, &b, NOW),
        Err(StateError::Replayed(_))
    ));
}

#[test]
fn a_shared_store_refuses_replays_across_a_fleet() {
    let store: Arc<dyn RedemptionStore> = Arc::new(InMemoryRedemptions::new(100));
    let one = single_use(&[KEY_A], Arc::clone(&store));
    let two = single_use(&[KEY_A], Arc::clone(&store));
    let alone = single_use(&[KEY_A], Arc::new(InMemoryRedemptions::new(100)));
    let a = args();
    let b = binding(&a);
    let token = one.seal_at(&b, 1, None, NOW).unwrap();
    assert!(two.open_at(&token, &b, NOW).is_ok());
    assert!(matches!(
        one.open_at(&token, &b, NOW),
        Err(StateError::Replayed(_))
    ));
    // A process with a store of its own does not know (why a fleet shares).
    assert!(alone.open_at(&token, &b, NOW).is_ok());
}

/// A shared store that is down.
struct Unreachable;

impl RedemptionStore for Unreachable {
    fn redeem(&self, _: &TokenId, _: u64, _: u64) -> Result<Redemption, StoreError> {
        Err(StoreError::Unavailable("connection refused".into()))
    }
}

/// A store that records what it was asked.
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<(TokenId, u64, u64)>>);

impl RedemptionStore for Recording {
    fn redeem(&self, id: &TokenId, expires_at: u64, now: u64) -> Result<Redemption, StoreError> {
        self.0.lock().unwrap().push((*id, expires_at, now));
        Ok(Redemption::First)
    }
}

#[test]
fn a_store_that_cannot_answer_fails_closed_without_spending() {
    let a = args();
    let b = binding(&a);
    let down = single_use(&[KEY_A], Arc::new(Unreachable));
    let token = down.seal_at(&b, 1, None, NOW).unwrap();
    let err = down.open_at(&token, &b, NOW).unwrap_err();
    assert_eq!(
        err,
        StateError::Unrecorded(StoreError::Unavailable("connection refused".into()))
    );
    assert!(!err.is_client_error());
    assert_eq!(err.client_message(), STATE_UNRECORDED_MESSAGE);
    // Not recorded anywhere: once the store is back the token opens.
    let back = single_use(&[KEY_A], Arc::new(InMemoryRedemptions::new(10)));
    assert!(back.open_at(&token, &b, NOW).is_ok());

    // A full in-memory store refuses new ids and keeps the live ones.
    let full = single_use(&[KEY_A], Arc::new(InMemoryRedemptions::new(1)));
    let first = full.seal_at(&b, 1, None, NOW).unwrap();
    let second = full.seal_at(&b, 1, None, NOW).unwrap();
    assert!(full.open_at(&first, &b, NOW).is_ok());
    assert_eq!(
        full.open_at(&second, &b, NOW).unwrap_err(),
        StateError::Unrecorded(StoreError::Full { capacity: 1 })
    );
    assert!(matches!(
        full.open_at(&first, &b, NOW),
        Err(StateError::Replayed(_))
    ));
    // Once the first token has expired its slot is free again.
    let later = full.seal_at(&b, 1, None, NOW + 600).unwrap();
    assert!(full.open_at(&later, &b, NOW + 600).is_ok());
}

#[test]
fn the_store_gets_the_token_id_its_expiry_and_the_clock() {
    let recording = Arc::new(Recording::default());
    let s = single_use(&[KEY_A], recording.clone());
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, None, NOW).unwrap();
    let id = id_of(&token, &b);
    s.open_at(&token, &b, NOW + 5).unwrap();
    assert_eq!(*recording.0.lock().unwrap(), vec![(id, NOW + 600, NOW + 5)]);
    // Refused tokens are never shown to the store.
    let _ = s.open_at(&token, &Binding { target: "x", ..b }, NOW);
    let _ = s.open_at("AAAA", &b, NOW);
    assert_eq!(recording.0.lock().unwrap().len(), 1);
}

// ---------------------------------------------------------------------------
// Random mutations
// ---------------------------------------------------------------------------

/// 1 to 4 distinct positions in `0..len`, picked by `rng`.
fn positions(rng: &mut fastrand::Rng, len: usize) -> Vec<usize> {
    let count = 1 + rng.usize(..4);
    rng.choose_multiple(0..len, count)
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `token` with 1 to 4 of its characters replaced by other base64url
/// characters (the text stays valid base64url except, possibly, its last
/// character's unused bits).
fn mutate_text(rng: &mut fastrand::Rng, token: &str) -> String {
    let mut text = token.as_bytes().to_vec();
    for pos in positions(rng, text.len()) {
        let old = text[pos];
        let mut new = old;
        while new == old {
            new = BASE64URL[rng.usize(..64)];
        }
        text[pos] = new;
    }
    String::from_utf8(text).unwrap()
}

/// `token` decoded, with 1 to 4 bytes XORed with random nonzero masks,
/// re-encoded: always well-formed base64url.
fn mutate_bytes(rng: &mut fastrand::Rng, token: &str) -> String {
    let mut bytes = decode(token);
    for pos in positions(rng, bytes.len()) {
        bytes[pos] ^= 1 + rng.usize(..255) as u8;
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn fifty_thousand_random_mutations_are_never_accepted() {
    const MUTATIONS: usize = 50_000;
    // Single use, so that the end also proves no mutation spent the id.
    let s = single_use(&[KEY_A, KEY_B], Arc::new(InMemoryRedemptions::new(10)));
    let a = args();
    let b = binding(&a);
    // Fixed tokens (fixed nonces and ids, as `seal_at` would lay them
    // out), so that a failure reproduces exactly.
    let big = [0u8; 300];
    let tokens: Vec<String> = [(1, Some(STATE)), (7, None), (2, Some(&big[..]))]
        .into_iter()
        .enumerate()
        .map(|(i, (round, guest_state))| {
            let payload = Payload {
                issued_at: NOW,
                expires_at: NOW + 600,
                round,
                token_id: [i as u8 + 1; 16],
                principal: b.principal,
                method: b.method,
                target: b.target,
                arguments_digest: b.arguments_digest,
                guest_state,
            };
            let mut plain = Vec::new();
            payload.encode(&mut plain).unwrap();
            let key = if i == 1 { &KEY_B } else { &KEY_A };
            seal_raw_with_nonce(key, [i as u8 + 1; 12], &plain)
        })
        .collect();
    for token in &tokens {
        assert!(sealer(&[KEY_A, KEY_B]).open_at(token, &b, NOW).is_ok());
    }
    let mut rng = fastrand::Rng::with_seed(0x0123_4567_89ab_cdef);
    let mut by_kind = std::collections::BTreeMap::<&str, usize>::new();
    for i in 0..MUTATIONS {
        let token = &tokens[i % tokens.len()];
        let mutated = if i.is_multiple_of(2) {
            mutate_text(&mut rng, token)
        } else {
            mutate_bytes(&mut rng, token)
        };
        assert_ne!(&mutated, token, "mutation {i} changed nothing");
        let err = match s.open_at(&mutated, &b, NOW) {
            Ok(opened) => panic!("mutation {i} was accepted: {mutated} -> {opened:?}"),
            Err(err) => err,
        };
        assert!(err.is_client_error(), "mutation {i}: {err:?}");
        assert_eq!(err.client_message(), INVALID_STATE_MESSAGE);
        let kind = match err {
            StateError::Malformed(_) => "malformed",
            StateError::UnsupportedVersion(_) => "version",
            StateError::UnknownKey(_) => "unknown key",
            StateError::Forged => "forged",
            other => panic!("mutation {i}: an unexpected refusal {other:?}"),
        };
        *by_kind.entry(kind).or_default() += 1;
    }
    assert_eq!(by_kind.values().sum::<usize>(), MUTATIONS);
    // Most mutations land in the ciphertext and fail authentication.
    assert!(by_kind["forged"] > MUTATIONS / 2, "{by_kind:?}");
    // The genuine tokens are untouched and unspent: each opens exactly once.
    for token in &tokens {
        assert!(s.open_at(token, &b, NOW).is_ok());
        assert!(matches!(
            s.open_at(token, &b, NOW),
            Err(StateError::Replayed(_))
        ));
    }
}

#[test]
fn random_mutations_of_a_binding_never_open_a_token() {
    // The other half of the attack surface: a genuine token presented with
    // a slightly different request.
    let s = sealer(&[KEY_A]);
    let a = args();
    let b = binding(&a);
    let token = s.seal_at(&b, 1, Some(STATE), NOW).unwrap();
    let mut rng = fastrand::Rng::with_seed(0xfeed_beef_cafe_f00d);
    for i in 0..5_000 {
        let mut principal = b.principal.as_bytes().to_vec();
        let mut target = b.target.as_bytes().to_vec();
        let mut digest = b.arguments_digest;
        match i % 3 {
            0 => {
                let pos = rng.usize(..principal.len());
                principal[pos] ^= 1 + rng.usize(..127) as u8;
            }
            1 => {
                let pos = rng.usize(..target.len());
                target[pos] ^= 1 + rng.usize(..127) as u8;
            }
            _ => digest[rng.usize(..32)] ^= 1 + rng.usize(..255) as u8,
        }
        let principal = String::from_utf8_lossy(&principal).into_owned();
        let target = String::from_utf8_lossy(&target).into_owned();
        let wrong = Binding {
            principal: &principal,
            target: &target,
            arguments_digest: digest,
            ..b
        };
        assert_ne!(wrong, b);
        let err = s.open_at(&token, &wrong, NOW).unwrap_err();
        assert!(
            matches!(
                err,
                StateError::WrongPrincipal | StateError::WrongRequest { .. }
            ),
            "{i}: {err:?}"
        );
    }
    assert!(s.open_at(&token, &b, NOW).is_ok());
}
