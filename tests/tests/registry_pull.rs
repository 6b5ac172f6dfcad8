//! Components pulled by OCI reference from a real registry (Debian's
//! `docker-registry`, started by each test), pushed in the Wasm OCI
//! artifact layout: served beside the tools directory, or without one, with their digest in
//! the log and in `airlock inspect`, bad artifacts refused each with its
//! reason while the others serve, a lock pinning digests while a tag moves,
//! three hosts started with one lock serving its digest, a registry that
//! requires a login pulled with Docker config or environment credentials,
//! a registry down at start with a warm and with a cold cache, and cosign
//! signatures checked before load (online, and offline from the cache),
//! and Sigstore bundles (keyless, or with a key) attached as OCI referrers
//! through the referrers tag schema (this registry has no referrers API),
//! verified against a test trusted root before load.

use std::path::{Path, PathBuf};

use airlock_e2e::oci_registry::{CosignKey, OciRegistry, WASM_LAYER};
use airlock_e2e::paths::component;
use airlock_e2e::sigstore::{TestSigstore, sign_with_key};
use airlock_e2e::{Airlock, HttpServer, McpClient, ToolsDir, run_airlock};

/// The bytes of the built component `name`.
fn wasm(name: &str) -> Vec<u8> {
    std::fs::read(component(name)).expect("read a built component")
}

/// A components file and a pull cache of a test's own.
struct Supply {
    dir: tempfile::TempDir,
}

impl Supply {
    /// `entries`: (name, reference) of each component.
    fn new(entries: &[(&str, String)]) -> Supply {
        let text: String = entries
            .iter()
            .map(|(name, reference)| format!("[{name}]\nreference = \"{reference}\"\n\n"))
            .collect();
        Supply::with_text(&text)
    }

    /// A components file of `text`.
    fn with_text(text: &str) -> Supply {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("components.toml"), text).unwrap();
        Supply { dir }
    }

    /// Writes `key`'s public key beside the components file; returns its path.
    fn trust(&self, key: &CosignKey) -> PathBuf {
        let path = self.dir.path().join("cosign.pub");
        std::fs::write(&path, key.public_pem()).unwrap();
        path
    }

    /// Writes `sigstore`'s trusted root beside the components file; returns
    /// the options trusting it and the identity `ISSUER SUBJECT`.
    fn trust_keyless(&self, sigstore: &TestSigstore) -> Vec<String> {
        let path = self.dir.path().join("trusted_root.json");
        std::fs::write(&path, sigstore.trusted_root()).unwrap();
        vec![
            "--sigstore-trusted-root".into(),
            path.display().to_string(),
            "--sigstore-identity".into(),
            format!("{ISSUER} {SUBJECT}"),
        ]
    }

    fn components(&self) -> PathBuf {
        self.dir.path().join("components.toml")
    }

    fn lock(&self) -> PathBuf {
        self.dir.path().join("airlock.lock")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("pulled")
    }

    /// `--components` and `--pull-cache-dir` (`cache`).
    fn args(&self, cache: &Path) -> Vec<String> {
        vec![
            "--components".into(),
            self.components().display().to_string(),
            "--pull-cache-dir".into(),
            cache.display().to_string(),
        ]
    }

    /// Serves the locked components from the test's cache, with `options`
    /// besides (the signers it trusts, a tag refresh).
    fn serve_locked<S: AsRef<std::ffi::OsStr>>(&self, options: &[S]) -> HttpServer {
        Airlock::new(&ToolsDir::new())
            .args(self.args(&self.cache()))
            .arg("--lock")
            .arg(self.lock())
            .args(options)
            .start_http()
    }

    /// Runs `airlock pull` into the test's cache; returns its status and stderr.
    fn pull(&self) -> (bool, String) {
        self.pull_with(&[])
    }

    /// Runs `airlock pull` with `extra` arguments too.
    fn pull_with(&self, extra: &[&str]) -> (bool, String) {
        let mut args = vec!["pull".to_owned()];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        args.extend(self.args(&self.cache()));
        args.extend(["--lock".to_owned(), self.lock().display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, _, stderr) = run_airlock(&args);
        (status.success(), stderr)
    }
}

/// The line of `stderr` that mentions every one of `needles`.
fn line_with<'a>(stderr: &'a str, needles: &[&str]) -> Option<&'a str> {
    stderr
        .lines()
        .find(|line| needles.iter().all(|needle| line.contains(needle)))
}

