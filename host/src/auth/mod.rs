//! Who is calling: the principal of a request.
//!
//! The principal is what a sealed `requestState` is bound to (and what a
//! 2025-era session belongs to), so a state minted for one caller is useless
//! to another. Each source of identity has its own namespace, so no two
//! sources can ever produce the same principal, even between processes that
//! share state keys:
//!
//! | source | principal |
//! |---|---|
//! | a token listed in the tokens file ([`TokenTable`]) | `token:<name>` |
//! | a valid JWT access token ([`JwtVerifier`]) | `jwt:<iss>#<sub>` |
//! | HTTP with authentication off (local development) | [`ANONYMOUS`] |
//! | the stdio transport | [`STDIO`] |
//!
//! Over HTTP the `Authorization: Bearer` token decides: a listed token
//! first, otherwise a JWT when JWT keys are configured; with neither
//! configured every request is [`ANONYMOUS`]. A refused request gets a 401
//! whose `WWW-Authenticate` challenge names the protected-resource metadata
//! ([`ResourceMetadata`], RFC 9728) when it is configured.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;

use crate::access::{Caller, CallerLimits};

pub mod jwt;
pub mod metadata;
mod ring_provider;
mod tokens;

pub use jwt::{JwtConfig, JwtError, JwtVerifier};
pub use metadata::ResourceMetadata;
pub use tokens::TokenTable;

pub use crate::access::{ANONYMOUS, JWT_PRINCIPAL_PREFIX, STDIO, TOKEN_PRINCIPAL_PREFIX};

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

/// HTTP authentication settings (besides the tokens file): JWT access
/// tokens and OAuth protected-resource metadata.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// Accepted JWT issuers (`iss`); empty: the authorization servers.
    pub jwt_issuers: Vec<String>,
    /// Audiences (`aud`) a JWT must name one of; empty: the resource URL.
    pub jwt_audiences: Vec<String>,
    /// Files of JWT verification keys: PEM public keys or JWK sets.
    pub jwt_key_files: Vec<PathBuf>,
    /// A file holding an HS256 shared secret.
    pub jwt_hs256_secret_file: Option<PathBuf>,
    /// This MCP endpoint's URL as clients reach it: serves OAuth
    /// protected-resource metadata (RFC 9728) and names it in 401 challenges.
    pub oauth_resource: Option<String>,
    /// Authorization servers (issuer URLs) named in the metadata.
    pub oauth_authorization_servers: Vec<String>,
    /// Scopes named in the metadata and in 401 challenges.
    pub oauth_scopes: Vec<String>,
    /// How much of a JWT's scopes, groups and claims its caller keeps.
    pub jwt_caller_limits: CallerLimits,
}

impl AuthSettings {
    /// Whether any of these options is set.
    pub fn is_set(&self) -> bool {
        !self.jwt_issuers.is_empty()
            || !self.jwt_audiences.is_empty()
            || !self.jwt_key_files.is_empty()
            || self.jwt_hs256_secret_file.is_some()
            || self.oauth_resource.is_some()
            || !self.oauth_authorization_servers.is_empty()
            || !self.oauth_scopes.is_empty()
    }

    /// The JWT settings, defaults applied: the issuers default to the
    /// authorization servers, the audience to the resource URL.
    pub fn jwt_config(&self) -> JwtConfig {
        let issuers = if self.jwt_issuers.is_empty() {
            self.oauth_authorization_servers.clone()
        } else {
            self.jwt_issuers.clone()
        };
        let audiences = if self.jwt_audiences.is_empty() {
            self.oauth_resource.iter().cloned().collect()
        } else {
            self.jwt_audiences.clone()
        };
        JwtConfig {
            issuers,
            audiences,
            key_files: self.jwt_key_files.clone(),
            hs256_secret_file: self.jwt_hs256_secret_file.clone(),
            caller_limits: self.jwt_caller_limits,
        }
    }
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token was sent.
    NoToken,
    /// A token that is neither listed nor a JWT.
    UnknownToken,
    /// A JWT that failed a check.
    Jwt(JwtError),
}

impl Refusal {
    /// What the client is told.
    pub fn description(self) -> &'static str {
        match self {
            Refusal::NoToken => "send Authorization: Bearer <token>",
            Refusal::UnknownToken => "the token is not known",
            Refusal::Jwt(e) => e.description(),
        }
    }
}

/// Maps `Authorization` headers to principals.
#[derive(Debug)]
pub struct Authenticator {
    tokens: Option<TokenTable>,
    jwt: Option<JwtVerifier>,
    metadata: Option<ResourceMetadata>,
    /// The parameters every challenge carries (`realm`, `resource_metadata`,
    /// `scope`).
    challenge: String,
    /// The caller of every request when authentication is off.
    anonymous: Arc<Caller>,
}

impl Default for Authenticator {
    fn default() -> Self {
        Self::open()
    }
}

impl Authenticator {
    /// No authentication: every request is [`ANONYMOUS`].
    pub fn open() -> Self {
        Self::new(None, None, None)
    }

