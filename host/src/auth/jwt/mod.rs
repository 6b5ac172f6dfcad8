//! JWT access tokens: signature, issuer, audience and lifetime checked
//! against configured keys.
//!
//! Keys come from files: PEM public keys (RSA, EC P-256/P-384, Ed25519),
//! JWK sets (or single JWKs) as an authorization server publishes them, and
//! an HS256 shared secret. Keys are never fetched over the network and never
//! taken from the token itself (`jwk`, `jku`, `x5u` headers are ignored).
//!
//! A token must carry `iss` (one of the configured issuers), `aud` (naming
//! one of the configured audiences), `sub` and `exp`; `exp` and, when
//! present, `nbf` are checked with [`LEEWAY_SECS`] of clock skew. A token
//! whose header has a `crit` member is refused: Airlock implements no JWS
//! extension, so it may not accept one that must be understood (RFC 7515
//! §4.1.11; an empty or malformed `crit` is invalid too).
//!
//! The principal is `jwt:<iss>#<sub>`, with the issuer the token was
//! validated against. An issuer is always configured and may not contain
//! `#`, so two issuers' subjects never collide, and the `jwt:` namespace
//! keeps them apart from every other source's principals (see
//! [`crate::auth`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::Deserialize;

use super::{JWT_PRINCIPAL_PREFIX, ring_provider};
use crate::access::{Caller, CallerLimits, Source};

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 30;

/// Shortest HMAC secret accepted: 256 bits, the size of the SHA-256 output
/// (RFC 7518 §3.2).
pub const MIN_SECRET_BYTES: usize = 32;

/// Longest `sub` accepted, in bytes.
const MAX_SUBJECT_BYTES: usize = 1024;

const RSA_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// Why a token was refused. The description goes to the client in
/// `WWW-Authenticate` (`error_description`), so it names the failed check
/// and nothing about the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtError {
    /// Not a JWS compact serialization, or undecodable parts.
    Malformed,
    /// No configured key verifies this `alg` (`none` included).
    UnsupportedAlgorithm,
    /// No configured key verifies the signature.
    BadSignature,
    /// `exp` has passed.
    Expired,
    /// `nbf` is in the future.
    NotYetValid,
    /// `iss` is not a configured issuer.
    WrongIssuer,
    /// `aud` names none of the configured audiences.
    WrongAudience,
    /// `exp`, `iss`, `aud` or `sub` is missing.
    MissingClaim,
    /// A claim has the wrong type or an unusable value.
    BadClaims,
    /// The header has a `crit` member: extensions Airlock does not implement.
    CriticalExtension,
}

impl JwtError {
    /// A short description for `error_description`.
    pub fn description(self) -> &'static str {
        match self {
            JwtError::Malformed => "the token is not a well-formed JWT",
            JwtError::UnsupportedAlgorithm => "the token's signing algorithm is not accepted",
            JwtError::BadSignature => "the token's signature does not verify",
            JwtError::Expired => "the token has expired",
            JwtError::NotYetValid => "the token is not valid yet",
            JwtError::WrongIssuer => "the token's issuer is not accepted",
            JwtError::WrongAudience => "the token is not meant for this resource (audience)",
            JwtError::MissingClaim => "the token lacks a required claim (exp, iss, aud, sub)",
            JwtError::BadClaims => "the token's claims are malformed",
            JwtError::CriticalExtension => {
                "the token's header names critical extensions (crit), which are not supported"
            }
        }
    }
}

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.description())
    }
}

/// One verification key with the algorithms it may be used with.
pub struct VerifyingKey {
    /// The JWK `kid`, when the key came from a JWK.
    id: Option<String>,
    /// Where it came from, for logs (never the key material).
    label: String,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("algorithms", &self.algorithms)
            .finish()
    }
}

impl VerifyingKey {
    /// An HS256 shared secret (at least [`MIN_SECRET_BYTES`] bytes).
    pub fn hs256_secret(secret: &[u8], label: &str) -> anyhow::Result<Self> {
        if secret.len() < MIN_SECRET_BYTES {
            bail!(
                "{label}: an HS256 secret must be at least {MIN_SECRET_BYTES} bytes long (make one with `openssl rand -base64 48`)"
            );
        }
        Ok(Self {
            id: None,
            label: label.to_owned(),
            key: DecodingKey::from_secret(secret),
            algorithms: vec![Algorithm::HS256],
        })
    }

    /// The keys of a key file: a JWK set, a single JWK, or PEM public keys.
    pub fn parse_key_file(text: &str, label: &str) -> anyhow::Result<Vec<Self>> {
        let keys = if text.trim_start().starts_with('{') {
            Self::parse_jwks(text, label)?
        } else {
            Self::parse_pem(text, label)?
        };
        if keys.is_empty() {
            bail!("{label}: no usable signature verification key");
        }
        Ok(keys)
    }

