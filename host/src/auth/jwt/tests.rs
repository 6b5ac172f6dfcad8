//! Tokens are minted here with `ring` directly (not with the verifier's
//! library), so these tests check the verifier against the JWS format itself.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self as ring_sig, KeyPair};
use serde_json::{Value, json};

use super::*;

const ISSUER: &str = "https://idp.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";
/// The HS256 secret of [`hs256_verifier`].
pub(crate) const SECRET: &[u8] = b"an-hs256-secret-of-at-least-32-bytes!";

const RSA_PRIVATE: &str = include_str!("test-rsa-private.pem");
const RSA_PUBLIC: &str = include_str!("test-rsa-public.pem");
const RSA_PUBLIC_PKCS1: &str = include_str!("test-rsa-public-pkcs1.pem");
const RSA_CERTIFICATE: &str = include_str!("test-rsa-cert.pem");

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `header.claims.signature`, the signature made by `sign` over the first two.
fn mint(header: Value, claims: &Value, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = sign(message.as_bytes());
    format!("{message}.{}", b64(&signature))
}

/// An HS256 token over `claims`, signed with `secret`.
pub(crate) fn hs256(secret: &[u8], claims: &Value) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    mint(json!({"alg": "HS256", "typ": "JWT"}), claims, |m| {
        ring::hmac::sign(&key, m).as_ref().to_vec()
    })
}

/// Valid claims for `sub`, from `ISSUER` to `AUDIENCE`, for five minutes.
pub(crate) fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 300, "iat": now()})
}

fn with(mut claims: Value, field: &str, value: Value) -> Value {
    claims[field] = value;
    claims
}

fn without(mut claims: Value, field: &str) -> Value {
    claims.as_object_mut().unwrap().remove(field);
    claims
}

fn verifier(keys: Vec<VerifyingKey>) -> JwtVerifier {
    JwtVerifier::new(&[ISSUER.to_owned()], &[AUDIENCE.to_owned()], keys).unwrap()
}

