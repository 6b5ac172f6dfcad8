//! What every request passes before a handler sees it, as middleware the
//! router cannot be built without.
//!
//! [`admitted`] is the only way the HTTP transport makes its router: every
//! route of the MCP endpoint it is given, whatever it is, runs behind
//!
//! 1. **Host and Origin** (DNS-rebinding protection): `Host` must name an
//!    allowed host, and an `Origin`, when present, an allowed host or one of
//!    the allowed origins; else 403;
//! 2. **authentication**: the bearer token (tokens file, JWT) or, with
//!    authentication off, the anonymous principal; else 401 with its
//!    challenge. The [`Caller`] goes into the request's extensions, where
//!    handlers find it;
//! 3. **the body**: a request with a body must be `application/json` (415)
//!    and at most the body limit (413, checked on `Content-Length` and
//!    again while it is read).
//!
//! Public routes (the server card, the OAuth metadata document) pass the
//! Host check only: they are read-only documents any web page may read
//! (the card says `Access-Control-Allow-Origin: *`), so a foreign `Origin`
//! is no reason to refuse them; the Host check still stops DNS rebinding.
//!
//! The checks need nothing but the request head, so [`Admitted`] is a plain
//! tower service: a refused request is answered at once, and an admitted
//! one goes on to the route as it is, with no boxed future or service clone
//! per request.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures_util::future::{Either, Ready, ready};
use tower::{Layer, Service};

use crate::auth::{Authenticator, Refusal};
use crate::protocol::jsonrpc::RpcError;

/// Who may reach the endpoint, and with what.
#[derive(Debug)]
pub struct Admission {
    /// Host names accepted in `Host` and `Origin` (any port).
    pub allowed_hosts: Vec<String>,
    /// Extra exact origins accepted in `Origin`.
    pub allowed_origins: Vec<String>,
    /// Who may call.
    pub auth: Authenticator,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
}

/// `mcp` (the endpoint's routes) behind Host and Origin, authentication and
/// the body checks; `public` (routes any client may read) behind the Host
/// check only.
pub fn admitted<S>(admission: Arc<Admission>, mcp: Router<S>, public: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let endpoint = AdmissionLayer {
        admission: admission.clone(),
        scope: Scope::Endpoint,
    };
    let public = public.layer(AdmissionLayer {
        admission,
        scope: Scope::Public,
    });
    // A path that names no route is the endpoint's too: its fallback is
    // layered with the endpoint's checks (the merged router keeps it).
    mcp.fallback(no_route).layer(endpoint).merge(public)
}

/// 404, for a path that names no route.
async fn no_route() -> StatusCode {
    StatusCode::NOT_FOUND
}

/// Which checks a route gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Host and Origin, authentication, the body.
    Endpoint,
    /// Host only.
    Public,
}

/// Puts [`Admitted`] in front of a route.
#[derive(Debug, Clone)]
struct AdmissionLayer {
    admission: Arc<Admission>,
    scope: Scope,
}

impl<S> Layer<S> for AdmissionLayer {
    type Service = Admitted<S>;

    fn layer(&self, inner: S) -> Admitted<S> {
        Admitted {
            inner,
            admission: self.admission.clone(),
            scope: self.scope,
        }
    }
}

/// A route that only admitted requests reach; the others are answered with
/// their refusal (403, 401, 415 or 413).
#[derive(Debug, Clone)]
pub struct Admitted<S> {
    inner: S,
    admission: Arc<Admission>,
    scope: Scope,
}

impl<S> Service<Request> for Admitted<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> <Self as Service<Request>>::Future {
        match self.admission.admit(request, self.scope) {
            Ok(request) => Either::Right(self.inner.call(request)),
            Err(refused) => Either::Left(ready(Ok(self.admission.refusal(refused)))),
        }
    }
}

