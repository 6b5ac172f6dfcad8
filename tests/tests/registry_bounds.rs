//! Registries that misbehave, played by a small fake registry of the
//! test's own: one that accepts connections and never answers, one that
//! answers a proper manifest and then streams its layer without end, and
//! one that answers 503 (Service Unavailable) a number of times before it
//! serves. Every pull is bounded: by `--pull-timeout` for the first, by the
//! layer's listed size for the second, by `--pull-retries` for the third;
//! each ends with a reason, and the host still serves its other components.
//!
//! Then registries that answer 512 MiB where a small document belongs: a
//! manifest (with its length announced, with none, chunked, and chunked
//! under a `Content-Length` that lies), an error answer, a token answer and
//! a referrers list. Each is refused with a reason as it streams in, and
//! the pull's memory stays far below what it was sent. A registry that
//! asks for a bearer token from its own realm is pulled from.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use airlock_e2e::oci_registry::CosignKey;
use airlock_e2e::oci_registry::sha256;
use airlock_e2e::paths::component;
use airlock_e2e::{Airlock, Run, ToolsDir, run_airlock_watched};

/// How the fake registry misbehaves.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// Answers every manifest request with [`HUGE`] bytes, framed so.
    HugeManifest(Framing),
    /// Answers every manifest request 404 with a body of [`HUGE`] bytes.
    HugeErrorAnswer,
    /// Asks for a bearer token from its realm, which answers [`HUGE`] bytes.
    HugeToken,
    /// Serves the `hash` component; its referrers list is [`HUGE`] bytes.
    HugeReferrers,
    /// Serves the `hash` component only with the bearer token its realm
    /// gives for `repository:tools/hash:pull`.
    TokenAuth,
    /// Reads each request and never answers.
    Stalls,
    /// Answers `/v2/`, a manifest listing a 1000-byte `application/wasm`
    /// layer, and then that layer as zeros without end.
    EndlessLayer,
    /// Answers each manifest and blob request 503 `failures` times, then
    /// serves the `hash` component.
    Unavailable { failures: u32 },
}

/// How an answer of [`HUGE`] bytes says where its body ends.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// `Content-Length: HUGE`.
    Announced,
    /// No length: the body ends when the connection closes.
    UntilClose,
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Chunked, under a `Content-Length` of 1000 that says otherwise.
    ChunkedUnderAFalseLength,
}

/// 512 MiB: what a hostile registry sends where a small document belongs.
const HUGE: u64 = 512 << 20;

/// The most memory a pull refusing [`HUGE`] answers may use: far below
/// them, far above what the process needs.
const PULL_MEMORY_BOUND: u64 = 100 << 20;

/// The token the [`Misbehaviour::TokenAuth`] registry's realm gives.
const TOKEN: &str = "granted-for-tools-hash";

/// A fake registry on a loopback port, until dropped.
struct FakeRegistry {
    host: String,
    stop: Arc<AtomicBool>,
}

impl FakeRegistry {
    fn start(misbehaviour: Misbehaviour) -> FakeRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
        let host = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let refused = Arc::new(Mutex::new(HashMap::new()));
        let realm = format!("http://{host}/token");
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let stop = stopped.clone();
                let refused = refused.clone();
                let realm = realm.clone();
                thread::spawn(move || answer(stream, misbehaviour, &realm, &stop, &refused));
            }
        });
        FakeRegistry { host, stop }
    }

    fn reference(&self) -> String {
        format!("{}/tools/hash:1", self.host)
    }
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the stop.
        let _ = TcpStream::connect(&self.host);
    }
}

