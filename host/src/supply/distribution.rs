//! Requests to an OCI registry (the distribution API): manifests, blobs,
//! the referrers list, and the bearer tokens a registry asks for.
//!
//! Every body is read with its cap as it streams in: an answer whose
//! `Content-Length` says more than the cap is refused before any of its body
//! is read, and one that sends more is cut at the cap and refused, so
//! neither a registry nor the token server it names can make a pull hold
//! more than the cap in memory. Of an error answer, only the first
//! [`MAX_ERROR_BYTES`] are read, for its message (control characters
//! blanked, so that it cannot forge log lines).
//!
//! A request answered 401 is sent once more with what the registry's
//! challenge (`WWW-Authenticate`) asks for: with `Bearer realm=…`, a token
//! from that realm (asked with the basic credentials, if any, for
//! `repository:<name>:pull`); with `Basic`, the basic credentials. That
//! answer is sent again for the same repository for the life of the client,
//! until the registry refuses it (an expired token). A configured
//! bearer token is sent as it is. On a redirect to another host (a blob
//! store), no credentials follow.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use oci_client::Reference;
use oci_client::secrets::RegistryAuth;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode, Url};

use crate::units::format_size;

/// How much of an error answer's body is read, for its message.
const MAX_ERROR_BYTES: usize = 4 * 1024;

/// The header in which a registry names a manifest's digest.
const DIGEST_HEADER: &str = "docker-content-digest";