/// Why a request was not admitted.
#[derive(Debug)]
enum Refused {
    /// `Host` or `Origin` is not allowed (403); the message says which.
    Forbidden(String),
    /// No valid credentials (401, with a challenge).
    Unauthorized(Refusal),
    /// A body that is not JSON (415), of this content type.
    NotJson(String),
    /// A body declared larger than the limit (413).
    TooLarge,
}

impl Admission {
    /// `request`, ready for its route, or why it is refused.
    fn admit(&self, mut request: Request, scope: Scope) -> Result<Request, Refused> {
        self.check_host(request.headers())
            .map_err(Refused::Forbidden)?;
        if scope == Scope::Public {
            return Ok(request);
        }
        self.check_origin(request.headers())
            .map_err(Refused::Forbidden)?;
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok());
        let caller = self
            .auth
            .authenticate(authorization)
            .map_err(Refused::Unauthorized)?;
        request.extensions_mut().insert(caller);
        self.check_body(request)
    }

    /// Refuses a body that is not JSON, or one declared larger than the
    /// limit; otherwise the body is read at most up to the limit.
    fn check_body(&self, request: Request) -> Result<Request, Refused> {
        if request.method() != Method::POST {
            return Ok(request);
        }
        let headers = request.headers();
        if let Some(content_type) = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            && !is_json(content_type)
        {
            return Err(Refused::NotJson(content_type.to_owned()));
        }
        let limit = self.max_body_bytes;
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit as u64) {
            return Err(Refused::TooLarge);
        }
        Ok(request.map(|body| Body::new(http_body_util::Limited::new(body, limit))))
    }

    /// The answer to a request refused for `refused`: 403, 401 with its
    /// challenge, 415 or 413.
    fn refusal(&self, refused: Refused) -> Response {
        match refused {
            Refused::Forbidden(message) => {
                tracing::info!(%message, "request refused");
                super::error_response(
                    StatusCode::FORBIDDEN,
                    None,
                    &RpcError::invalid_request(message),
                )
            }
            Refused::Unauthorized(refusal) => unauthorized(&self.auth, refusal),
            Refused::NotJson(content_type) => super::error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                &RpcError::invalid_request(format!(
                    "Unsupported Content-Type '{content_type}': send application/json"
                )),
            ),
            Refused::TooLarge => super::body_too_large(self.max_body_bytes),
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host_name(host);
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }

    /// DNS-rebinding protection: `Host` must name an allowed host.
    fn check_host(&self, headers: &HeaderMap) -> Result<(), String> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !self.host_allowed(host) {
            return Err(format!(
                "Host '{host}' is not allowed; start airlock with --allowed-host to accept it"
            ));
        }
        Ok(())
    }

    /// Cross-site protection: an `Origin`, when present, must be an allowed
    /// host or an allowed origin.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            let exact = self.allowed_origins.iter().any(|o| o == origin);
            if !exact && !self.host_allowed(authority) {
                return Err(format!(
                    "Origin '{origin}' is not allowed; start airlock with --allowed-origin to accept it"
                ));
            }
        }
        Ok(())
    }
}

/// A 401 with its `WWW-Authenticate` challenge.
fn unauthorized(auth: &Authenticator, refusal: Refusal) -> Response {
    tracing::debug!(reason = refusal.description(), "request not authenticated");
    crate::audit::unauthenticated(refusal.description());
    let mut response = super::error_response(
        StatusCode::UNAUTHORIZED,
        None,
        &RpcError::invalid_request(format!("Unauthorized: {}", refusal.description())),
    );
    let challenge = HeaderValue::from_str(&auth.challenge(refusal))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"airlock\""));
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

/// Whether a `Content-Type` value is JSON (`application/json`, any case,
/// with or without parameters).
fn is_json(content_type: &str) -> bool {
    const JSON: &str = "application/json";
    content_type
        .trim_start()
        .get(..JSON.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(JSON))
}