/// Serves the requests of one connection as `misbehaviour` says (`realm`:
/// the URL of its token endpoint); `refused` counts the 503 answers by path.
fn answer(
    stream: TcpStream,
    misbehaviour: Misbehaviour,
    realm: &str,
    stop: &AtomicBool,
    refused: &Mutex<HashMap<String, u32>>,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
            headers.push(header.trim_end().to_ascii_lowercase());
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("");
        let challenge = format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"{realm}\",service=\"fake\"\r\nContent-Length: 0\r\n\r\n"
        );
        match misbehaviour {
            Misbehaviour::HugeManifest(framing) => {
                if path.contains("/manifests/") {
                    return stream_huge(writer, "200 OK", framing, stop);
                }
                let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
            }
            Misbehaviour::HugeErrorAnswer => {
                if path.contains("/manifests/") {
                    return stream_huge(writer, "404 Not Found", Framing::Chunked, stop);
                }
                let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
            }
            Misbehaviour::HugeToken => {
                if path.starts_with("/token") {
                    return stream_huge(writer, "200 OK", Framing::UntilClose, stop);
                }
                let _ = writer.write_all(challenge.as_bytes());
            }
            Misbehaviour::HugeReferrers => {
                if path.contains("/referrers/") {
                    return stream_huge(writer, "200 OK", Framing::Chunked, stop);
                }
                if serve_hash(&mut writer, path).is_err() {
                    return;
                }
            }
            Misbehaviour::TokenAuth => {
                let wanted = "scope=repository%3atools%2fhash%3apull";
                let written = if path.starts_with("/token") {
                    let body = if path.to_ascii_lowercase().contains(wanted) {
                        format!(r#"{{"token":"{TOKEN}"}}"#)
                    } else {
                        format!(r#"{{"token":"not-for-{path}"}}"#)
                    };
                    writer.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                } else if headers.contains(&format!("authorization: bearer {TOKEN}")) {
                    serve_hash(&mut writer, path)
                } else {
                    writer.write_all(challenge.as_bytes())
                };
                if written.is_err() {
                    return;
                }
            }
            Misbehaviour::Stalls => {
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(Duration::from_millis(100));
                }
                return;
            }
            Misbehaviour::Unavailable { failures } => {
                let wasm = std::fs::read(component("hash")).expect("read a built component");
                let (manifest, config) = manifest_listing(&sha256(&wasm), wasm.len());
                let mut counts = refused.lock().unwrap();
                let count = counts.entry(path.to_owned()).or_insert(0);
                let body = if !(path.contains("/manifests/") || path.contains("/blobs/")) {
                    Some(b"{}".to_vec())
                } else if *count < failures {
                    *count += 1;
                    None
                } else if path.contains("/manifests/") {
                    Some(manifest.into_bytes())
                } else if path.ends_with(&sha256(&config)[7..]) {
                    Some(config)
                } else {
                    Some(wasm)
                };
                drop(counts);
                let written = match body {
                    Some(body) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        );
                        writer
                            .write_all(head.as_bytes())
                            .and_then(|()| writer.write_all(&body))
                    }
                    None => writer.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
                    ),
                };
                if written.is_err() {
                    return;
                }
            }
            Misbehaviour::EndlessLayer => {
                // The manifest lists 1000 bytes of zeros; the layer never ends.
                let (manifest, config) = manifest_listing(&sha256(&[0u8; 1000]), 1000);
                if path.contains("/manifests/") {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: {}\r\nContent-Length: {}\r\n\r\n",
                        sha256(manifest.as_bytes()),
                        manifest.len()
                    );
                    let _ = writer.write_all(head.as_bytes());
                    let _ = writer.write_all(manifest.as_bytes());
                } else if path.contains("/blobs/") && path.ends_with(&sha256(&config)[7..]) {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                        config.len()
                    );
                    let _ = writer.write_all(head.as_bytes());
                    let _ = writer.write_all(&config);
                } else if path.contains("/blobs/") {
                    // No length, and no end: zeros until the client hangs up.
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n";
                    if writer.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    let zeros = [0u8; 64 * 1024];
                    while !stop.load(Ordering::Relaxed) && writer.write_all(&zeros).is_ok() {}
                    return;
                } else {
                    let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
                }
            }
        }
    }
}

/// Answers `path` with the `hash` component's manifest or blobs (or `{}`).
fn serve_hash(writer: &mut TcpStream, path: &str) -> std::io::Result<()> {
    let wasm = std::fs::read(component("hash")).expect("read a built component");
    let (manifest, config) = manifest_listing(&sha256(&wasm), wasm.len());
    let body = if path.contains("/manifests/") {
        manifest.into_bytes()
    } else if path.contains("/blobs/") && path.ends_with(&sha256(&config)[7..]) {
        config
    } else if path.contains("/blobs/") {
        wasm
    } else {
        b"{}".to_vec()
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(&body)
}

/// Answers `status` with a body of [`HUGE`] zeros framed as `framing`,
/// until it is all sent or the client hangs up.
fn stream_huge(mut writer: TcpStream, status: &str, framing: Framing, stop: &AtomicBool) {
    let length = match framing {
        Framing::Announced => format!("Content-Length: {HUGE}\r\n"),
        Framing::UntilClose => "Connection: close\r\n".to_owned(),
        Framing::Chunked => "Transfer-Encoding: chunked\r\n".to_owned(),
        Framing::ChunkedUnderAFalseLength => {
            "Content-Length: 1000\r\nTransfer-Encoding: chunked\r\n".to_owned()
        }
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}\r\n"
    );
    if writer.write_all(head.as_bytes()).is_err() {
        return;
    }
    let piece = [0u8; 64 * 1024];
    let chunked = matches!(
        framing,
        Framing::Chunked | Framing::ChunkedUnderAFalseLength
    );
    let mut sent = 0;
    while sent < HUGE && !stop.load(Ordering::Relaxed) {
        let written = if chunked {
            writer
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .and_then(|()| writer.write_all(&piece))
                .and_then(|()| writer.write_all(b"\r\n"))
        } else {
            writer.write_all(&piece)
        };
        if written.is_err() {
            return;
        }
        sent += piece.len() as u64;
    }
    if chunked {
        let _ = writer.write_all(b"0\r\n\r\n");
    }
}