    fn parse_jwks(text: &str, label: &str) -> anyhow::Result<Vec<Self>> {
        let document: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{label}: not valid JSON"))?;
        let entries = match document.get("keys") {
            Some(serde_json::Value::Array(keys)) => keys.clone(),
            Some(_) => bail!("{label}: `keys` must be an array of JWKs"),
            None => vec![document],
        };
        let mut keys = Vec::new();
        for (index, entry) in entries.into_iter().enumerate() {
            let where_ = format!("{label} key {}", index + 1);
            let jwk: Jwk = match serde_json::from_value(entry) {
                Ok(jwk) => jwk,
                Err(error) => {
                    tracing::warn!(key = %where_, %error, "JWK skipped: not a key airlock can read");
                    continue;
                }
            };
            match Self::from_jwk(&jwk, &where_) {
                Ok(Some(key)) => keys.push(key),
                Ok(None) => {}
                Err(error) => tracing::warn!(key = %where_, "JWK skipped: {error:#}"),
            }
        }
        Ok(keys)
    }

    /// A key from one JWK; `None` for an encryption key.
    fn from_jwk(jwk: &Jwk, label: &str) -> anyhow::Result<Option<Self>> {
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            return Ok(None);
        }
        let by_type: Vec<Algorithm> = match &jwk.algorithm {
            AlgorithmParameters::RSA(rsa) => {
                let modulus = base64_len(&rsa.n).context("bad `n`")?;
                if modulus < 256 {
                    bail!("RSA keys under 2048 bits are refused");
                }
                RSA_ALGORITHMS.to_vec()
            }
            AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => bail!("unsupported EC curve (P-256 and P-384 are)"),
            },
            AlgorithmParameters::OctetKeyPair(okp) => match okp.curve {
                EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
                _ => bail!("unsupported OKP curve (Ed25519 is)"),
            },
            AlgorithmParameters::OctetKey(oct) => {
                if base64_len(&oct.value).context("bad `k`")? < MIN_SECRET_BYTES {
                    bail!("an HMAC secret must be at least {MIN_SECRET_BYTES} bytes long");
                }
                vec![Algorithm::HS256, Algorithm::HS384, Algorithm::HS512]
            }
            _ => bail!("unsupported key type"),
        };
        let algorithms = match jwk.common.key_algorithm {
            None => by_type,
            Some(named) => {
                let named = Algorithm::try_from(named)
                    .map_err(|_| anyhow::anyhow!("`alg` is not a signature algorithm"))?;
                if !by_type.contains(&named) {
                    bail!("`alg` {named:?} does not fit the key type");
                }
                vec![named]
            }
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Some(Self {
            id: jwk.common.key_id.clone(),
            label: label.to_owned(),
            key,
            algorithms,
        }))
    }

    fn parse_pem(text: &str, label: &str) -> anyhow::Result<Vec<Self>> {
        let mut keys = Vec::new();
        let mut rest = text;
        let mut index = 0;
        while let Some(start) = rest.find("-----BEGIN ") {
            index += 1;
            let block = &rest[start..];
            let kind_end = block[11..]
                .find("-----")
                .with_context(|| format!("{label}: PEM block {index} has a broken BEGIN line"))?;
            let kind = &block[11..11 + kind_end];
            let end_line = format!("-----END {kind}-----");
            let end = block
                .find(&end_line)
                .with_context(|| format!("{label}: PEM block {index} has no END line"))?;
            let pem = &block[..end + end_line.len()];
            rest = &block[end + end_line.len()..];
            let where_ = format!("{label} PEM block {index}");
            let (key, algorithms) = match kind {
                "PUBLIC KEY" => pem_public_key(pem.as_bytes()).with_context(|| {
                    format!("{where_}: not an RSA, EC (P-256, P-384) or Ed25519 public key")
                })?,
                "RSA PUBLIC KEY" => (
                    DecodingKey::from_rsa_pem(pem.as_bytes())
                        .map_err(|e| anyhow::anyhow!("{where_}: {e}"))?,
                    RSA_ALGORITHMS.to_vec(),
                ),
                kind if kind.contains("PRIVATE KEY") => {
                    bail!("{where_} is a private key: give the public key (`openssl pkey -pubout`)")
                }
                "CERTIFICATE" => bail!(
                    "{where_} is a certificate: give its public key (`openssl x509 -pubkey -noout`)"
                ),
                other => bail!("{where_}: unsupported PEM type `{other}`"),
            };
            keys.push(Self {
                id: None,
                label: where_,
                key,
                algorithms,
            });
        }
        if index == 0 {
            bail!("{label}: neither PEM public keys nor a JWK set (JSON)");
        }
        Ok(keys)
    }
}