/// A verifier of `ISSUER`'s tokens for `AUDIENCE`, keyed with [`SECRET`].
pub(crate) fn hs256_verifier() -> JwtVerifier {
    verifier(vec![VerifyingKey::hs256_secret(SECRET, "secret").unwrap()])
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

fn pem_der(text: &str) -> Vec<u8> {
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    STANDARD.decode(body).unwrap()
}

/// A fresh P-256 key pair: (signing key, SubjectPublicKeyInfo PEM, x, y).
fn p256() -> (ring_sig::EcdsaKeyPair, String, String, String) {
    let rng = SystemRandom::new();
    let alg = &ring_sig::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = ring_sig::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let pair = ring_sig::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref().to_vec();
    let mut spki = hex("3059301306072a8648ce3d020106082a8648ce3d030107034200");
    spki.extend_from_slice(&point);
    let (x, y) = (b64(&point[1..33]), b64(&point[33..]));
    (pair, pem("PUBLIC KEY", &spki), x, y)
}

fn es256(pair: &ring_sig::EcdsaKeyPair, kid: Option<&str>, claims: &Value) -> String {
    let mut header = json!({"alg": "ES256", "typ": "JWT"});
    if let Some(kid) = kid {
        header["kid"] = json!(kid);
    }
    mint(header, claims, |m| {
        pair.sign(&SystemRandom::new(), m)
            .unwrap()
            .as_ref()
            .to_vec()
    })
}

fn rsa_pair() -> ring_sig::RsaKeyPair {
    ring_sig::RsaKeyPair::from_pkcs8(&pem_der(RSA_PRIVATE)).unwrap()
}

fn rsa(alg: &str, claims: &Value) -> String {
    let pair = rsa_pair();
    let encoding: &'static dyn ring_sig::RsaEncoding = match alg {
        "RS256" => &ring_sig::RSA_PKCS1_SHA256,
        "PS256" => &ring_sig::RSA_PSS_SHA256,
        other => panic!("{other}"),
    };
    mint(json!({"alg": alg}), claims, |m| {
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(encoding, &SystemRandom::new(), m, &mut signature)
            .unwrap();
        signature
    })
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_valid_hs256_token_names_its_principal() {
    let v = hs256_verifier();
    assert_eq!(
        v.verify(&hs256(SECRET, &claims("alice")))
            .unwrap()
            .principal,
        "jwt:https://idp.example.com#alice"
    );
    // `aud` may be an array that includes this resource.
    let token = hs256(
        SECRET,
        &with(claims("bob"), "aud", json!(["other", AUDIENCE])),
    );
    assert_eq!(
        v.verify(&token).unwrap().principal,
        "jwt:https://idp.example.com#bob"
    );
}

#[test]
fn signature_issuer_audience_and_lifetime_are_checked() {
    let v = hs256_verifier();
    let c = claims("alice");
    let cases = [
        (
            hs256(b"another-secret-of-at-least-32-bytes!!", &c),
            JwtError::BadSignature,
        ),
        (
            hs256(
                SECRET,
                &with(c.clone(), "iss", json!("https://evil.example.com")),
            ),
            JwtError::WrongIssuer,
        ),
        (
            hs256(
                SECRET,
                &with(c.clone(), "aud", json!("https://other.example.com/mcp")),
            ),
            JwtError::WrongAudience,
        ),
        (
            hs256(SECRET, &with(c.clone(), "exp", json!(now() - 3600))),
            JwtError::Expired,
        ),
        (
            hs256(SECRET, &with(c.clone(), "nbf", json!(now() + 3600))),
            JwtError::NotYetValid,
        ),
        (
            hs256(SECRET, &without(c.clone(), "exp")),
            JwtError::MissingClaim,
        ),
        (
            hs256(SECRET, &without(c.clone(), "aud")),
            JwtError::MissingClaim,
        ),
        (
            hs256(SECRET, &without(c.clone(), "iss")),
            JwtError::MissingClaim,
        ),
        (
            hs256(SECRET, &without(c.clone(), "sub")),
            JwtError::MissingClaim,
        ),
        (
            hs256(SECRET, &with(c.clone(), "sub", json!(""))),
            JwtError::BadClaims,
        ),
        (
            hs256(SECRET, &with(c.clone(), "sub", json!("al\nice"))),
            JwtError::BadClaims,
        ),
        (
            hs256(SECRET, &with(c.clone(), "sub", json!(42))),
            JwtError::BadClaims,
        ),
        (
            hs256(SECRET, &with(c.clone(), "iss", json!([ISSUER]))),
            JwtError::BadClaims,
        ),
    ];
    for (token, expected) in cases {
        assert_eq!(v.verify(&token), Err(expected), "{token}");
    }
    // Within the leeway: still accepted.
    let token = hs256(SECRET, &with(c.clone(), "exp", json!(now() - 5)));
    assert!(v.verify(&token).is_ok());
    let token = hs256(SECRET, &with(c.clone(), "nbf", json!(now() + 5)));
    assert!(v.verify(&token).is_ok());
    let token = hs256(SECRET, &with(c, "nbf", json!(now() - 60)));
    assert!(v.verify(&token).is_ok());
}

#[test]
fn claims_of_the_wrong_type_never_skip_a_check() {
    // CVE-2026-25537: a string `nbf`/`exp` must not count as absent.
    let v = hs256_verifier();
    for (field, value) in [
        ("nbf", json!("99999999999")),
        ("exp", json!("never")),
        ("exp", json!(null)),
        ("aud", json!(42)),
    ] {
        let token = hs256(SECRET, &with(claims("alice"), field, value.clone()));
        assert!(v.verify(&token).is_err(), "{field}={value} accepted");
    }
}

#[test]
fn malformed_tokens_and_foreign_algorithms_are_refused() {
    let v = hs256_verifier();
    let good = hs256(SECRET, &claims("alice"));
    let (head, rest) = good.split_once('.').unwrap();
    let (body, _) = rest.split_once('.').unwrap();
    for bad in [
        "",
        "a.b.c",
        "not a token",
        &format!("{head}.{body}"),
        &format!("{head}.{body}.!!!"),
        &format!("{head}.{body}."),
    ] {
        assert!(v.verify(bad).is_err(), "{bad:?}");
    }
    // alg none, unsigned.
    let none = format!(
        "{}.{body}.",
        b64(json!({"alg": "none"}).to_string().as_bytes())
    );
    assert_eq!(v.verify(&none), Err(JwtError::Malformed));
    // HS384 is not configured for this secret.
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA384, SECRET);
    let hs384 = mint(json!({"alg": "HS384"}), &claims("alice"), |m| {
        ring::hmac::sign(&key, m).as_ref().to_vec()
    });
    assert_eq!(v.verify(&hs384), Err(JwtError::UnsupportedAlgorithm));
}