/// A manifest (Wasm OCI artifact layout) whose one layer is listed with
/// `digest` and `size`, and its config blob.
fn manifest_listing(digest: &str, size: usize) -> (String, Vec<u8>) {
    let config = b"{}".to_vec();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": sha256(&config),
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/wasm",
            "digest": digest,
            "size": size,
        }],
    })
    .to_string();
    (manifest, config)
}

/// Runs `airlock pull` of one component, `hash`, named by `reference`;
/// returns whether it succeeded and its stderr.
fn pull(reference: &str, extra: &[&str]) -> (bool, String) {
    let run = pull_watched(reference, extra);
    (run.status.success(), run.stderr)
}

/// [`pull`], telling also the most memory it used.
fn pull_watched(reference: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let components = dir.path().join("components.toml");
    std::fs::write(
        &components,
        format!("[hash]\nreference = \"{reference}\"\n"),
    )
    .unwrap();
    let mut args = vec![
        "pull".to_owned(),
        "--components".to_owned(),
        components.display().to_string(),
        "--pull-cache-dir".to_owned(),
        dir.path().join("pulled").display().to_string(),
        "--lock".to_owned(),
        dir.path().join("airlock.lock").display().to_string(),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The retries are logged at debug.
    let log = [("AIRLOCK_LOG", Path::new("airlock=debug"))];
    run_airlock_watched(&args, &log, Duration::from_secs(120))
}

#[test]
fn a_registry_that_never_answers_is_given_up_on_after_the_pull_timeout() {
    let registry = FakeRegistry::start(Misbehaviour::Stalls);
    let (pulled, stderr) = pull(&registry.reference(), &["--pull-timeout", "1s"]);
    assert!(!pulled, "nothing was pulled:\n{stderr}");
    assert!(
        stderr.contains("not locked, nothing written") && stderr.contains(&registry.reference()),
        "the failure names the reference:\n{stderr}"
    );
}

#[test]
fn a_layer_that_streams_without_end_is_cut_at_its_listed_size() {
    let registry = FakeRegistry::start(Misbehaviour::EndlessLayer);
    let (pulled, stderr) = pull(&registry.reference(), &[]);
    assert!(!pulled, "nothing was pulled:\n{stderr}");
    assert!(
        stderr.contains("sent more than the 1000B its manifest lists"),
        "the failure says the layer was longer than listed:\n{stderr}"
    );

    // Serving: the pulled component is skipped with that reason, and the
    // tools directory's component still serves.
    serve_skipping(&registry, "sent more than");
}

#[test]
fn a_registry_unavailable_twice_is_tried_again_and_its_component_pulled() {
    let registry = FakeRegistry::start(Misbehaviour::Unavailable { failures: 2 });
    let (pulled, stderr) = pull(&registry.reference(), &[]);
    assert!(pulled, "pulled on the third try:\n{stderr}");
    let retries = stderr
        .lines()
        .filter(|line| line.contains("trying again") && line.contains("503"))
        .count();
    assert_eq!(
        retries, 4,
        "one line per retry, twice for the manifest and twice for the layer:\n{stderr}"
    );
}

#[test]
fn a_registry_always_unavailable_is_given_up_on_after_the_retries() {
    let registry = FakeRegistry::start(Misbehaviour::Unavailable { failures: u32::MAX });
    let (pulled, stderr) = pull(&registry.reference(), &["--pull-retries", "1"]);
    assert!(!pulled, "nothing was pulled:\n{stderr}");
    assert!(
        stderr.contains("not locked, nothing written")
            && stderr.contains("its manifest could not be pulled (after 2 tries)")
            && stderr.contains("503"),
        "the failure says how many tries it had:\n{stderr}"
    );

    // Serving: the pulled component is skipped after the default retries,
    // and the tools directory's component still serves.
    serve_skipping(&registry, "after 4 tries");
}

/// Serves `hash` from a tools directory and the registry's component by
/// reference, and shows that the pulled component is skipped with one line
/// naming its reference and `reason` while `hash` still serves.
#[track_caller]
fn serve_skipping(registry: &FakeRegistry, reason: &str) {
    let dir = tempfile::tempdir().unwrap();
    let components = dir.path().join("components.toml");
    std::fs::write(
        &components,
        format!("[remote]\nreference = \"{}\"\n", registry.reference()),
    )
    .unwrap();
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .arg("--components")
        .arg(&components)
        .arg("--pull-cache-dir")
        .arg(dir.path().join("pulled"))
        .start_http();
    airlock_e2e::flows::sha256(&server.client());
    let stderr = server.stderr();
    assert!(
        stderr
            .lines()
            .any(|line| line.contains("skipping component")
                && line.contains(&registry.reference())
                && line.contains(reason)),
        "one line says why the pulled component is skipped:\n{stderr}"
    );
}

/// Pulls from a registry misbehaving as `misbehaviour` with `extra`
/// options, and shows that the pull is refused with a reason naming
/// `reason`, within [`PULL_MEMORY_BOUND`].
#[track_caller]
fn assert_refused_within_bound(misbehaviour: Misbehaviour, extra: &[&str], reason: &[&str]) {
    let registry = FakeRegistry::start(misbehaviour);
    let run = pull_watched(&registry.reference(), extra);
    assert!(
        run.peak_memory < PULL_MEMORY_BOUND,
        "refusing a 512 MiB answer used {} MiB (at most {} MiB):\n{}",
        run.peak_memory >> 20,
        PULL_MEMORY_BOUND >> 20,
        run.stderr
    );
    assert!(!run.status.success(), "nothing was pulled:\n{}", run.stderr);
    assert!(
        run.stderr
            .lines()
            .any(|line| line.contains("not locked, nothing written")
                && reason.iter().all(|part| line.contains(part))),
        "the refusal says {reason:?}:\n{}",
        run.stderr
    );
}

#[test]
fn a_manifest_of_512_mib_is_refused_as_it_streams_however_it_is_framed() {
    let cut = "larger than 64KiB (cut there)";
    for (framing, reason) in [
        (
            Framing::Announced,
            "is 512MiB, more than 64KiB (refused unread)",
        ),
        (Framing::UntilClose, cut),
        (Framing::Chunked, cut),
        (Framing::ChunkedUnderAFalseLength, cut),
    ] {
        assert_refused_within_bound(
            Misbehaviour::HugeManifest(framing),
            &[],
            &["its manifest could not be pulled", reason],
        );
    }
}

#[test]
fn an_error_answer_of_512_mib_is_read_only_for_its_message() {
    assert_refused_within_bound(
        Misbehaviour::HugeErrorAnswer,
        &[],
        &["its manifest could not be pulled", "404 Not Found"],
    );
}

#[test]
fn a_token_answer_of_512_mib_is_refused_as_it_streams() {
    assert_refused_within_bound(
        Misbehaviour::HugeToken,
        &[],
        &[
            "its manifest could not be pulled",
            "/token",
            "larger than 64KiB",
        ],
    );
}

#[test]
fn a_referrers_list_of_512_mib_is_refused_as_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("cosign.pub");
    std::fs::write(&key, CosignKey::generate().public_pem()).unwrap();
    assert_refused_within_bound(
        Misbehaviour::HugeReferrers,
        &["--cosign-key", key.to_str().unwrap()],
        &["its referrers could not be listed", "larger than 64KiB"],
    );
}

#[test]
fn a_larger_document_limit_is_taken_from_its_option() {
    assert_refused_within_bound(
        Misbehaviour::HugeManifest(Framing::Chunked),
        &["--max-registry-document-size", "1MiB"],
        &["its manifest could not be pulled", "larger than 1MiB"],
    );
}

#[test]
fn a_registry_asking_for_a_bearer_token_from_its_realm_is_pulled_from() {
    let registry = FakeRegistry::start(Misbehaviour::TokenAuth);
    let (pulled, stderr) = pull(&registry.reference(), &[]);
    assert!(pulled, "pulled with the realm's token:\n{stderr}");
}