/// The decoded length of base64url text (padding tolerated).
fn base64_len(text: &str) -> anyhow::Result<usize> {
    use base64::Engine;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    Ok(engine.decode(text.trim())?.len())
}

/// A `PUBLIC KEY` (SubjectPublicKeyInfo) block: RSA, EC or Ed25519.
fn pem_public_key(pem: &[u8]) -> anyhow::Result<(DecodingKey, Vec<Algorithm>)> {
    if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
        return Ok((key, RSA_ALGORITHMS.to_vec()));
    }
    if let Ok(key) = DecodingKey::from_ec_pem(pem) {
        let algorithm = match key.try_get_as_bytes().map(<[u8]>::len) {
            Ok(65) => Algorithm::ES256,
            Ok(97) => Algorithm::ES384,
            _ => bail!("unsupported EC curve"),
        };
        return Ok((key, vec![algorithm]));
    }
    if let Ok(key) = DecodingKey::from_ed_pem(pem)
        && key.try_get_as_bytes().map(<[u8]>::len).ok() == Some(32)
    {
        return Ok((key, vec![Algorithm::EdDSA]));
    }
    bail!("unrecognized public key")
}

/// Where the verification keys come from and what the tokens must say.
#[derive(Debug, Clone, Default)]
pub struct JwtConfig {
    /// Accepted `iss` values.
    pub issuers: Vec<String>,
    /// Accepted `aud` values (a token must name at least one).
    pub audiences: Vec<String>,
    /// PEM or JWK set files.
    pub key_files: Vec<PathBuf>,
    /// A file holding an HS256 shared secret.
    pub hs256_secret_file: Option<PathBuf>,
    /// How much of a token's scopes, groups and claims its caller keeps.
    pub caller_limits: CallerLimits,
}

impl JwtConfig {
    /// Whether any key is configured (JWT authentication is on).
    pub fn has_keys(&self) -> bool {
        !self.key_files.is_empty() || self.hs256_secret_file.is_some()
    }
}

/// Reads an HS256 secret file: its bytes, surrounding whitespace removed.
fn read_secret_file(path: &Path) -> anyhow::Result<VerifyingKey> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read HS256 secret file {}", path.display()))?;
    let secret = bytes.trim_ascii();
    VerifyingKey::hs256_secret(secret, &path.display().to_string())
}

/// The claims of a token. Their presence, `exp`, `nbf` and `aud` are
/// checked by `jsonwebtoken`'s validation; a claim of the wrong type (an
/// array `iss`, a numeric `sub`) fails here. The others are what access
/// rules may read (see [`Caller::with_jwt_claims`]).
#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    sub: Option<String>,
    #[serde(flatten)]
    others: serde_json::Map<String, serde_json::Value>,
}