    /// An authenticator from its parts.
    pub fn new(
        tokens: Option<TokenTable>,
        jwt: Option<JwtVerifier>,
        metadata: Option<ResourceMetadata>,
    ) -> Self {
        let mut challenge = String::from("Bearer realm=\"airlock\"");
        if let Some(metadata) = &metadata {
            challenge.push_str(&format!(", resource_metadata=\"{}\"", metadata.url()));
            if !metadata.scopes().is_empty() {
                challenge.push_str(&format!(", scope=\"{}\"", metadata.scopes().join(" ")));
            }
        }
        Self {
            tokens,
            jwt,
            metadata,
            challenge,
            anonymous: Arc::new(Caller::anonymous()),
        }
    }

    /// Reads the tokens file, the JWT keys and the metadata settings.
    pub fn load(tokens_file: Option<&Path>, options: &AuthSettings) -> anyhow::Result<Self> {
        let tokens = tokens_file.map(TokenTable::load).transpose()?;
        let metadata = match &options.oauth_resource {
            Some(resource) => Some(ResourceMetadata::new(
                resource,
                &options.oauth_authorization_servers,
                &options.oauth_scopes,
            )?),
            None if !options.oauth_authorization_servers.is_empty()
                || !options.oauth_scopes.is_empty() =>
            {
                bail!("--oauth-authorization-server and --oauth-scope need --oauth-resource");
            }
            None => None,
        };
        let config = options.jwt_config();
        let jwt = if config.has_keys() {
            Some(JwtVerifier::load(&config)?)
        } else if !options.jwt_issuers.is_empty() || !options.jwt_audiences.is_empty() {
            bail!(
                "--jwt-issuer and --jwt-audience need a key: --jwt-key-file or --jwt-hs256-secret-file"
            );
        } else {
            None
        };
        if metadata.is_some() && jwt.is_none() && tokens.is_none() {
            bail!(
                "--oauth-resource advertises an authorization server, but no token is checked: \
                 give --jwt-key-file or --jwt-hs256-secret-file"
            );
        }
        if let Some(jwt) = &jwt {
            tracing::info!(
                keys = jwt.key_count(),
                issuers = ?config.issuers,
                audiences = ?config.audiences,
                "JWT access tokens accepted"
            );
        }
        if let Some(metadata) = &metadata {
            tracing::info!(
                url = metadata.url(),
                "serving OAuth protected-resource metadata"
            );
        }
        Ok(Self::new(tokens, jwt, metadata))
    }

    /// Whether requests are served without authentication.
    pub fn is_open(&self) -> bool {
        self.tokens.is_none() && self.jwt.is_none()
    }

    /// The protected-resource metadata, when configured.
    pub fn metadata(&self) -> Option<&ResourceMetadata> {
        self.metadata.as_ref()
    }