/// Asserts that, for each `(reference, digest, reason)`, one line of
/// `stderr` says the component was skipped and names all three.
/// Waits until `client` lists exactly the tools `names`.
fn wait_until_serving(what: &str, client: &impl McpClient, names: &[&str]) {
    airlock_e2e::wait_until(what, || {
        let served = client.tool_names();
        if served == names {
            Ok(())
        } else {
            Err(format!("{served:?}"))
        }
    });
}

fn assert_each_skipped_with_its_reason(stderr: &str, refused: &[(&str, &str, &str)]) {
    for (reference, digest, reason) in refused {
        assert!(
            line_with(stderr, &["skipping component", reference, digest, reason]).is_some(),
            "one line names {reference}, its digest and `{reason}`:\n{stderr}"
        );
    }
}

/// Asserts that `stderr` says, loudly, that the opted-out component
/// `tools/dev:1` (at `digest`) is served unchecked.
fn assert_opt_out_logged(stderr: &str, digest: &str) {
    assert!(
        line_with(stderr, &["SIGNATURE NOT CHECKED", "tools/dev:1", digest]).is_some(),
        "the opt-out is logged loudly:\n{stderr}"
    );
}

#[test]
fn components_by_tag_and_by_digest_load_and_serve_with_their_digest() {
    let registry = OciRegistry::start();
    let hash = registry.push_component("tools/hash", "1", &wasm("hash"));
    let summarize = registry.push_component("tools/summarize", "1", &wasm("summarize"));
    let by_tag = format!("{}/tools/hash:1", registry.host());
    let by_digest = format!("{}/tools/summarize@{summarize}", registry.host());
    let supply = Supply::new(&[("hash", by_tag.clone()), ("summarize", by_digest.clone())]);
    let tools = ToolsDir::with(&["report"]);
    let server = Airlock::new(&tools)
        .args(supply.args(&supply.cache()))
        .start_http();
    let client = server.client();
    assert_eq!(client.tool_names(), ["build_report", "sha256", "summarize"]);
    airlock_e2e::flows::sha256(&client);
    let stderr = server.stderr();
    for (reference, digest) in [(&by_tag, &hash), (&by_digest, &summarize)] {
        assert!(
            line_with(&stderr, &["component pulled", reference, digest]).is_some(),
            "a log line names {reference} and its digest {digest}:\n{stderr}"
        );
    }
    let hex = hash.strip_prefix("sha256:").unwrap();
    assert!(
        line_with(
            &stderr,
            &["loaded component", &format!("sha256-{hex}"), "sha256"]
        )
        .is_some(),
        "the load line names the digest:\n{stderr}"
    );
    let staged = supply
        .cache()
        .join("served")
        .join(format!("sha256-{hex}"))
        .join("hash.wasm");
    let (status, report, inspect_err) = run_airlock(&["inspect", staged.to_str().unwrap()]);
    assert!(status.success(), "{inspect_err}");
    assert!(
        report.contains(&format!("sha256-{hex}")) && report.contains("sha256"),
        "inspect names the digest:\n{report}"
    );
}

#[test]
fn pulled_components_serve_without_a_tools_directory() {
    let registry = OciRegistry::start();
    registry.push_component("tools/hash", "1", &wasm("hash"));
    let supply = Supply::new(&[("hash", format!("{}/tools/hash:1", registry.host()))]);
    // No --tools, and no `tools` where the server runs.
    let server = Airlock::without_tools()
        .args(supply.args(&supply.cache()))
        .start_http();
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"], "{}", server.stderr());
    airlock_e2e::flows::sha256(&client);
    drop(server);

    // A tools directory that is named must exist, --components or not.
    let missing = supply.dir.path().join("no-such-tools");
    let (status, stderr) = Airlock::with_tools_path(&missing)
        .args(supply.args(&supply.cache()))
        .run_expecting_exit();
    assert!(!status.success(), "{stderr}");
    assert!(
        line_with(
            &stderr,
            &["cannot read the tools directory", "no-such-tools"]
        )
        .is_some(),
        "{stderr}"
    );
    // Without --components, the default `tools` must exist too.
    let (status, stderr) = Airlock::without_tools().run_expecting_exit();
    assert!(!status.success(), "{stderr}");
    assert!(
        line_with(&stderr, &["cannot read the tools directory tools"]).is_some(),
        "{stderr}"
    );
}

