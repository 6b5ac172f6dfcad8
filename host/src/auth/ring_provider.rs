//! A `jsonwebtoken` [`CryptoProvider`] backed by `ring`, verification only.
//!
//! `jsonwebtoken` 10+ leaves the cryptography to a pluggable provider; its
//! built-in ones are `aws-lc-rs` (a C library and a second crypto stack) and
//! RustCrypto (a second crypto stack, with the `rsa` crate). Airlock already
//! uses `ring` for sealing `requestState`, so the signatures of access
//! tokens are checked with `ring` too: `jsonwebtoken` parses the token,
//! the keys (PEM, JWK) and validates the claims; `ring` checks the bytes.
//!
//! The server never signs a token, so the signer factory refuses.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature::{self, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::{digest, hmac, signature as ring_sig};

/// Installs the provider as the process default (once; later calls do nothing).
/// Must run before the first `jsonwebtoken::decode`.
pub fn install() {
    if let Err(other) = PROVIDER.install_default()
        && !std::ptr::eq(other, &PROVIDER)
    {
        // Only reachable if some other code in this process installed its
        // own provider first; its verification is then used.
        tracing::warn!("another jsonwebtoken crypto provider was installed first");
    }
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: new_signer,
    verifier_factory: new_verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: unsupported_components,
        rsa_pub_components_from_public_key: unsupported_components,
        ec_pub_components_from_private_key: unsupported_ec_components,
        ed_pub_components_from_private_key: unsupported_ed_components,
        compute_digest,
    },
};

fn provider_error(message: &str) -> Error {
    Error::from(ErrorKind::Provider(message.to_owned()))
}

fn new_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(provider_error(
        "airlock verifies tokens; it does not sign them",
    ))
}

fn unsupported_components(_: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    Err(provider_error("not supported by airlock's ring provider"))
}

fn unsupported_ec_components(_: &[u8], _: Algorithm) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>)> {
    Err(provider_error("not supported by airlock's ring provider"))
}

fn unsupported_ed_components(_: &[u8], _: &EllipticCurve) -> Result<Vec<u8>> {
    Err(provider_error("not supported by airlock's ring provider"))
}

fn compute_digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let algorithm = match hash {
        ThumbprintHash::SHA256 => &digest::SHA256,
        ThumbprintHash::SHA384 => &digest::SHA384,
        ThumbprintHash::SHA512 => &digest::SHA512,
        _ => return Err(provider_error("unsupported thumbprint hash")),
    };
    Ok(digest::digest(algorithm, data).as_ref().to_vec())
}

/// What a verifier checks a signature with.
enum Check {
    Hmac(hmac::Key),
    /// A DER `RSAPublicKey`, an uncompressed EC point or an Ed25519 key.
    Public(&'static dyn ring_sig::VerificationAlgorithm, Vec<u8>),
    /// RSA modulus and exponent (from a JWK).
    RsaComponents(&'static ring_sig::RsaParameters, Vec<u8>, Vec<u8>),
}

struct RingVerifier {
    algorithm: Algorithm,
    check: Check,
}

fn rsa_parameters(algorithm: Algorithm) -> Option<&'static ring_sig::RsaParameters> {
    Some(match algorithm {
        Algorithm::RS256 => &ring_sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &ring_sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &ring_sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &ring_sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &ring_sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &ring_sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

fn new_verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let algorithm = *algorithm;
    // A key is only ever used with the algorithms of its own family: an RSA
    // public key is never taken for an HMAC secret.
    if algorithm.family() != key.family() {
        return Err(Error::from(ErrorKind::InvalidAlgorithm));
    }
    let check = match (key.family(), key.kind()) {
        (AlgorithmFamily::Hmac, DecodingKeyKind::SecretOrDer(secret)) => {
            let hmac_algorithm = match algorithm {
                Algorithm::HS256 => hmac::HMAC_SHA256,
                Algorithm::HS384 => hmac::HMAC_SHA384,
                Algorithm::HS512 => hmac::HMAC_SHA512,
                _ => return Err(Error::from(ErrorKind::InvalidAlgorithm)),
            };
            Check::Hmac(hmac::Key::new(hmac_algorithm, secret))
        }
        (AlgorithmFamily::Rsa, DecodingKeyKind::SecretOrDer(der)) => {
            let parameters =
                rsa_parameters(algorithm).ok_or(Error::from(ErrorKind::InvalidAlgorithm))?;
            Check::Public(parameters, der.clone())
        }
        (AlgorithmFamily::Rsa, DecodingKeyKind::RsaModulusExponent { n, e }) => {
            let parameters =
                rsa_parameters(algorithm).ok_or(Error::from(ErrorKind::InvalidAlgorithm))?;
            Check::RsaComponents(parameters, n.clone(), e.clone())
        }
        (AlgorithmFamily::Ec, DecodingKeyKind::SecretOrDer(point)) => {
            let verification: &'static dyn ring_sig::VerificationAlgorithm = match algorithm {
                Algorithm::ES256 => &ring_sig::ECDSA_P256_SHA256_FIXED,
                Algorithm::ES384 => &ring_sig::ECDSA_P384_SHA384_FIXED,
                _ => return Err(Error::from(ErrorKind::InvalidAlgorithm)),
            };
            Check::Public(verification, point.clone())
        }
        (AlgorithmFamily::Ed, DecodingKeyKind::SecretOrDer(public)) => {
            Check::Public(&ring_sig::ED25519, public.clone())
        }
        _ => return Err(Error::from(ErrorKind::InvalidKeyFormat)),
    };
    Ok(Box::new(RingVerifier { algorithm, check }))
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(
        &self,
        message: &[u8],
        signature: &Vec<u8>,
    ) -> std::result::Result<(), signature::Error> {
        let verified = match &self.check {
            Check::Hmac(key) => hmac::verify(key, message, signature),
            Check::Public(algorithm, public) => {
                ring_sig::UnparsedPublicKey::new(*algorithm, public).verify(message, signature)
            }
            Check::RsaComponents(parameters, n, e) => {
                ring_sig::RsaPublicKeyComponents { n, e }.verify(parameters, message, signature)
            }
        };
        verified.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}