    /// The caller of a request with this `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Arc<Caller>, Refusal> {
        if self.is_open() {
            return Ok(self.anonymous.clone());
        }
        let token = bearer_token(authorization).ok_or(Refusal::NoToken)?;
        if let Some(caller) = self.tokens.as_ref().and_then(|t| t.lookup(token)) {
            return Ok(caller.clone());
        }
        match &self.jwt {
            // A JWS compact serialization has exactly three parts.
            Some(jwt) if token.split('.').count() == 3 => {
                jwt.verify(token).map(Arc::new).map_err(Refusal::Jwt)
            }
            _ => Err(Refusal::UnknownToken),
        }
    }

    /// The `WWW-Authenticate` value of a 401 (RFC 6750 §3, RFC 9728 §5.1).
    pub fn challenge(&self, refusal: Refusal) -> String {
        match refusal {
            Refusal::NoToken => self.challenge.clone(),
            other => format!(
                "{}, error=\"invalid_token\", error_description=\"{}\"",
                self.challenge,
                other.description()
            ),
        }
    }

    /// Says at start how HTTP clients are authenticated; loudly when nobody
    /// is, on an address other machines can reach.
    pub fn log_mode(&self, address: SocketAddr) {
        if !self.is_open() {
            return;
        }
        if address.ip().is_loopback() {
            tracing::info!(
                "HTTP authentication is off (no --tokens-file, no --jwt-key-file or --jwt-hs256-secret-file): \
                 every client is principal '{ANONYMOUS}'. Fine for local development on {address} only"
            );
        } else {
            tracing::warn!(
                "HTTP AUTHENTICATION IS OFF on {address}, which is not a loopback address: anyone who can \
                 reach it can call every tool. Use --tokens-file or --jwt-key-file/--jwt-hs256-secret-file, \
                 or listen on 127.0.0.1"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::jwt::tests::{SECRET, claims, hs256, hs256_verifier};
    use super::*;

    fn table() -> TokenTable {
        TokenTable::parse("alice-token-0123456789 alice\n").unwrap()
    }

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer   abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn open_mode_serves_everyone_as_anonymous() {
        let auth = Authenticator::open();
        assert!(auth.is_open());
        assert_eq!(*auth.authenticate(None).unwrap(), Caller::anonymous());
        assert_eq!(
            *auth.authenticate(Some("Bearer x")).unwrap(),
            Caller::anonymous()
        );
    }

    #[test]
    fn file_tokens_come_first_then_jwts() {
        let auth = Authenticator::new(Some(table()), Some(hs256_verifier()), None);
        assert_eq!(
            auth.authenticate(Some("Bearer alice-token-0123456789"))
                .unwrap()
                .principal,
            "token:alice"
        );
        assert_eq!(auth.authenticate(None), Err(Refusal::NoToken));
        assert_eq!(
            auth.authenticate(Some("Bearer not-a-listed-token")),
            Err(Refusal::UnknownToken)
        );
        assert_eq!(
            auth.authenticate(Some("Bearer a.b.c")),
            Err(Refusal::Jwt(JwtError::Malformed))
        );
        let tokens_only = Authenticator::new(Some(table()), None, None);
        assert_eq!(
            tokens_only.authenticate(Some("Bearer a.b.c")),
            Err(Refusal::UnknownToken)
        );
    }

    #[test]
    fn each_source_of_identity_has_its_own_namespace() {
        // A tokens-file name and a JWT subject spelled like the other
        // sources' principals.
        let tokens =
            TokenTable::parse("alice-token-0123456789 alice\nservice-token-0123456789 service\n")
                .unwrap();
        let auth = Authenticator::new(Some(tokens), Some(hs256_verifier()), None);
        let mut principals = vec![ANONYMOUS.to_owned(), STDIO.to_owned()];
        for token in ["alice-token-0123456789", "service-token-0123456789"] {
            principals.push(
                auth.authenticate(Some(&format!("Bearer {token}")))
                    .unwrap()
                    .principal
                    .clone(),
            );
        }
        for sub in ["alice", ANONYMOUS, STDIO, "local", "token:alice"] {
            let token = hs256(SECRET, &claims(sub));
            principals.push(
                auth.authenticate(Some(&format!("Bearer {token}")))
                    .unwrap()
                    .principal
                    .clone(),
            );
        }
        assert_eq!(principals[2], "token:alice");
        assert_eq!(principals[4], "jwt:https://idp.example.com#alice");
        let distinct: std::collections::HashSet<_> = principals.iter().collect();
        assert_eq!(distinct.len(), principals.len(), "{principals:?}");
    }

    #[test]
    fn challenges_name_the_metadata_and_the_error() {
        let metadata = ResourceMetadata::new(
            "https://mcp.example.com/mcp",
            &["https://idp.example.com".to_owned()],
            &["mcp:tools".to_owned(), "mcp:read".to_owned()],
        )
        .unwrap();
        let auth = Authenticator::new(Some(table()), None, Some(metadata));
        assert_eq!(
            auth.challenge(Refusal::NoToken),
            "Bearer realm=\"airlock\", resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools mcp:read\""
        );
        let invalid = auth.challenge(Refusal::Jwt(JwtError::Expired));
        assert!(
            invalid.ends_with(
                ", error=\"invalid_token\", error_description=\"the token has expired\""
            ),
            "{invalid}"
        );
        let plain = Authenticator::new(Some(table()), None, None);
        assert_eq!(
            plain.challenge(Refusal::UnknownToken),
            "Bearer realm=\"airlock\", error=\"invalid_token\", error_description=\"the token is not known\""
        );
    }

    #[test]
    fn options_default_issuer_and_audience_from_the_metadata() {
        let options = AuthSettings {
            oauth_resource: Some("https://mcp.example.com/mcp".to_owned()),
            oauth_authorization_servers: vec!["https://idp.example.com".to_owned()],
            jwt_hs256_secret_file: Some(PathBuf::from("secret")),
            ..AuthSettings::default()
        };
        let config = options.jwt_config();
        assert_eq!(config.issuers, ["https://idp.example.com"]);
        assert_eq!(config.audiences, ["https://mcp.example.com/mcp"]);
        let explicit = AuthSettings {
            jwt_issuers: vec!["https://other".to_owned()],
            jwt_audiences: vec!["airlock".to_owned()],
            ..options
        };
        let config = explicit.jwt_config();
        assert_eq!(config.issuers, ["https://other"]);
        assert_eq!(config.audiences, ["airlock"]);
    }

    #[test]
    fn incomplete_settings_are_refused() {
        let cases = [
            AuthSettings {
                oauth_authorization_servers: vec!["https://idp.example.com".to_owned()],
                ..AuthSettings::default()
            },
            AuthSettings {
                jwt_issuers: vec!["https://idp.example.com".to_owned()],
                ..AuthSettings::default()
            },
            // Metadata but nothing that checks tokens.
            AuthSettings {
                oauth_resource: Some("https://mcp.example.com/mcp".to_owned()),
                oauth_authorization_servers: vec!["https://idp.example.com".to_owned()],
                ..AuthSettings::default()
            },
        ];
        for options in cases {
            assert!(Authenticator::load(None, &options).is_err(), "{options:?}");
        }
        assert!(
            Authenticator::load(None, &AuthSettings::default())
                .unwrap()
                .is_open()
        );
    }
}