#[test]
fn bad_artifacts_are_refused_each_with_its_reason_while_the_others_serve() {
    let registry = OciRegistry::start();
    let host = registry.host();
    registry.push_component("tools/hash", "1", &wasm("hash"));
    let wrong_type = registry.push_layers(
        "tools/wrong-type",
        "1",
        &[("application/octet-stream", &wasm("summarize"))],
    );
    let two_layers = registry.push_layers(
        "tools/two-layers",
        "1",
        &[
            (WASM_LAYER, &wasm("summarize")),
            (WASM_LAYER, &wasm("report")),
        ],
    );
    let report = wasm("report");
    let tampered = registry.push_component("tools/tampered", "1", &report);
    let mut altered = report.clone();
    let last = altered.len() - 1;
    altered[last] ^= 0xff;
    registry.tamper_blob(&airlock_e2e::oci_registry::sha256(&report), &altered);
    // Larger than --max-component-size, which hash is not.
    let mut big = wasm("deploy");
    big.resize(3 << 20, 0);
    let oversized = registry.push_component("tools/oversized", "1", &big);
    let supply = Supply::new(&[
        ("hash", format!("{host}/tools/hash:1")),
        ("wrong_type", format!("{host}/tools/wrong-type:1")),
        ("two_layers", format!("{host}/tools/two-layers:1")),
        ("tampered", format!("{host}/tools/tampered:1")),
        ("oversized", format!("{host}/tools/oversized:1")),
    ]);
    let server = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .args(["--max-component-size", "1MiB"])
        .start_http();
    assert_eq!(server.client().tool_names(), ["sha256"]);
    let stderr = server.stderr();
    assert_each_skipped_with_its_reason(
        &stderr,
        &[
            (
                "tools/wrong-type:1",
                wrong_type.as_str(),
                "media type is `application/octet-stream`",
            ),
            ("tools/two-layers:1", two_layers.as_str(), "has 2 layers"),
            ("tools/tampered:1", tampered.as_str(), "digest"),
            (
                "tools/oversized:1",
                oversized.as_str(),
                "--max-component-size",
            ),
        ],
    );
    assert!(
        line_with(
            &stderr,
            &[
                "skipping component",
                "tools/tampered:1",
                "tampered or corrupted"
            ]
        )
        .is_some(),
        "the tampered blob is called what it is:\n{stderr}"
    );
}

#[test]
fn a_lock_pins_the_digest_while_the_tag_moves() {
    let registry = OciRegistry::start();
    let first = registry.push_component("tools/moving", "stable", &wasm("hash"));
    let supply = Supply::new(&[("moving", format!("{}/tools/moving:stable", registry.host()))]);
    let (pulled, stderr) = supply.pull();
    assert!(pulled, "airlock pull: {stderr}");
    let lock = std::fs::read_to_string(supply.lock()).unwrap();
    assert!(lock.contains(&first), "the lock holds the digest:\n{lock}");

    let moved = registry.push_component("tools/moving", "stable", &wasm("summarize"));
    assert_ne!(moved, first);
    let locked = supply.serve_locked::<&str>(&[]);
    assert_eq!(
        locked.client().tool_names(),
        ["sha256"],
        "the locked digest is served"
    );
    let unlocked = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .start_http();
    assert_eq!(
        unlocked.client().tool_names(),
        ["summarize"],
        "the tag, now moved"
    );
}

#[test]
fn three_hosts_started_with_one_lock_serve_the_locked_digest_after_the_tag_moves() {
    let registry = OciRegistry::start();
    let locked = registry.push_component("tools/moving", "stable", &wasm("hash"));
    let supply = Supply::new(&[("moving", format!("{}/tools/moving:stable", registry.host()))]);
    let (pulled, stderr) = supply.pull();
    assert!(pulled, "airlock pull: {stderr}");
    let moved = registry.push_component("tools/moving", "stable", &wasm("summarize"));
    assert_ne!(moved, locked);

    // Three hosts of a fleet: the same lock, each with a cold cache of its
    // own, so each pulls from the registry.
    let caches: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let hosts: Vec<HttpServer> = caches
        .iter()
        .map(|cache| {
            Airlock::new(&ToolsDir::new())
                .args(supply.args(cache.path()))
                .arg("--lock")
                .arg(supply.lock())
                .start_http()
        })
        .collect();
    for host in &hosts {
        assert_eq!(
            host.client().tool_names(),
            ["sha256"],
            "the locked digest is served, not the tag's new one"
        );
        let stderr = host.stderr();
        assert!(
            line_with(
                &stderr,
                &["component pulled", "tools/moving:stable", &locked]
            )
            .is_some()
                && !stderr.contains(&moved),
            "the host pulled the locked digest:\n{stderr}"
        );
    }
}

