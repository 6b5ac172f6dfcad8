//! The harness: a whole Airlock server built in-process on the sample
//! guests (loaded from the build, compiled once into a cache under the
//! target directory), driven through the endpoint's public seams with
//! in-memory connections: the HTTP router answering `oneshot` requests,
//! the stdio transport over `duplex` pipes.
//!
//! Tests are plain functions: the [`Host`] owns a tokio runtime and its
//! clients block on it, so a test reads like an end-to-end one and the
//! flows of `airlock_e2e` (written against [`McpClient`]) run here too.
//! Every wait is bounded by [`HANG_GUARD`], a guard against a hang, never a
//! timing assertion.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock::access::ServerRules;
use airlock::auth::{Authenticator, TokenTable};
use airlock::endpoint::Endpoint;
use airlock::legacy::{BridgeSettings, Legacy, Sessions};
use airlock::live::{self, LiveOptions};
use airlock::protocol::{AccessSettings, ProtocolSettings, Server};
use airlock::registry::Registry;
use airlock::runtime::{Runtime, RuntimeLimits};
use airlock::sealing::{KeyRing, StateLimits, StateSealer};
use airlock::tasks::{MemoryStore, TaskSettings, Tasks};
use airlock::transport::http::{Admission, CardSettings, ServerCard, router};
use airlock::transport::stdio::serve_streams;
use airlock_e2e::http::request_headers;
use airlock_e2e::legacy::{LEGACY_VERSION, SESSION_HEADER, initialize_params};
use airlock_e2e::mcp::request;
use airlock_e2e::sse::{Events, event_data};
use airlock_e2e::{Exchange, Headers, McpClient, Next, Reply, ToolsDir};
use axum::Router;
use axum::body::Body;
use axum::http::Method;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tower::ServiceExt as _;

/// The bearer token of `alice`, one of the two principals every host knows.
pub const ALICE: &str = "alice-token-0123456789";
/// The bearer token of `bob`.
pub const BOB: &str = "bob-token-0123456789";

/// The protected-resource metadata URL step-up challenges name.
pub const RESOURCE_METADATA: &str =
    "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

/// The longest any one wait may take before the test fails: a guard
/// against a hang, far beyond what anything takes on a busy machine.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// What a host is started with besides its components.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Rounds, pages, lifetimes of the 2026-07-28 wire (`--max-rounds`).
    pub protocol: ProtocolSettings,
    /// The bridge's round limit and answer timeout.
    pub bridge: BridgeSettings,
    /// Most HTTP sessions open at once.
    pub max_sessions: usize,
    /// Largest request body (or stdio line).
    pub max_body_bytes: usize,
    /// Manifests written beside the components: file name and text.
    pub manifests: Vec<(&'static str, &'static str)>,
    /// Other files written into the tools directory (skills): path inside
    /// it and text.
    pub files: Vec<(&'static str, &'static str)>,
    /// Lines added to the tokens file (of `alice` and `bob`).
    pub tokens: &'static str,
    /// The server's access policy (`--access-policy`), as TOML.
    pub access_policy: Option<&'static str>,
    /// Serve before the components load, as `airlock serve` does: the host
    /// starts with none loaded, requests that need them wait up to this
    /// long (`--load-wait`), and [`Host::finish_loading`] swaps them in.
    pub load_wait: Option<Duration>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            protocol: ProtocolSettings::default(),
            bridge: BridgeSettings::default(),
            max_sessions: 64,
            max_body_bytes: 4 << 20,
            manifests: Vec::new(),
            files: Vec::new(),
            tokens: "",
            access_policy: None,
            load_wait: None,
        }
    }
}

/// One Airlock server in this process: the endpoint over a server of the
/// given components (with tasks in memory, and the live loop that acts on
/// the changes guests report), the HTTP router in front of it (the tokens
/// of [`ALICE`] and [`BOB`]), and the runtime that runs it all.
pub struct Host {
    runtime: Option<tokio::runtime::Runtime>,
    server: Arc<Server>,
    endpoint: Arc<Endpoint>,
    router: Router,
    max_line_bytes: usize,
    background: Vec<JoinHandle<()>>,
    /// What [`Host::finish_loading`] swaps in, while the host loads.
    loading: Mutex<Option<Loading>>,
    _tools: ToolsDir,
}