#[test]
fn critical_header_extensions_are_refused() {
    let v = hs256_verifier();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET);
    let sign = |m: &[u8]| ring::hmac::sign(&key, m).as_ref().to_vec();
    let header = |extra: Value| {
        let mut header = json!({"alg": "HS256", "typ": "JWT", "b64": true, "x-ext": 1});
        header
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        header
    };
    // Extension members alone are ignored.
    let plain = mint(header(json!({})), &claims("alice"), sign);
    assert_eq!(
        v.verify(&plain).unwrap().principal,
        "jwt:https://idp.example.com#alice"
    );
    // Named as critical, or with an empty or malformed `crit`: refused,
    // though the signature and the claims are good.
    for crit in [
        json!(["x-ext"]),
        json!(["b64"]),
        json!(["exp"]),
        json!([]),
        json!("x-ext"),
        json!(null),
        json!({"x-ext": true}),
    ] {
        let token = mint(header(json!({"crit": crit})), &claims("alice"), sign);
        assert_eq!(
            v.verify(&token),
            Err(JwtError::CriticalExtension),
            "crit {crit}"
        );
    }
}

#[test]
fn an_rsa_public_key_is_never_an_hmac_secret() {
    // The classic confusion: HS256 "signed" with the RSA public key's bytes.
    let v = verifier(VerifyingKey::parse_key_file(RSA_PUBLIC, "rsa.pem").unwrap());
    for secret in [RSA_PUBLIC.as_bytes(), &pem_der(RSA_PUBLIC)[..]] {
        let token = hs256(secret, &claims("mallory"));
        assert_eq!(v.verify(&token), Err(JwtError::UnsupportedAlgorithm));
    }
}

#[test]
fn rsa_keys_from_pem_and_jwk() {
    let c = claims("carol");
    let from_spki = verifier(VerifyingKey::parse_key_file(RSA_PUBLIC, "rsa.pem").unwrap());
    let from_pkcs1 = verifier(VerifyingKey::parse_key_file(RSA_PUBLIC_PKCS1, "rsa1.pem").unwrap());
    let components = ring_sig::RsaPublicKeyComponents::<Vec<u8>>::from(rsa_pair().public());
    let jwks = json!({"keys": [{"kty": "RSA", "n": b64(&components.n), "e": b64(&components.e), "kid": "r1"}]});
    let from_jwk = verifier(VerifyingKey::parse_key_file(&jwks.to_string(), "jwks.json").unwrap());
    for v in [&from_spki, &from_pkcs1, &from_jwk] {
        for alg in ["RS256", "PS256"] {
            assert_eq!(
                v.verify(&rsa(alg, &c)).unwrap().principal,
                "jwt:https://idp.example.com#carol"
            );
        }
        let token = rsa("RS256", &c);
        let at = token.len() - 10;
        let flipped = if &token[at..=at] == "A" { "B" } else { "A" };
        let tampered = format!("{}{flipped}{}", &token[..at], &token[at + 1..]);
        assert_eq!(v.verify(&tampered), Err(JwtError::BadSignature));
        assert_eq!(
            v.verify(&rsa("RS256", &with(c.clone(), "aud", json!("nope")))),
            Err(JwtError::WrongAudience)
        );
    }
    // A JWK whose `alg` pins RS256 refuses PS256.
    let pinned =
        json!({"kty": "RSA", "alg": "RS256", "n": b64(&components.n), "e": b64(&components.e)});
    let v = verifier(VerifyingKey::parse_key_file(&pinned.to_string(), "jwk.json").unwrap());
    assert!(v.verify(&rsa("RS256", &c)).is_ok());
    assert_eq!(
        v.verify(&rsa("PS256", &c)),
        Err(JwtError::UnsupportedAlgorithm)
    );
}