#[test]
fn a_registry_that_requires_a_login_is_pulled_with_docker_config_or_environment_credentials() {
    use base64::Engine as _;
    let registry = OciRegistry::start_with_login("fleet", "s3cret");
    let digest = registry.push_component("tools/hash", "1", &wasm("hash"));
    let reference = format!("{}/tools/hash:1", registry.host());
    let supply = Supply::new(&[("hash", reference.clone())]);
    let docker = tempfile::tempdir().unwrap();
    let login = |password: &str| {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("fleet:{password}"));
        let config = format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.host()
        );
        std::fs::write(docker.path().join("config.json"), config).unwrap();
    };
    let pull = |envs: &[(&str, &Path)]| {
        let mut args = vec!["pull".to_owned()];
        args.extend(supply.args(&supply.cache()));
        args.extend(["--lock".to_owned(), supply.lock().display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, _, stderr) =
            airlock_e2e::run_airlock_with_env(&args, envs, std::time::Duration::from_secs(60));
        (status.success(), stderr)
    };

    // The Docker config's entry for this registry.
    login("s3cret");
    let (pulled, stderr) = pull(&[("DOCKER_CONFIG", docker.path())]);
    assert!(pulled, "airlock pull with the Docker config: {stderr}");
    let lock = std::fs::read_to_string(supply.lock()).unwrap();
    assert!(lock.contains(&digest), "{lock}");

    // A wrong password: refused, saying so.
    login("wrong");
    let (pulled, stderr) = pull(&[("DOCKER_CONFIG", docker.path())]);
    assert!(!pulled, "a wrong password pulls nothing:\n{stderr}");
    assert!(
        line_with(&stderr, &[&reference, "401 Unauthorized", "credentials"]).is_some(),
        "the refusal names the reference and says the credentials were refused:\n{stderr}"
    );

    // The environment wins over that Docker config: a host with a cold cache serves.
    let cold = tempfile::tempdir().unwrap();
    let server = Airlock::new(&ToolsDir::new())
        .args(supply.args(cold.path()))
        .env("DOCKER_CONFIG", docker.path())
        .env("AIRLOCK_REGISTRY_BASIC_AUTH", "fleet:s3cret")
        .start_http();
    assert_eq!(server.client().tool_names(), ["sha256"]);
    let stderr = server.stderr();
    assert!(
        line_with(&stderr, &["component pulled", &reference, &digest]).is_some(),
        "{stderr}"
    );

    // A Docker config naming only a credential helper for it: a clear error.
    let helper = format!(
        r#"{{"credHelpers": {{"{}": "ecr-login"}}}}"#,
        registry.host()
    );
    std::fs::write(docker.path().join("config.json"), helper).unwrap();
    let (pulled, stderr) = pull(&[("DOCKER_CONFIG", docker.path())]);
    assert!(!pulled);
    assert!(
        stderr.contains("docker-credential-ecr-login") && stderr.contains(&registry.host()),
        "the error names the helper and the registry:\n{stderr}"
    );
}

#[test]
fn registry_down_at_start_serves_a_warm_cache_and_refuses_a_cold_one() {
    let mut registry = OciRegistry::start();
    let digest = registry.push_component("tools/hash", "1", &wasm("hash"));
    let reference = format!("{}/tools/hash:1", registry.host());
    let supply = Supply::new(&[("hash", reference.clone())]);
    let (pulled, stderr) = supply.pull();
    assert!(pulled, "airlock pull: {stderr}");
    registry.stop();

    let warm = supply.serve_locked::<&str>(&[]);
    airlock_e2e::flows::sha256(&warm.client());
    let stderr = warm.stderr();
    assert!(
        line_with(&stderr, &["taken from the cache", &reference, &digest]).is_some(),
        "the log says the cache served it:\n{stderr}"
    );

    let cold = tempfile::tempdir().unwrap();
    let (status, stderr) = Airlock::new(&ToolsDir::new())
        .args(supply.args(cold.path()))
        .arg("--lock")
        .arg(supply.lock())
        .run_expecting_exit();
    assert!(!status.success());
    assert!(
        line_with(
            &stderr,
            &["hash", "cannot be reached", "cache does not hold it"]
        )
        .is_some(),
        "the refusal names the component and why:\n{stderr}"
    );
}