/// Checks JWT access tokens.
pub struct JwtVerifier {
    keys: Vec<(VerifyingKey, Validation)>,
    caller_limits: CallerLimits,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field(
                "keys",
                &self.keys.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl JwtVerifier {
    /// Reads every configured key file.
    pub fn load(config: &JwtConfig) -> anyhow::Result<Self> {
        let mut keys = Vec::new();
        for path in &config.key_files {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read JWT key file {}", path.display()))?;
            keys.extend(VerifyingKey::parse_key_file(
                &text,
                &path.display().to_string(),
            )?);
        }
        if let Some(path) = &config.hs256_secret_file {
            keys.push(read_secret_file(path)?);
        }
        Ok(Self::new(&config.issuers, &config.audiences, keys)?
            .with_caller_limits(config.caller_limits))
    }

    /// A verifier accepting tokens from `issuers` for `audiences`, signed by
    /// one of `keys`.
    pub fn new(
        issuers: &[String],
        audiences: &[String],
        keys: Vec<VerifyingKey>,
    ) -> anyhow::Result<Self> {
        if issuers.is_empty() {
            bail!("JWT authentication needs the accepted issuer (--jwt-issuer)");
        }
        if let Some(bad) = issuers.iter().find(|i| i.is_empty() || i.contains('#')) {
            bail!("JWT issuer {bad:?} cannot be used: it must be non-empty and contain no '#'");
        }
        if audiences.is_empty() || audiences.iter().any(String::is_empty) {
            bail!(
                "JWT authentication needs the audience tokens must name: --jwt-audience (or --oauth-resource)"
            );
        }
        if keys.is_empty() {
            bail!("JWT authentication needs a key: --jwt-key-file or --jwt-hs256-secret-file");
        }
        ring_provider::install();
        let keys = keys
            .into_iter()
            .map(|key| {
                let mut validation = Validation::new(key.algorithms[0]);
                validation.algorithms = key.algorithms.clone();
                validation.set_issuer(issuers);
                validation.set_audience(audiences);
                validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
                validation.validate_exp = true;
                validation.validate_nbf = true;
                validation.validate_aud = true;
                validation.leeway = LEEWAY_SECS;
                (key, validation)
            })
            .collect();
        Ok(Self {
            keys,
            caller_limits: CallerLimits::default(),
        })
    }

    /// The same verifier, its callers keeping their tokens' scopes, groups
    /// and claims within `limits` (without, the default limits).
    pub fn with_caller_limits(mut self, limits: CallerLimits) -> Self {
        self.caller_limits = limits;
        self
    }

    /// How many keys are configured.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The caller of a valid token: its principal, and the scopes, groups
    /// and claims access rules see (see [`Caller::with_jwt_claims`]).
    pub fn verify(&self, token: &str) -> Result<Caller, JwtError> {
        let header = decode_header(token)?;
        let usable = |(key, _): &&(VerifyingKey, Validation)| key.algorithms.contains(&header.alg);
        // A `kid` that names configured keys narrows the search to them;
        // otherwise every key of the right algorithm is tried.
        let named = header
            .kid
            .as_deref()
            .filter(|kid| self.keys.iter().any(|(k, _)| k.id.as_deref() == Some(kid)));
        let mut candidates = self
            .keys
            .iter()
            .filter(usable)
            .filter(|(key, _)| named.is_none() || key.id.as_deref() == named)
            .peekable();
        if candidates.peek().is_none() {
            return Err(JwtError::UnsupportedAlgorithm);
        }
        for (key, validation) in candidates {
            match jsonwebtoken::decode::<Claims>(token, &key.key, validation) {
                Ok(data) => {
                    tracing::trace!(key = %key.label, "JWT verified");
                    return caller(&data.claims, &self.caller_limits);
                }
                // Another key may have signed it.
                Err(e) if *e.kind() == ErrorKind::InvalidSignature => {}
                Err(e) => return Err(classify(e.kind())),
            }
        }
        Err(JwtError::BadSignature)
    }
}

/// The protected header of a token, refused if it has a `crit` member.
///
/// `jsonwebtoken` reads `crit` but does not act on it, and reads a `null`
/// one as absent; so the header is decoded here as JSON, and any `crit`
/// member (a list of extensions, empty, or malformed) refuses the token.
fn decode_header(token: &str) -> Result<Header, JwtError> {
    use base64::Engine;
    let encoded = token.split('.').next().unwrap_or_default();
    let members: serde_json::Map<String, serde_json::Value> =
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or(JwtError::Malformed)?;
    if members.contains_key("crit") {
        tracing::info!("JWT refused: critical header extensions (crit) are not supported");
        return Err(JwtError::CriticalExtension);
    }
    serde_json::from_value(serde_json::Value::Object(members)).map_err(|_| JwtError::Malformed)
}

fn classify(kind: &ErrorKind) -> JwtError {
    match kind {
        ErrorKind::InvalidSignature => JwtError::BadSignature,
        ErrorKind::ExpiredSignature => JwtError::Expired,
        ErrorKind::ImmatureSignature => JwtError::NotYetValid,
        ErrorKind::InvalidIssuer => JwtError::WrongIssuer,
        ErrorKind::InvalidAudience => JwtError::WrongAudience,
        ErrorKind::MissingRequiredClaim(_) => JwtError::MissingClaim,
        ErrorKind::InvalidClaimFormat(_) | ErrorKind::Json(_) | ErrorKind::InvalidSubject => {
            JwtError::BadClaims
        }
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            JwtError::UnsupportedAlgorithm
        }
        _ => JwtError::Malformed,
    }
}

fn caller(claims: &Claims, limits: &CallerLimits) -> Result<Caller, JwtError> {
    let (Some(iss), Some(sub)) = (&claims.iss, &claims.sub) else {
        return Err(JwtError::MissingClaim);
    };
    if sub.is_empty() || sub.len() > MAX_SUBJECT_BYTES || sub.chars().any(char::is_control) {
        return Err(JwtError::BadClaims);
    }
    let principal = format!("{JWT_PRINCIPAL_PREFIX}{iss}#{sub}");
    Ok(Caller::new(principal, Source::Jwt).with_jwt_claims(&claims.others, limits))
}

#[cfg(test)]
pub(crate) mod tests;