/// The components of a host still loading, and how it learns they are
/// loaded.
struct Loading {
    registry: Registry,
    loaded: watch::Sender<bool>,
}

impl Host {
    /// A host serving `components` (crate names of sample or test guests).
    /// Panics, saying how to build it, when a guest is missing.
    pub fn start(components: &[&str]) -> Host {
        Host::start_with(components, Setup::default())
    }

    /// A host serving `components` with `setup`.
    pub fn start_with(components: &[&str], setup: Setup) -> Host {
        show_logs();
        let tools = ToolsDir::with(components);
        for (file, text) in setup.manifests.iter().chain(&setup.files) {
            tools.add_bytes(file, text.as_bytes());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let (server, endpoint, background, loading) = runtime.block_on(serve(tools.path(), &setup));
        let tokens = TokenTable::parse(&format!("{ALICE} alice\n{BOB} bob\n{}", setup.tokens))
            .expect("the tokens parse");
        let admission = Admission {
            allowed_hosts: vec!["localhost".to_owned()],
            allowed_origins: Vec::new(),
            auth: Authenticator::new(Some(tokens), None, None),
            max_body_bytes: setup.max_body_bytes,
        };
        Host {
            router: router(
                endpoint.clone(),
                admission,
                Arc::new(ServerCard::new(CardSettings::default(), server.clone())),
            ),
            server,
            endpoint,
            max_line_bytes: setup.max_body_bytes,
            background,
            loading: Mutex::new(loading),
            runtime: Some(runtime),
            _tools: tools,
        }
    }

    /// Ends the load of a host started with [`Setup::load_wait`]: its
    /// components are served from now on, and the requests waiting for
    /// them go on.
    pub fn finish_loading(&self) {
        let Loading { registry, loaded } = self
            .loading
            .lock()
            .unwrap()
            .take()
            .expect("a host started with load_wait, loading once");
        self.server
            .replace_registry(registry, &[])
            .expect("the components are served");
        loaded.send_replace(true);
    }

    /// The endpoint, to drive directly.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// The 2026-07-28 server behind the endpoint.
    pub fn server(&self) -> &Arc<Server> {
        &self.server
    }

    /// Runs `future` on the host's runtime; fails the test if it takes
    /// longer than [`HANG_GUARD`].
    #[track_caller]
    pub fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        within_guard(&self.handle(), "the test's future", future)
    }

    fn handle(&self) -> Handle {
        self.runtime
            .as_ref()
            .expect("the runtime runs while the host lives")
            .handle()
            .clone()
    }

    /// An HTTP client calling as `alice`.
    pub fn http(&self) -> Http {
        self.http_as(ALICE)
    }

    /// An HTTP client calling with the bearer token `token`.
    pub fn http_as(&self, token: &'static str) -> Http {
        Http {
            router: self.router.clone(),
            handle: self.handle(),
            token,
            next_id: AtomicU64::new(1),
        }
    }