#[test]
fn signatures_are_checked_before_load_and_each_refusal_says_why() {
    let registry = OciRegistry::start();
    let host = registry.host();
    let key = CosignKey::generate();
    let other = CosignKey::generate();
    let signed = registry.push_component("tools/signed", "1", &wasm("hash"));
    registry.push_signature("tools/signed", &signed, &signed, &key);
    let unsigned = registry.push_component("tools/unsigned", "1", &wasm("summarize"));
    let other_key = registry.push_component("tools/other-key", "1", &wasm("report"));
    registry.push_signature("tools/other-key", &other_key, &other_key, &other);
    let other_digest = registry.push_component("tools/other-digest", "1", &wasm("work_items"));
    registry.push_signature("tools/other-digest", &other_digest, &signed, &key);
    let opted_out = registry.push_component("tools/dev", "1", &wasm("deploy"));
    let supply = Supply::with_text(&format!(
        "[signed]\nreference = \"{host}/tools/signed:1\"\n\
         [unsigned]\nreference = \"{host}/tools/unsigned:1\"\n\
         [other_key]\nreference = \"{host}/tools/other-key:1\"\n\
         [other_digest]\nreference = \"{host}/tools/other-digest:1\"\n\
         [dev]\nreference = \"{host}/tools/dev:1\"\nunsigned = true\n"
    ));
    let public = supply.trust(&key);
    let server = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .arg("--cosign-key")
        .arg(&public)
        .start_http();
    assert_eq!(
        server.client().tool_names(),
        ["confirm", "deploy", "sha256"]
    );
    let stderr = server.stderr();
    assert!(
        line_with(&stderr, &["signature verified", "tools/signed:1", &signed]).is_some(),
        "{stderr}"
    );
    assert_each_skipped_with_its_reason(
        &stderr,
        &[
            ("tools/unsigned:1", unsigned.as_str(), "it is unsigned"),
            (
                "tools/other-key:1",
                other_key.as_str(),
                "not signed by a trusted key",
            ),
            (
                "tools/other-digest:1",
                other_digest.as_str(),
                "another digest",
            ),
        ],
    );
    assert_opt_out_logged(&stderr, &opted_out);
}

#[test]
fn a_locked_signed_component_is_verified_again_from_the_cache_with_the_registry_down() {
    let mut registry = OciRegistry::start();
    let key = CosignKey::generate();
    let digest = registry.push_component("tools/hash", "1", &wasm("hash"));
    registry.push_signature("tools/hash", &digest, &digest, &key);
    let supply = Supply::new(&[("hash", format!("{}/tools/hash:1", registry.host()))]);
    let public = supply.trust(&key);
    let (pulled, stderr) = supply.pull_with(&["--cosign-key", public.to_str().unwrap()]);
    assert!(pulled, "airlock pull: {stderr}");
    registry.stop();
    let server = supply.serve_locked(&[Path::new("--cosign-key"), &public]);
    airlock_e2e::flows::sha256(&server.client());
    let stderr = server.stderr();
    assert!(
        line_with(&stderr, &["signature verified", &digest]).is_some(),
        "verified offline:\n{stderr}"
    );
    // Another key: the cached signature does not verify, so nothing loads.
    let stranger = supply.dir.path().join("stranger.pub");
    std::fs::write(&stranger, CosignKey::generate().public_pem()).unwrap();
    let refused = supply.serve_locked(&[Path::new("--cosign-key"), &stranger]);
    let stderr = refused.stderr();
    assert!(
        line_with(
            &stderr,
            &["skipping component", &digest, "not signed by a trusted key"]
        )
        .is_some(),
        "{stderr}"
    );
}

/// The OIDC issuer and the subject of the identity the keyless tests trust.
const ISSUER: &str = "https://token.actions.example.com";
const SUBJECT: &str = "https://example.com/org/tools/.github/workflows/release.yml@refs/heads/main";