/// The host part of `host[:port]` (keeps the brackets of an IPv6 literal).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Caller;
    use axum::routing::{get, post};
    use tower::ServiceExt as _;

    /// An endpoint with the tokens file `secret-token-0123456789 alice`.
    fn admission() -> Arc<Admission> {
        let tokens = crate::auth::TokenTable::parse("secret-token-0123456789 alice").unwrap();
        Arc::new(Admission {
            allowed_hosts: vec!["localhost".into()],
            allowed_origins: Vec::new(),
            auth: Authenticator::new(Some(tokens), None, None),
            max_body_bytes: 16,
        })
    }

    /// A router with a route added as a developer would add one, with no
    /// admission of its own: it answers who it thinks is calling.
    fn router() -> Router {
        let whoami = |request: Request| async move {
            match request.extensions().get::<Arc<Caller>>() {
                Some(who) => who.principal.clone(),
                None => "nobody checked".to_owned(),
            }
        };
        let mcp = Router::new()
            .route("/mcp", post(whoami))
            .route("/mcp/added-later", get(whoami).post(whoami));
        let public = Router::new().route("/public", get(|| async { "public" }));
        admitted(admission(), mcp, public)
    }

    async fn send(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut request = axum::http::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = router()
            .oneshot(request.body(Body::from(body.to_owned())).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("[::1]:3000"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
    }

    const HOST: (&str, &str) = ("host", "localhost:8080");
    const TOKEN: (&str, &str) = ("authorization", "Bearer secret-token-0123456789");

    #[tokio::test]
    async fn a_route_added_to_the_endpoint_cannot_be_reached_unauthenticated() {
        for method in ["GET", "POST"] {
            let (status, _) = send(method, "/mcp/added-later", &[HOST], "").await;
            assert_eq!(status, 401, "{method} without a token");
            let (status, body) = send(method, "/mcp/added-later", &[HOST, TOKEN], "").await;
            assert_eq!((status, body.as_str()), (200, "token:alice"), "{method}");
        }
        let (status, _) = send(
            "GET",
            "/mcp/added-later",
            &[("host", "evil.com"), TOKEN],
            "",
        )
        .await;
        assert_eq!(
            status, 403,
            "a foreign Host is refused before anything else"
        );
    }

    #[tokio::test]
    async fn public_routes_pass_only_the_host_check() {
        assert_eq!(send("GET", "/public", &[HOST], "").await.0, 200);
        assert_eq!(
            send("GET", "/public", &[("host", "evil.com")], "").await.0,
            403
        );
        let origin = ("origin", "https://evil.com");
        assert_eq!(send("GET", "/public", &[HOST, origin], "").await.0, 200);
    }

    #[tokio::test]
    async fn a_path_that_names_no_route_is_checked_like_the_endpoint() {
        let (status, _) = send("GET", "/nowhere", &[("host", "evil.com")], "").await;
        assert_eq!(status, 403, "a foreign Host, on any path");
        assert_eq!(send("GET", "/nowhere", &[HOST], "").await.0, 401);
        assert_eq!(send("GET", "/nowhere", &[HOST, TOKEN], "").await.0, 404);
    }

    #[test]
    fn json_is_recognised_in_any_case_and_with_parameters() {
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "  application/json",
        ] {
            assert!(is_json(json), "{json}");
        }
        for other in ["text/plain", "application/jso", "", "applicatiön/json"] {
            assert!(!is_json(other), "{other}");
        }
    }

    #[tokio::test]
    async fn bodies_must_be_json_and_within_the_limit() {
        let json = ("content-type", "application/json");
        assert_eq!(
            send("POST", "/mcp", &[HOST, TOKEN, json], "{}").await.0,
            200
        );
        let text = ("content-type", "text/plain");
        assert_eq!(
            send("POST", "/mcp", &[HOST, TOKEN, text], "{}").await.0,
            415
        );
        let long = "x".repeat(17);
        let declared = ("content-length", "17");
        assert_eq!(
            send("POST", "/mcp", &[HOST, TOKEN, json, declared], &long)
                .await
                .0,
            413
        );
        assert_eq!(
            send("POST", "/mcp", &[HOST, json], "{}").await.0,
            401,
            "auth first"
        );
    }
}