/// Why a request to a registry failed.
#[derive(Debug)]
pub(super) enum RequestError {
    /// No answer, or no complete one: the connection was refused, reset or
    /// timed out.
    Transport(reqwest::Error),
    /// The registry answered with an error status.
    Status {
        /// The URL asked.
        url: String,
        /// The status it answered.
        status: StatusCode,
        /// The codes of its OCI error envelope, if it sent one.
        codes: Vec<String>,
        /// What its body says (at most [`MAX_ERROR_BYTES`] of it).
        message: String,
    },
    /// The body is larger than its cap.
    TooLarge {
        /// The URL asked.
        url: String,
        /// The cap.
        cap: u64,
        /// The length the answer announced, if it announced one over the cap.
        announced: Option<u64>,
    },
    /// An answer that cannot be used (a malformed challenge or token).
    Invalid(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Transport(err) => write!(f, "{err}"),
            RequestError::Status {
                url,
                status,
                message,
                ..
            } if message.is_empty() => write!(f, "the registry answered {status} at {url}"),
            RequestError::Status {
                url,
                status,
                message,
                ..
            } => write!(f, "the registry answered {status} at {url}: {message}"),
            RequestError::TooLarge {
                url,
                cap,
                announced: Some(length),
            } => write!(
                f,
                "the answer at {url} is {}, more than {} (refused unread)",
                format_size(*length),
                format_size(*cap)
            ),
            RequestError::TooLarge {
                url,
                cap,
                announced: None,
            } => write!(
                f,
                "the answer at {url} is larger than {} (cut there)",
                format_size(*cap)
            ),
            RequestError::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for RequestError {}

/// What the client needs to reach registries.
pub(super) struct ClientSettings {
    /// Registries (`host[:port]`) reached over plain HTTP.
    pub(super) plain_http: Vec<String>,
    /// What is sent to each registry (`host[:port]`); others are asked anonymously.
    pub(super) auths: HashMap<String, RegistryAuth>,
    /// The connect timeout, and the longest wait for each read.
    pub(super) timeout: Duration,
    /// The cap of a token answer.
    pub(super) max_token_bytes: u64,
}

/// A client of OCI registries.
pub(super) struct RegistryClient {
    http: reqwest::Client,
    settings: ClientSettings,
    /// The `Authorization` a registry's challenge asked for, by registry and
    /// repository.
    granted: Mutex<HashMap<(String, String), HeaderValue>>,
}

impl RegistryClient {
    /// A client with `settings` (loads the system's root certificates).
    pub(super) fn new(settings: ClientSettings) -> Result<RegistryClient, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(settings.timeout)
            .read_timeout(settings.timeout)
            .user_agent(concat!("airlock/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(RegistryClient {
            http,
            settings,
            granted: Mutex::new(HashMap::new()),
        })
    }

    /// The manifest `reference` (by tag or digest), of one of the
    /// `accepted` media types, at most `cap` bytes.
    pub(super) async fn manifest(
        &self,
        reference: &Reference,
        accepted: &str,
        cap: u64,
    ) -> Result<Vec<u8>, RequestError> {
        let url = self.manifest_url(reference);
        let response = self
            .send(Method::GET, reference, &url, Some(accepted))
            .await?;
        read_capped(successful(response).await?, cap).await
    }

    /// The digest of the manifest `reference` as the registry names it
    /// (`HEAD`, its `Docker-Content-Digest`), else the SHA-256 of the
    /// manifest it serves (at most `cap` bytes).
    pub(super) async fn manifest_digest(
        &self,
        reference: &Reference,
        accepted: &str,
        cap: u64,
    ) -> Result<String, RequestError> {
        let url = self.manifest_url(reference);
        let response = self
            .send(Method::HEAD, reference, &url, Some(accepted))
            .await?;
        let response = successful(response).await?;
        let named = response
            .headers()
            .get(DIGEST_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        match named {
            Some(digest) => Ok(digest),
            None => {
                let manifest = self.manifest(reference, accepted, cap).await?;
                Ok(super::digest::sha256_of(&manifest))
            }
        }
    }

    /// The blob `digest` of `reference`'s repository, at most `cap` bytes
    /// (its digest is not checked here).
    pub(super) async fn blob(
        &self,
        reference: &Reference,
        digest: &str,
        cap: u64,
    ) -> Result<Vec<u8>, RequestError> {
        let url = format!(
            "{}/blobs/{digest}",
            self.repository_url(reference.resolve_registry(), reference.repository())
        );
        let response = self.send(Method::GET, reference, &url, None).await?;
        read_capped(successful(response).await?, cap).await
    }

    /// The manifest `reference` like [`RegistryClient::manifest`], or
    /// `None` if the registry has none there (it answers 404).
    pub(super) async fn manifest_if_any(
        &self,
        reference: &Reference,
        accepted: &str,
        cap: u64,
    ) -> Result<Option<Vec<u8>>, RequestError> {
        let url = self.manifest_url(reference);
        self.get_unless_missing(reference, &url, Some(accepted), cap)
            .await
    }

    /// The referrers of the manifest `subject` (a reference by digest) of
    /// `artifact_type`, as an image index of at most `cap` bytes, from the
    /// referrers API; `None` if the registry has none (it answers 404).
    pub(super) async fn referrers(
        &self,
        subject: &Reference,
        artifact_type: &str,
        cap: u64,
    ) -> Result<Option<Vec<u8>>, RequestError> {
        let digest = subject.digest().unwrap_or_default();
        let mut url = Url::parse(&format!(
            "{}/referrers/{digest}",
            self.repository_url(subject.resolve_registry(), subject.repository())
        ))
        .map_err(|err| RequestError::Invalid(format!("cannot make the referrers URL: {err}")))?;
        url.query_pairs_mut()
            .append_pair("artifactType", artifact_type);
        self.get_unless_missing(subject, url.as_str(), None, cap)
            .await
    }

    /// The body at `url` (of `reference`'s repository), at most `cap`
    /// bytes; `None` if the registry answers 404.
    async fn get_unless_missing(
        &self,
        reference: &Reference,
        url: &str,
        accept: Option<&str>,
        cap: u64,
    ) -> Result<Option<Vec<u8>>, RequestError> {
        let response = self.send(Method::GET, reference, url, accept).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        read_capped(successful(response).await?, cap)
            .await
            .map(Some)
    }

    fn scheme(&self, registry: &str) -> &'static str {
        if self
            .settings
            .plain_http
            .iter()
            .any(|plain| plain == registry)
        {
            "http"
        } else {
            "https"
        }
    }

    fn repository_url(&self, registry: &str, repository: &str) -> String {
        format!("{}://{registry}/v2/{repository}", self.scheme(registry))
    }

    fn manifest_url(&self, reference: &Reference) -> String {
        let by = reference.digest().or(reference.tag()).unwrap_or("latest");
        format!(
            "{}/manifests/{by}",
            self.repository_url(reference.resolve_registry(), reference.repository())
        )
    }

    fn auth(&self, registry: &str) -> &RegistryAuth {
        static ANONYMOUS: RegistryAuth = RegistryAuth::Anonymous;
        self.settings.auths.get(registry).unwrap_or(&ANONYMOUS)
    }

    fn granted(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), HeaderValue>> {
        self.granted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `method` to `url` (of `reference`'s repository), with what was
    /// granted before or configured, and once more with what a 401's
    /// challenge asks for, if that is something else.
    async fn send(
        &self,
        method: Method,
        reference: &Reference,
        url: &str,
        accept: Option<&str>,
    ) -> Result<Response, RequestError> {
        let registry = reference.resolve_registry();
        let key = (registry.to_owned(), reference.repository().to_owned());
        let auth = self.auth(registry);
        let sent = match auth {
            RegistryAuth::Bearer(token) => Some(header_value(&format!("Bearer {token}"))?),
            _ => self.granted().get(&key).cloned(),
        };
        let response = self
            .request(method.clone(), url, accept, sent.as_ref())
            .await?;
        if response.status() != StatusCode::UNAUTHORIZED || matches!(auth, RegistryAuth::Bearer(_))
        {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .and_then(Challenge::parse);
        let answer = match challenge {
            Some(Challenge::Bearer { realm, service }) => Some(
                self.token(&realm, service.as_deref(), reference.repository(), auth)
                    .await?,
            ),
            Some(Challenge::Basic) => match auth {
                RegistryAuth::Basic(user, password) => Some(basic(user, password)?),
                _ => None,
            },
            None => None,
        };
        let Some(answer) = answer.filter(|answer| Some(answer) != sent.as_ref()) else {
            return Ok(response);
        };
        drop(response);
        self.granted().insert(key, answer.clone());
        self.request(method, url, accept, Some(&answer)).await
    }

    async fn request(
        &self,
        method: Method,
        url: &str,
        accept: Option<&str>,
        authorization: Option<&HeaderValue>,
    ) -> Result<Response, RequestError> {
        let mut request = self.http.request(method, url);
        if let Some(accept) = accept {
            request = request.header(ACCEPT, accept);
        }
        if let Some(authorization) = authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        request.send().await.map_err(RequestError::Transport)
    }

    /// A bearer token for pulling from `repository`, from `realm` (a URL
    /// the registry named), asked with `auth`'s basic credentials if any.
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        repository: &str,
        auth: &RegistryAuth,
    ) -> Result<HeaderValue, RequestError> {
        let mut url = Url::parse(realm).map_err(|err| {
            RequestError::Invalid(format!(
                "the registry's challenge names a token realm that is not a URL ({realm}): {err}"
            ))
        })?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{repository}:pull"));
        }
        let mut request = self.http.get(url);
        if let RegistryAuth::Basic(user, password) = auth {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(RequestError::Transport)?;
        let answer =
            read_capped(successful(response).await?, self.settings.max_token_bytes).await?;
        #[derive(serde::Deserialize)]
        struct TokenAnswer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: TokenAnswer = serde_json::from_slice(&answer).map_err(|err| {
            RequestError::Invalid(format!("the token answer of {realm} is not JSON: {err}"))
        })?;
        let token = answer
            .token
            .or(answer.access_token)
            .filter(|token| !token.is_empty())
            .ok_or_else(|| {
                RequestError::Invalid(format!("the token answer of {realm} holds no token"))
            })?;
        header_value(&format!("Bearer {token}"))
    }
}

/// What a registry's `WWW-Authenticate` asks for.
#[derive(Debug, PartialEq, Eq)]
enum Challenge {
    /// A bearer token from `realm`, for `service`.
    Bearer {
        realm: String,
        service: Option<String>,
    },
    /// Basic credentials.
    Basic,
}

impl Challenge {
    /// The first bearer or basic challenge of the header `value`.
    fn parse(value: &str) -> Option<Challenge> {
        http_auth::parser::ChallengeParser::new(value)
            .filter_map(Result::ok)
            .find_map(|challenge| {
                let param = |name: &str| {
                    challenge
                        .params
                        .iter()
                        .find(|(key, _)| key.eq_ignore_ascii_case(name))
                        .map(|(_, value)| value.to_unescaped())
                };
                if challenge.scheme.eq_ignore_ascii_case("bearer") {
                    Some(Challenge::Bearer {
                        realm: param("realm")?,
                        service: param("service"),
                    })
                } else if challenge.scheme.eq_ignore_ascii_case("basic") {
                    Some(Challenge::Basic)
                } else {
                    None
                }
            })
    }
}

fn header_value(text: &str) -> Result<HeaderValue, RequestError> {
    HeaderValue::from_str(text).map_err(|_| {
        RequestError::Invalid("a credential holds characters a header cannot".to_owned())
    })
}

fn basic(user: &str, password: &str) -> Result<HeaderValue, RequestError> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    header_value(&format!("Basic {encoded}"))
}

/// `response` if its status is 200, else the error it tells (its body read
/// to at most [`MAX_ERROR_BYTES`]).
async fn successful(response: Response) -> Result<Response, RequestError> {
    let status = response.status();
    if status == StatusCode::OK {
        return Ok(response);
    }
    let url = response.url().to_string();
    let mut body = Vec::new();
    let mut response = response;
    // A failure to read the message leaves it shorter: the status says enough.
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BYTES {
            break;
        }
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<EnvelopeError>,
    }
    #[derive(serde::Deserialize)]
    struct EnvelopeError {
        code: String,
        #[serde(default)]
        message: String,
    }
    let (codes, message) = match serde_json::from_slice::<Envelope>(&body) {
        Ok(envelope) => (
            envelope
                .errors
                .iter()
                .map(|error| error.code.clone())
                .collect(),
            envelope
                .errors
                .iter()
                .map(|error| {
                    format!("{} {}", error.code, error.message)
                        .trim()
                        .to_owned()
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(_) => (Vec::new(), String::from_utf8_lossy(&body).into_owned()),
    };
    let message: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Err(RequestError::Status {
        url,
        status,
        codes,
        message: message.trim().to_owned(),
    })
}

/// The body of `response`, refused without reading it if its
/// `Content-Length` is over `cap`, and cut and refused as soon as more than
/// `cap` bytes arrive.
async fn read_capped(mut response: Response, cap: u64) -> Result<Vec<u8>, RequestError> {
    let too_large = |response: &Response, announced| RequestError::TooLarge {
        url: response.url().to_string(),
        cap,
        announced,
    };
    if let Some(length) = response.content_length().filter(|length| *length > cap) {
        return Err(too_large(&response, Some(length)));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(RequestError::Transport)? {
        if (body.len() + chunk.len()) as u64 > cap {
            return Err(too_large(&response, None));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_and_basic_challenges_are_read() {
        assert_eq!(
            Challenge::parse(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".to_owned(),
                service: Some("registry.example".to_owned()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="registry""#),
            Some(Challenge::Basic)
        );
        assert_eq!(
            Challenge::parse(r#"Negotiate, Basic realm="r""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse(r#"Bearer service="no realm""#), None);
        assert_eq!(Challenge::parse("Negotiate"), None);
    }
}