#[test]
fn sigstore_bundles_are_verified_before_load_and_each_refusal_says_why() {
    let registry = OciRegistry::start();
    let host = registry.host();
    let sigstore = TestSigstore::new();
    let key = CosignKey::generate();
    // Pushes `name` to `tools/<repository>:1`; returns its digest and manifest.
    let push = |repository: &str, name: &str| {
        let digest = registry.push_component(&format!("tools/{repository}"), "1", &wasm(name));
        let manifest = registry.manifest(&format!("tools/{repository}"), &digest);
        (digest, manifest)
    };
    let (keyless, manifest) = push("keyless", "hash");
    registry.push_bundle(
        "tools/keyless",
        &keyless,
        &sigstore.sign_keyless(&manifest, ISSUER, SUBJECT),
    );
    let (keyed, manifest) = push("keyed", "summarize");
    registry.push_bundle("tools/keyed", &keyed, &sign_with_key(&manifest, &key));
    let (stranger, manifest) = push("stranger", "report");
    registry.push_bundle(
        "tools/stranger",
        &stranger,
        &sigstore.sign_keyless(&manifest, ISSUER, "mallory@example.com"),
    );
    let (other_ca, manifest) = push("other-ca", "work_items");
    registry.push_bundle(
        "tools/other-ca",
        &other_ca,
        &sigstore
            .other_authority()
            .sign_keyless(&manifest, ISSUER, SUBJECT),
    );
    let (other_digest, _) = push("other-digest", "everything");
    let signed_elsewhere = registry.manifest("tools/keyless", &keyless);
    registry.push_bundle(
        "tools/other-digest",
        &other_digest,
        &sigstore.sign_keyless(&signed_elsewhere, ISSUER, SUBJECT),
    );
    let (missing, _) = push("missing", "numbered");
    let (opted_out, _) = push("dev", "deploy");
    let supply = Supply::with_text(&format!(
        "[keyless]\nreference = \"{host}/tools/keyless:1\"\n\
         [keyed]\nreference = \"{host}/tools/keyed:1\"\n\
         [stranger]\nreference = \"{host}/tools/stranger:1\"\n\
         [other_ca]\nreference = \"{host}/tools/other-ca:1\"\n\
         [other_digest]\nreference = \"{host}/tools/other-digest:1\"\n\
         [missing]\nreference = \"{host}/tools/missing:1\"\n\
         [dev]\nreference = \"{host}/tools/dev:1\"\nunsigned = true\n"
    ));
    let public = supply.trust(&key);
    let server = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .args(supply.trust_keyless(&sigstore))
        .arg("--cosign-key")
        .arg(&public)
        .start_http();
    assert_eq!(
        server.client().tool_names(),
        ["confirm", "deploy", "sha256", "summarize"]
    );
    let stderr = server.stderr();
    for (reference, digest) in [("tools/keyless:1", &keyless), ("tools/keyed:1", &keyed)] {
        assert!(
            line_with(
                &stderr,
                &["signature verified (Sigstore bundle)", reference, digest]
            )
            .is_some(),
            "{reference} is verified by its bundle:\n{stderr}"
        );
    }
    assert_each_skipped_with_its_reason(
        &stderr,
        &[
            (
                "tools/stranger:1",
                stranger.as_str(),
                "mallory@example.com (issuer https://token.actions.example.com) is not a trusted identity",
            ),
            (
                "tools/other-ca:1",
                other_ca.as_str(),
                "does not chain to a trusted Fulcio certificate authority",
            ),
            (
                "tools/other-digest:1",
                other_digest.as_str(),
                &format!("signs another digest ({keyless})"),
            ),
            ("tools/missing:1", missing.as_str(), "it is unsigned"),
        ],
    );
    assert_opt_out_logged(&stderr, &opted_out);
}

#[test]
fn a_locked_keyless_component_is_verified_again_from_the_cache_with_the_registry_down() {
    let mut registry = OciRegistry::start();
    let sigstore = TestSigstore::new();
    let digest = registry.push_component("tools/hash", "1", &wasm("hash"));
    let manifest = registry.manifest("tools/hash", &digest);
    registry.push_bundle(
        "tools/hash",
        &digest,
        &sigstore.sign_keyless(&manifest, ISSUER, SUBJECT),
    );
    let supply = Supply::new(&[("hash", format!("{}/tools/hash:1", registry.host()))]);
    let trusted = supply.trust_keyless(&sigstore);
    let trusted: Vec<&str> = trusted.iter().map(String::as_str).collect();
    let (pulled, stderr) = supply.pull_with(&trusted);
    assert!(pulled, "airlock pull: {stderr}");
    registry.stop();
    let server = supply.serve_locked(&trusted);
    airlock_e2e::flows::sha256(&server.client());
    let stderr = server.stderr();
    assert!(
        line_with(&stderr, &["signature verified (Sigstore bundle)", &digest]).is_some(),
        "verified offline:\n{stderr}"
    );
    // Another trusted root: the cached bundle does not chain to it.
    let stranger = Supply::new(&[]);
    let refused = supply.serve_locked(&stranger.trust_keyless(&sigstore.other_authority()));
    let stderr = refused.stderr();
    assert!(
        line_with(&stderr, &["skipping component", &digest, "does not chain"]).is_some(),
        "{stderr}"
    );
}