#[test]
fn ec_keys_from_pem_and_jwks_with_key_ids() {
    let (first, first_pem, x1, y1) = p256();
    let (second, _, x2, y2) = p256();
    let c = claims("dave");
    let v = verifier(VerifyingKey::parse_key_file(&first_pem, "ec.pem").unwrap());
    assert!(v.verify(&es256(&first, None, &c)).is_ok());
    assert_eq!(
        v.verify(&es256(&second, None, &c)),
        Err(JwtError::BadSignature)
    );
    let jwks = json!({"keys": [
        {"kty": "EC", "crv": "P-256", "x": x1, "y": y1, "kid": "one", "use": "sig"},
        {"kty": "EC", "crv": "P-256", "x": x2, "y": y2, "kid": "two"},
        // Skipped: an encryption key, an unsupported curve, an unknown type.
        {"kty": "EC", "crv": "P-256", "x": x2, "y": y2, "kid": "enc", "use": "enc"},
        {"kty": "EC", "crv": "P-521", "x": x2, "y": y2, "kid": "p521"},
        {"kty": "XYZ", "kid": "odd"},
    ]});
    let keys = VerifyingKey::parse_key_file(&jwks.to_string(), "jwks.json").unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let v = verifier(keys);
    assert!(v.verify(&es256(&first, Some("one"), &c)).is_ok());
    assert!(v.verify(&es256(&second, Some("two"), &c)).is_ok());
    // Without a kid, or with an unknown one, every key is tried.
    assert!(v.verify(&es256(&second, None, &c)).is_ok());
    assert!(v.verify(&es256(&second, Some("rotated"), &c)).is_ok());
    // A kid naming a configured key is held to that key.
    assert_eq!(
        v.verify(&es256(&second, Some("one"), &c)),
        Err(JwtError::BadSignature)
    );
}

#[test]
fn ed25519_keys_from_pem() {
    let rng = SystemRandom::new();
    let pkcs8 = ring_sig::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = ring_sig::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let mut spki = hex("302a300506032b6570032100");
    spki.extend_from_slice(pair.public_key().as_ref());
    let v = verifier(VerifyingKey::parse_key_file(&pem("PUBLIC KEY", &spki), "ed.pem").unwrap());
    let token = mint(json!({"alg": "EdDSA"}), &claims("erin"), |m| {
        pair.sign(m).as_ref().to_vec()
    });
    assert_eq!(
        v.verify(&token).unwrap().principal,
        "jwt:https://idp.example.com#erin"
    );
}

#[test]
fn several_pem_keys_in_one_file() {
    let (first, first_pem, _, _) = p256();
    let (second, second_pem, _, _) = p256();
    let both = format!("# rotation\n{first_pem}\n{second_pem}{RSA_PUBLIC}");
    let keys = VerifyingKey::parse_key_file(&both, "keys.pem").unwrap();
    assert_eq!(keys.len(), 3);
    let v = verifier(keys);
    let c = claims("frank");
    assert!(v.verify(&es256(&first, None, &c)).is_ok());
    assert!(v.verify(&es256(&second, None, &c)).is_ok());
    assert!(v.verify(&rsa("RS256", &c)).is_ok());
}