    /// A stdio connection: the stdio transport serving this host on a
    /// pipe of its own. Its end of input shuts the whole host down (as the
    /// process would exit), so a test uses one at a time, and last.
    pub fn stdio(&self) -> Stdio {
        let handle = self.handle();
        let (input, server_input) = tokio::io::duplex(1 << 20);
        let (server_output, output) = tokio::io::duplex(1 << 20);
        let served = handle.spawn(serve_streams(
            self.endpoint.clone(),
            self.max_line_bytes,
            BufReader::new(server_input),
            server_output,
        ));
        let (lines, received) = mpsc::unbounded_channel();
        handle.spawn(async move {
            let mut output = BufReader::new(output).lines();
            while let Ok(Some(line)) = output.next_line().await {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        Stdio {
            handle,
            input: Mutex::new(Some(input)),
            output: Mutex::new(received),
            inbox: Mutex::new(Inbox::default()),
            served: Mutex::new(Some(served)),
            next_id: AtomicU64::new(1),
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for task in &self.background {
            task.abort();
        }
        self.endpoint.shut_down();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Builds the server as `airlock serve` does, on the components in
/// `tools`; returns it, the endpoint in front of it, the tasks running
/// beside it, and with [`Setup::load_wait`] the components it has yet to
/// serve.
async fn serve(
    tools: &Path,
    setup: &Setup,
) -> (
    Arc<Server>,
    Arc<Endpoint>,
    Vec<JoinHandle<()>>,
    Option<Loading>,
) {
    let runtime = Runtime::new(RuntimeLimits {
        // Small pools: tests run side by side, each with its own engine.
        max_concurrent_calls: 16,
        ..RuntimeLimits::default()
    })
    .expect("the runtime starts");
    let cache = compile_cache();
    let registry = {
        // One load at a time: with a cold cache, tests side by side would
        // each compile the same guests; after one, the others read them.
        let _one_at_a_time = LOADING.lock().await;
        Registry::load(&runtime, tools, Some(&cache))
            .await
            .expect("the components load")
    };
    let sealer = StateSealer::new(
        KeyRing::ephemeral(),
        Duration::from_secs(600),
        StateLimits::default(),
    );
    let tasks = Arc::new(Tasks::new(
        Arc::new(MemoryStore::default()),
        TaskSettings::default(),
    ));
    let (served, loading) = match setup.load_wait {
        None => (registry, None),
        Some(_) => {
            let loaded = watch::Sender::new(false);
            (Registry::default(), Some(Loading { registry, loaded }))
        }
    };
    let mut server = Server::new(
        runtime.clone(),
        Arc::new(served),
        sealer,
        setup.protocol.clone(),
    )
    .expect("the server starts");
    if let (Some(wait), Some(loading)) = (setup.load_wait, &loading) {
        server = server.loading(loading.loaded.subscribe(), wait);
    }
    let server = Arc::new(
        server
            .with_tasks(tasks.clone())
            .with_access(AccessSettings {
                rules: setup
                    .access_policy
                    .map_or_else(ServerRules::default, |text| {
                        ServerRules::parse(text, Path::new("access.toml"))
                            .expect("the policy parses")
                    }),
                resource_metadata: Some(RESOURCE_METADATA.to_owned()),
            }),
    );
    let live = LiveOptions {
        tools: tools.into(),
        cache_dir: Some(cache),
        reload_every: None,
        relist_every: Duration::ZERO,
    };
    let background = vec![
        tokio::spawn(tasks.run(server.clone(), server.shutting_down())),
        live::spawn(server.clone(), runtime, live),
    ];
    let legacy = Arc::new(Legacy::new(server.clone(), setup.bridge.clone()));
    let sessions = Sessions::new(setup.max_sessions, Duration::from_secs(3600));
    let endpoint = Arc::new(Endpoint::new(server.clone(), legacy, sessions));
    (server, endpoint, background, loading)
}

/// Held while a host loads its components.
static LOADING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Where compiled guests are kept between runs: Cranelift compiles each
/// guest once, not once per test.
fn compile_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("protocol-tests-compile-cache")
}

/// Sends the host's log to the test's output (shown when a test fails),
/// at `RUST_LOG` or `warn`.
fn show_logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .try_init();
}

/// Runs `future` on `handle`, failing the test if it takes longer than
/// [`HANG_GUARD`].
#[track_caller]
fn within_guard<T>(handle: &Handle, what: &str, future: impl Future<Output = T>) -> T {
    // The timer is made inside the runtime, which it needs.
    handle
        .block_on(async { tokio::time::timeout(HANG_GUARD, future).await })
        .unwrap_or_else(|_| panic!("{what} took longer than {HANG_GUARD:?}"))
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/// A client of the host's HTTP router: each request is one `oneshot` call
/// of the router (what a connection would hand it), with `Host: localhost`
/// and the client's bearer token.
pub struct Http {
    router: Router,
    handle: Handle,
    token: &'static str,
    next_id: AtomicU64,
}

/// A response whose body is read as it comes.
type Response = axum::http::Response<Body>;

impl Http {
    /// A fresh numeric request id.
    pub fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends `method` with `params` under a fresh id and the headers a
    /// well-behaved client sends; returns the id and the whole reply.
    pub fn send(&self, method: &str, params: Value) -> (Value, Reply) {
        self.send_with(method, params, |_| {})
    }

    /// [`Http::send`], with `edit` changing the headers first.
    pub fn send_with(
        &self,
        method: &str,
        params: Value,
        edit: impl FnOnce(&mut Headers),
    ) -> (Value, Reply) {
        let id = self.next_id();
        let mut headers = request_headers(method, &params);
        edit(&mut headers);
        let reply = self.post_json(&headers, &request(id.clone(), method, params));
        (id, reply)
    }

    /// POSTs `body` with `headers`; returns the whole reply.
    #[track_caller]
    pub fn post(&self, headers: &Headers, body: &[u8]) -> Reply {
        let response = self.call(Method::POST, headers, body.to_vec());
        self.read_whole(response)
    }

    /// POSTs the JSON `body` with `headers`; returns the whole reply.
    #[track_caller]
    pub fn post_json(&self, headers: &Headers, body: &Value) -> Reply {
        self.post(headers, body.to_string().as_bytes())
    }

    /// POSTs the JSON `body` with `headers` and reads the reply as it
    /// comes: `Ok` with its events when it is an SSE stream, otherwise
    /// `Err` with the whole reply.
    #[track_caller]
    pub fn open(&self, headers: &Headers, body: &Value) -> Result<Stream, Reply> {
        let response = self.call(Method::POST, headers, body.to_string().into_bytes());
        self.stream_or_reply(response)
    }

    /// A GET with `headers`, read as [`Http::open`] reads a POST.
    #[track_caller]
    pub fn get(&self, headers: &Headers) -> Result<Stream, Reply> {
        let response = self.call(Method::GET, headers, Vec::new());
        self.stream_or_reply(response)
    }

    /// A DELETE with `headers`; returns the whole reply.
    #[track_caller]
    pub fn delete(&self, headers: &Headers) -> Reply {
        let response = self.call(Method::DELETE, headers, Vec::new());
        self.read_whole(response)
    }

    /// Sends one request to the router and waits for the head of its
    /// response.
    #[track_caller]
    fn call(&self, method: Method, headers: &Headers, body: Vec<u8>) -> Response {
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", "localhost");
        if headers.get("authorization").is_none() {
            request = request.header("authorization", format!("Bearer {}", self.token));
        }
        for (name, value) in &headers.0 {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request.body(Body::from(body)).expect("a valid request");
        let router = self.router.clone();
        match within_guard(&self.handle, "a response head", router.oneshot(request)) {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    #[track_caller]
    fn stream_or_reply(&self, response: Response) -> Result<Stream, Reply> {
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            Ok(Stream::read(&self.handle, response))
        } else {
            Err(self.read_whole(response))
        }
    }

    #[track_caller]
    fn read_whole(&self, response: Response) -> Reply {
        let (parts, body) = response.into_parts();
        let body = within_guard(&self.handle, "a whole response body", body.collect())
            .expect("the body reads")
            .to_bytes()
            .to_vec();
        Reply {
            status: parts.status.as_u16(),
            headers: header_pairs(&parts.headers),
            body,
        }
    }

    /// The headers of a 2025-era client's POST outside any session.
    pub fn legacy_headers(&self) -> Headers {
        let mut headers = Headers::default();
        headers.set("Content-Type", "application/json");
        headers.set("Accept", "application/json, text/event-stream");
        headers
    }

    /// POSTs a 2025-era `initialize` with `params` outside any session.
    #[track_caller]
    pub fn initialize(&self, params: Value) -> Reply {
        self.post_json(
            &self.legacy_headers(),
            &request(json!(0), "initialize", params),
        )
    }

    /// Opens a 2025-11-25 session declaring `caps`.
    #[track_caller]
    pub fn open_session(&self, caps: Value) -> Session<'_> {
        self.open_session_version(LEGACY_VERSION, caps)
    }

    /// Opens a session asking for `version` and declaring `caps`; checks
    /// HTTP 200 and that the reply names the session.
    #[track_caller]
    pub fn open_session_version(&self, version: &str, caps: Value) -> Session<'_> {
        let reply = self.initialize(initialize_params(version, caps));
        assert_eq!(reply.status, 200, "initialize: {}", reply.text());
        let body = reply.json();
        let id = reply
            .header(SESSION_HEADER)
            .unwrap_or_else(|| panic!("initialize must name the session: {body}"));
        let mut session = self.session(id);
        session.version = body["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("initialize needs a protocolVersion: {body}"))
            .to_owned();
        session
    }

    /// A handle on the session `id`, open or not.
    pub fn session(&self, id: &str) -> Session<'_> {
        Session {
            http: self,
            id: id.to_owned(),
            version: LEGACY_VERSION.to_owned(),
        }
    }
}

impl McpClient for Http {
    fn exchange(&self, method: &str, params: Value) -> Exchange {
        let (id, reply) = self.send(method, params);
        let response = reply.message();
        assert_eq!(
            response.get("id"),
            Some(&id),
            "the response must echo the request id (status {}): {response}",
            reply.status
        );
        Exchange {
            status: Some(reply.status),
            media_type: reply.media_type(),
            notifications: reply.notifications(),
            response,
        }
    }

    fn transport(&self) -> &'static str {
        "in-process http"
    }
}

/// Response headers as `(lower-case name, value)` pairs.
fn header_pairs(headers: &axum::http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// An SSE response read event by event as the server sends them.
/// Dropping it drops the body, as a client closing its connection does.
pub struct Stream {
    handle: Handle,
    headers: Vec<(String, String)>,
    events: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    reader: JoinHandle<()>,
}

impl Stream {
    fn read(handle: &Handle, response: Response) -> Stream {
        let (parts, mut body) = response.into_parts();
        let (sender, events) = mpsc::unbounded_channel();
        let reader = handle.spawn(async move {
            let mut text = String::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                text.push_str(&String::from_utf8_lossy(&data));
                while let Some(end) = text.find("\n\n") {
                    let block: String = text.drain(..end + 2).collect();
                    // A block without data is a comment (a keep-alive).
                    let Some(payload) = event_data(&block) else {
                        continue;
                    };
                    let event = serde_json::from_str(&payload)
                        .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {payload}"));
                    if sender.send(event).is_err() {
                        return;
                    }
                }
            }
        });
        Stream {
            handle: handle.clone(),
            headers: header_pairs(&parts.headers),
            events,
            seen: Vec::new(),
            reader,
        }
    }

    /// The value of response header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Events for Stream {
    fn next_event(&mut self, timeout: Duration) -> Next {
        let events = &mut self.events;
        match self
            .handle
            .block_on(async { tokio::time::timeout(timeout, events.recv()).await })
        {
            Ok(Some(event)) => {
                self.seen.push(event.clone());
                Next::Event(event)
            }
            Ok(None) => Next::Ended,
            Err(_) => Next::TimedOut,
        }
    }

    fn seen(&self) -> &[Value] {
        &self.seen
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A 2025-era session over the in-process HTTP client (or a handle on an
/// id that names none).
pub struct Session<'h> {
    http: &'h Http,
    id: String,
    version: String,
}

impl Session<'_> {
    /// The `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The negotiated protocol version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The headers of the session's messages.
    pub fn headers(&self) -> Headers {
        let mut headers = self.http.legacy_headers();
        headers.set(SESSION_HEADER, &self.id);
        headers.set("MCP-Protocol-Version", &self.version);
        headers
    }

    /// POSTs `message` in the session; returns the whole reply.
    #[track_caller]
    pub fn post(&self, message: &Value) -> Reply {
        self.http.post_json(&self.headers(), message)
    }

    /// Sends request `method` with `params` as they are (no `_meta`);
    /// returns the id and the whole reply.
    #[track_caller]
    pub fn request(&self, method: &str, params: Value) -> (Value, Reply) {
        let id = self.http.next_id();
        let reply = self.post(&request(id.clone(), method, params));
        (id, reply)
    }

    /// Sends request `method`; checks HTTP 200 (2025 replies are 200 even
    /// for errors) and the echoed id; returns the JSON-RPC response.
    #[track_caller]
    pub fn rpc(&self, method: &str, params: Value) -> Value {
        let (id, reply) = self.request(method, params);
        assert_eq!(reply.status, 200, "{method}: {}", reply.text());
        let message = reply.message();
        assert_eq!(message.get("id"), Some(&id), "{method}: {message}");
        message
    }

    /// The result of request `method`; panics on an error.
    #[track_caller]
    pub fn result(&self, method: &str, params: Value) -> Value {
        let message = self.rpc(method, params);
        message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should succeed: {message}"))
    }

    /// Sends request `method` and reads its reply as an SSE stream (the
    /// server's requests come on it before the response).
    #[track_caller]
    pub fn stream(&self, method: &str, params: Value) -> (Value, Stream) {
        let id = self.http.next_id();
        let message = request(id.clone(), method, params);
        match self.http.open(&self.headers(), &message) {
            Ok(stream) => (id, stream),
            Err(reply) => panic!(
                "{method} should answer with a stream, got {}: {}",
                reply.status,
                reply.text()
            ),
        }
    }

    /// POSTs the client's result for the server's request `id`.
    #[track_caller]
    pub fn respond(&self, id: &Value, result: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// POSTs the client's error for the server's request `id`.
    #[track_caller]
    pub fn respond_error(&self, id: &Value, code: i64, message: &str) -> Reply {
        self.post(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
        }))
    }

    /// POSTs notification `method` with `params`.
    #[track_caller]
    pub fn notify(&self, method: &str, params: Value) -> Reply {
        self.post(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// GET with the session id, accepting SSE: the session's standalone
    /// stream, or the reply that refused it.
    #[track_caller]
    pub fn get(&self) -> Result<Stream, Reply> {
        let mut headers = Headers::default();
        headers.set(SESSION_HEADER, &self.id);
        headers.set("Accept", "text/event-stream");
        self.http.get(&headers)
    }

    /// The session's standalone stream; panics if it is refused.
    #[track_caller]
    pub fn listen(&self) -> Stream {
        self.get().unwrap_or_else(|reply| {
            panic!(
                "the session stream should open, got {}: {}",
                reply.status,
                reply.text()
            )
        })
    }

    /// DELETE with the session id.
    #[track_caller]
    pub fn delete(&self) -> Reply {
        let mut headers = Headers::default();
        headers.set(SESSION_HEADER, &self.id);
        self.http.delete(&headers)
    }
}

// ---------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------

/// A client of the stdio transport: its lines go to the transport's
/// input, and what the transport writes is read line by line.
pub struct Stdio {
    handle: Handle,
    input: Mutex<Option<DuplexStream>>,
    output: Mutex<mpsc::UnboundedReceiver<String>>,
    inbox: Mutex<Inbox>,
    served: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
    next_id: AtomicU64,
}

/// What the transport wrote and no test has taken yet.
#[derive(Default)]
struct Inbox {
    /// Responses, by the JSON text of their id.
    responses: HashMap<String, Value>,
    /// Notifications and the server's requests, in order.
    messages: VecDeque<Value>,
    /// Every line, in order.
    lines: Vec<String>,
    /// The transport closed its output.
    ended: bool,
}

impl Stdio {
    /// A fresh numeric request id.
    pub fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes `text` to the transport's input as it is.
    #[track_caller]
    pub fn write(&self, text: &str) {
        let mut input = self.input.lock().unwrap();
        let input = input.as_mut().expect("the input is still open");
        within_guard(&self.handle, "a write to the input", async {
            input.write_all(text.as_bytes()).await?;
            input.flush().await
        })
        .expect("the transport reads its input");
    }

    /// Writes one message and its newline.
    #[track_caller]
    pub fn send(&self, message: &Value) {
        self.write(&format!("{message}\n"));
    }

    /// Sends request `method` with `params` under a fresh id; returns the id.
    #[track_caller]
    pub fn send_request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.send(&request(id.clone(), method, params));
        id
    }

    /// Closes the input: the transport's end of input.
    pub fn close_input(&self) {
        self.input.lock().unwrap().take();
    }

    /// Takes lines from the output until `deadline`, at most one; false
    /// when none came.
    fn receive(&self, inbox: &mut Inbox, deadline: Instant) -> bool {
        if inbox.ended {
            return false;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let mut output = self.output.lock().unwrap();
        let line = match self
            .handle
            .block_on(async { tokio::time::timeout(wait, output.recv()).await })
        {
            Ok(Some(line)) => line,
            Ok(None) => {
                inbox.ended = true;
                return false;
            }
            Err(_) => return false,
        };
        inbox.lines.push(line.clone());
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the output carried a line that is not JSON ({e}): {line}"));
        let is_response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        if is_response {
            let key = message.get("id").unwrap_or(&Value::Null).to_string();
            inbox.responses.insert(key, message);
        } else {
            inbox.messages.push_back(message);
        }
        true
    }

    /// The response to `id`, waiting at most `timeout`.
    pub fn try_response(&self, id: &Value, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let key = id.to_string();
        let mut inbox = self.inbox.lock().unwrap();
        loop {
            if let Some(found) = inbox.responses.remove(&key) {
                return Some(found);
            }
            if !self.receive(&mut inbox, deadline) && (inbox.ended || Instant::now() >= deadline) {
                return None;
            }
        }
    }

    /// The response to `id`; panics after [`HANG_GUARD`].
    #[track_caller]
    pub fn response(&self, id: &Value) -> Value {
        self.try_response(id, HANG_GUARD).unwrap_or_else(|| {
            panic!(
                "no response to {id} within {HANG_GUARD:?}; output so far: {:?}",
                self.lines()
            )
        })
    }

    /// The next notification or request of the server, waiting at most
    /// [`HANG_GUARD`]; panics, naming `what` was expected, if none comes.
    #[track_caller]
    pub fn next_message(&self, what: &str) -> Value {
        let deadline = Instant::now() + HANG_GUARD;
        let mut inbox = self.inbox.lock().unwrap();
        loop {
            if let Some(message) = inbox.messages.pop_front() {
                return message;
            }
            if !self.receive(&mut inbox, deadline) && (inbox.ended || Instant::now() >= deadline) {
                panic!("expected {what} on the output; got: {:?}", inbox.lines);
            }
        }
    }

    /// Every line of output so far.
    pub fn lines(&self) -> Vec<String> {
        self.inbox.lock().unwrap().lines.clone()
    }

    /// Closes the input, waits for the transport to finish (what is in
    /// flight ends, its replies are written) and reads the output to its
    /// end; returns every line it wrote.
    #[track_caller]
    pub fn finish(&self) -> Vec<String> {
        self.close_input();
        let served = self
            .served
            .lock()
            .unwrap()
            .take()
            .expect("the transport is finished once");
        within_guard(&self.handle, "the transport to finish", served)
            .expect("the transport does not panic")
            .expect("the transport ends cleanly");
        let mut inbox = self.inbox.lock().unwrap();
        let deadline = Instant::now() + HANG_GUARD;
        while !inbox.ended {
            assert!(
                Instant::now() < deadline,
                "the output did not end within {HANG_GUARD:?}"
            );
            self.receive(&mut inbox, deadline);
        }
        inbox.lines.clone()
    }
}

impl McpClient for Stdio {
    fn exchange(&self, method: &str, params: Value) -> Exchange {
        self.inbox.lock().unwrap().messages.clear();
        let id = self.send_request(method, params);
        let response = self.response(&id);
        let notifications = self.inbox.lock().unwrap().messages.drain(..).collect();
        Exchange {
            status: None,
            media_type: None,
            notifications,
            response,
        }
    }

    fn transport(&self) -> &'static str {
        "in-process stdio"
    }
}