#[test]
fn without_a_lock_a_moved_tag_is_reloaded_after_the_tag_refresh() {
    let registry = OciRegistry::start();
    let key = CosignKey::generate();
    let first = registry.push_component("tools/moving", "stable", &wasm("hash"));
    registry.push_signature("tools/moving", &first, &first, &key);
    let reference = format!("{}/tools/moving:stable", registry.host());
    let supply = Supply::new(&[("moving", reference.clone())]);
    let public = supply.trust(&key);
    let server = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .args(["--tag-refresh", "200ms", "--cosign-key"])
        .arg(&public)
        .start_http();
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"]);

    // Moved to an unsigned digest: refused, the old digest keeps serving.
    let unsigned = registry.push_component("tools/moving", "stable", &wasm("report"));
    airlock_e2e::wait_until("the refused digest to be reported", || {
        let stderr = server.stderr();
        line_with(
            &stderr,
            &["refused", "keeps serving", &reference, &first, &unsigned],
        )
        .map(|_| ())
        .ok_or(stderr)
    });
    assert_eq!(client.tool_names(), ["sha256"], "the old digest serves");

    // Signed after the tag moved (push, then sign): served at a later look.
    registry.push_signature("tools/moving", &unsigned, &unsigned, &key);
    wait_until_serving(
        "the digest signed late to be served",
        &client,
        &["build_report"],
    );
    let stderr = server.stderr();
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.contains("is refused") && line.contains(&unsigned))
            .count(),
        1,
        "one warning for the refused digest, however many looks:\n{stderr}"
    );

    // Moved to a signed digest: pulled, checked and reloaded.
    let moved = registry.push_component("tools/moving", "stable", &wasm("summarize"));
    registry.push_signature("tools/moving", &moved, &moved, &key);
    wait_until_serving("the moved tag to be served", &client, &["summarize"]);
    let stderr = server.stderr();
    assert!(
        line_with(&stderr, &["the tag moved", &reference, &unsigned, &moved]).is_some(),
        "one line names the reference, the old and the new digest:\n{stderr}"
    );
}

#[test]
fn with_a_lock_tags_are_not_resolved_again() {
    let registry = OciRegistry::start();
    let first = registry.push_component("tools/moving", "stable", &wasm("hash"));
    let supply = Supply::new(&[("moving", format!("{}/tools/moving:stable", registry.host()))]);
    let (pulled, stderr) = supply.pull();
    assert!(pulled, "airlock pull: {stderr}");
    let locked = supply.serve_locked(&["--tag-refresh", "100ms"]);
    // The same start without the lock: once it serves the moved tag, the
    // locked one has had its chance to move too.
    let unlocked = Airlock::new(&ToolsDir::new())
        .args(supply.args(&supply.cache()))
        .args(["--tag-refresh", "100ms"])
        .start_http();
    let (locked_client, unlocked_client) = (locked.client(), unlocked.client());
    assert_eq!(locked_client.tool_names(), ["sha256"]);
    assert_eq!(unlocked_client.tool_names(), ["sha256"]);
    locked.wait_for_log("--tag-refresh is ignored");

    let moved = registry.push_component("tools/moving", "stable", &wasm("summarize"));
    assert_ne!(moved, first);
    wait_until_serving(
        "the unlocked server to serve the moved tag",
        &unlocked_client,
        &["summarize"],
    );
    unlocked.wait_for_log("the tag moved");
    assert_eq!(
        locked_client.tool_names(),
        ["sha256"],
        "the locked digest serves"
    );
    let stderr = locked.stderr();
    assert!(
        line_with(&stderr, &["the tag moved"]).is_none(),
        "the lock wins:\n{stderr}"
    );
}