#[test]
fn bad_key_files_are_refused_without_echoing_keys() {
    let (_, ec_pem, x, y) = p256();
    let cases = [
        (RSA_PRIVATE.to_owned(), "private key"),
        (RSA_CERTIFICATE.to_owned(), "certificate"),
        ("just text".to_owned(), "neither PEM"),
        (
            ec_pem.replace("BEGIN PUBLIC KEY", "BEGIN PUBLIC KEYS"),
            "no END",
        ),
        ("{not json".to_owned(), "not valid JSON"),
        (json!({"keys": "x"}).to_string(), "array"),
        (
            json!({"keys": [{"kty": "EC", "crv": "P-256", "x": x, "y": y, "use": "enc"}]})
                .to_string(),
            "no usable",
        ),
        (
            json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "alg": "RS256"}).to_string(),
            "no usable",
        ),
        (
            json!({"kty": "oct", "k": b64(b"short")}).to_string(),
            "no usable",
        ),
        (
            json!({"kty": "RSA", "n": b64(&[0xc5; 128]), "e": "AQAB"}).to_string(),
            "no usable",
        ),
    ];
    for (text, expected) in cases {
        let error = format!(
            "{:#}",
            VerifyingKey::parse_key_file(&text, "keys").unwrap_err()
        );
        assert!(error.contains(expected), "{error}");
        assert!(!error.contains("MII"), "{error}");
    }
    assert!(VerifyingKey::hs256_secret(b"too short", "s").is_err());
}

#[test]
fn settings_need_issuer_audience_and_keys() {
    let key = || vec![VerifyingKey::hs256_secret(SECRET, "s").unwrap()];
    let issuers = [ISSUER.to_owned()];
    let audiences = [AUDIENCE.to_owned()];
    assert!(JwtVerifier::new(&[], &audiences, key()).is_err());
    assert!(JwtVerifier::new(&issuers, &[], key()).is_err());
    assert!(JwtVerifier::new(&issuers, &audiences, Vec::new()).is_err());
    assert!(JwtVerifier::new(&["https://a#b".to_owned()], &audiences, key()).is_err());
    // Several issuers: each keeps its own principals.
    let two = [ISSUER.to_owned(), "https://other.example.com".to_owned()];
    let v = JwtVerifier::new(&two, &audiences, key()).unwrap();
    let other = hs256(
        SECRET,
        &with(claims("alice"), "iss", json!("https://other.example.com")),
    );
    assert_eq!(
        v.verify(&other).unwrap().principal,
        "jwt:https://other.example.com#alice"
    );
}

#[test]
fn secret_files_are_trimmed() {
    let dir = std::env::temp_dir().join(format!("airlock-jwt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("secret");
    std::fs::write(&path, [SECRET, b"\n"].concat()).unwrap();
    let v = JwtVerifier::load(&JwtConfig {
        issuers: vec![ISSUER.to_owned()],
        audiences: vec![AUDIENCE.to_owned()],
        key_files: Vec::new(),
        hs256_secret_file: Some(path),
        caller_limits: CallerLimits::default(),
    })
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(v.verify(&hs256(SECRET, &claims("gina"))).is_ok());
}

#[test]
fn a_tokens_scopes_groups_and_claims_reach_its_caller() {
    let v = hs256_verifier();
    let c = with(
        with(claims("carol"), "scope", json!("mcp:tools deploy:write")),
        "groups",
        json!(["ops"]),
    );
    let caller = v
        .verify(&hs256(SECRET, &with(c, "tenant", json!("acme"))))
        .unwrap();
    assert_eq!(caller.source, crate::access::Source::Jwt);
    assert_eq!(
        caller.scopes.iter().collect::<Vec<_>>(),
        ["deploy:write", "mcp:tools"]
    );
    assert_eq!(caller.groups.iter().collect::<Vec<_>>(), ["ops"]);
    assert_eq!(caller.claims["tenant"], ["acme"]);
}
