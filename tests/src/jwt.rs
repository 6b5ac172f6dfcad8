//! Minting JWT access tokens for the auth tests: HS256 with a shared secret,
//! ES256 with a fresh P-256 key published as a JWK set. Signed with `ring`
//! directly, so the server's verifier is checked against the JWS format.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `header.claims.signature` with the signature `sign` makes over the first
/// two parts.
pub fn mint(header: &Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = sign(message.as_bytes());
    format!("{message}.{}", b64(&signature))
}

/// Claims valid for the next five minutes.
pub fn claims(issuer: &str, audience: &str, subject: &str) -> Value {
    json!({
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        "iat": now(),
        "exp": now() + 300,
    })
}

/// An HS256 token.
pub fn hs256(secret: &[u8], claims: &Value) -> String {
    hs256_with_header(secret, &json!({}), claims)
}

/// An HS256 token whose protected header also carries the members of
/// `extra` (an object), e.g. `crit`.
pub fn hs256_with_header(secret: &[u8], extra: &Value, claims: &Value) -> String {
    let mut header = json!({"alg": "HS256", "typ": "JWT"});
    let members = extra
        .as_object()
        .expect("extra header members are an object");
    header
        .as_object_mut()
        .expect("the header is an object")
        .extend(members.clone());
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    mint(&header, claims, |message| {
        ring::hmac::sign(&key, message).as_ref().to_vec()
    })
}

/// A P-256 signing key with its public JWK.
pub struct EcKey {
    pair: EcdsaKeyPair,
    kid: String,
}

impl EcKey {
    /// A fresh key named `kid`.
    pub fn generate(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("generate a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("read the P-256 key");
        Self {
            pair,
            kid: kid.to_string(),
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({
            "kty": "EC",
            "crv": "P-256",
            "alg": "ES256",
            "use": "sig",
            "kid": self.kid,
            "x": b64(&point[1..33]),
            "y": b64(&point[33..65]),
        })
    }

    /// An ES256 token naming this key's `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": self.kid});
        mint(&header, claims, |message| {
            self.pair
                .sign(&SystemRandom::new(), message)
                .expect("sign")
                .as_ref()
                .to_vec()
        })
    }
}

/// A JWK set of the public keys.
pub fn jwks(keys: &[&EcKey]) -> Value {
    json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() })
}
