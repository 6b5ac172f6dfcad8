//! Outbound HTTP (`wasi:http/outgoing-handler`), checked on every request.
//!
//! Every component is linked with `wasi:http`, so one that uses it loads
//! like any other; each request is then checked against the component's
//! allow-list ([`HttpAllowList`]) before anything leaves the host, and
//! refused with `HTTP-request-denied` when its destination is not listed.
//! Sockets (`wasi:sockets`) stay denied whatever the manifest says.

use std::sync::Arc;

use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

use crate::policy::HttpAllowList;

/// The `wasi:http` hooks of one call.
pub(crate) struct HttpHooks {
    /// Where this component may send requests.
    pub(crate) allow: Arc<HttpAllowList>,
    /// The call, for log lines.
    pub(crate) label: Arc<str>,
}

/// The port a request goes to: the URI's, else the scheme's default.
fn port_of(uri: &http::Uri) -> Option<u16> {
    uri.port_u16().or(match uri.scheme_str() {
        Some("https") | None => Some(443),
        Some("http") => Some(80),
        Some(_) => None,
    })
}

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        let uri = request.uri();
        let allowed = match (uri.host(), port_of(uri)) {
            (Some(host), Some(port)) => self.allow.allows(host, port),
            _ => false,
        };
        if !allowed {
            tracing::warn!(
                target: "airlock::guest",
                tool = &*self.label,
                uri = %uri,
                "outbound HTTP refused: the destination is not in the manifest's [http] allow list"
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        tracing::debug!(target: "airlock::guest", tool = &*self.label, uri = %uri, "outbound HTTP");
        wasmtime_wasi_http::default_hooks().send_request(request, options, fut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_default_by_scheme() {
        let port = |uri: &str| port_of(&uri.parse().unwrap());
        assert_eq!(port("https://example.com/x"), Some(443));
        assert_eq!(port("http://example.com/x"), Some(80));
        assert_eq!(port("http://example.com:8080/x"), Some(8080));
        assert_eq!(port("ftp://example.com/x"), None);
    }
}
