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
//!    challenge. The principal goes into the request's extensions
//!    ([`Principal`]), where handlers find it;
//! 3. **the body**: a request with a body must be `application/json` (415)
//!    and at most the body limit (413, checked on `Content-Length` and
//!    again while it is read).
//!
//! Public routes (the OAuth metadata document) pass the Host and Origin
//! check only.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;

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

/// The principal a request was admitted as, in its extensions.
#[derive(Debug, Clone)]
pub struct Principal(pub String);

/// `mcp` (the endpoint's routes) behind Host and Origin, authentication and
/// the body checks; `public` (routes any client may read) behind Host and
/// Origin only.
pub fn admitted<S>(admission: Arc<Admission>, mcp: Router<S>, public: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let mcp = mcp
        .layer(middleware::from_fn_with_state(
            admission.clone(),
            check_body,
        ))
        .layer(middleware::from_fn_with_state(
            admission.clone(),
            authenticate,
        ));
    mcp.merge(public)
        .layer(middleware::from_fn_with_state(admission, check_host))
}

/// 403 unless `Host` and `Origin` are allowed.
async fn check_host(
    State(admission): State<Arc<Admission>>,
    request: Request,
    next: Next,
) -> Response {
    match admission.check_host_and_origin(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(message) => {
            tracing::info!(%message, "request refused");
            super::error_response(
                StatusCode::FORBIDDEN,
                None,
                &RpcError::invalid_request(message),
            )
        }
    }
}

/// 401 unless the request authenticates; else its [`Principal`] goes into
/// its extensions.
async fn authenticate(
    State(admission): State<Arc<Admission>>,
    mut request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    match admission.auth.authenticate(authorization) {
        Ok(principal) => {
            request.extensions_mut().insert(Principal(principal));
            next.run(request).await
        }
        Err(refusal) => unauthorized(&admission.auth, refusal),
    }
}

/// 415 for a body that is not JSON, 413 for one declared larger than the
/// limit; otherwise the body is read at most up to the limit.
async fn check_body(
    State(admission): State<Arc<Admission>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let headers = request.headers();
    if let Some(content_type) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        && !content_type
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("application/json")
    {
        return super::error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &RpcError::invalid_request(format!(
                "Unsupported Content-Type '{content_type}': send application/json"
            )),
        );
    }
    let limit = admission.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return super::body_too_large(limit);
    }
    let request = request.map(|body| Body::new(http_body_util::Limited::new(body, limit)));
    next.run(request).await
}

/// A 401 with its `WWW-Authenticate` challenge.
fn unauthorized(auth: &Authenticator, refusal: Refusal) -> Response {
    tracing::debug!(reason = refusal.description(), "request not authenticated");
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

/// The host part of `host[:port]` (keeps the brackets of an IPv6 literal).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

impl Admission {
    fn host_allowed(&self, host: &str) -> bool {
        let host = host_name(host);
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }

    /// DNS-rebinding protection: `Host` must name an allowed host, and an
    /// `Origin`, when present, must be an allowed host or an allowed origin.
    fn check_host_and_origin(&self, headers: &HeaderMap) -> Result<(), String> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !self.host_allowed(host) {
            return Err(format!(
                "Host '{host}' is not allowed; start airlock with --allowed-host to accept it"
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
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
            match request.extensions().get::<Principal>() {
                Some(Principal(who)) => who.clone(),
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
        assert_eq!(send("GET", "/public", &[HOST, origin], "").await.0, 403);
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
