//! An OCI registry of a test's own: Debian's `docker-registry` (the CNCF
//! distribution registry), run in the foreground with its storage in a
//! temporary directory, on a free port of 127.0.0.1 over plain HTTP, and
//! killed when dropped. `scripts/test` installs `docker-registry`.
//!
//! Components are pushed the way `wkg oci push` pushes them: the
//! distribution API's blob upload and manifest put, with the Wasm OCI
//! artifact layout (one `application/wasm` layer and a WIT config blob).

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::daemon::{Daemon, free_port};

/// The media type of a component layer in the Wasm OCI artifact layout.
pub const WASM_LAYER: &str = "application/wasm";
/// The media type of the config blob `wkg oci push` writes.
const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The media type of an OCI image manifest.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// A running registry.
pub struct OciRegistry {
    daemon: Option<Daemon>,
    port: u16,
    dir: tempfile::TempDir,
    /// `user:password` the registry requires (htpasswd), if any; the
    /// test's own pushes send it.
    login: Option<(String, String)>,
}

impl OciRegistry {
    /// Starts an empty registry.
    pub fn start() -> OciRegistry {
        OciRegistry::start_as(None)
    }

    /// Starts an empty registry that answers only requests authenticated
    /// as `user` with `password` (HTTP basic, checked against a bcrypt
    /// htpasswd file, as the registry is usually run).
    pub fn start_with_login(user: &str, password: &str) -> OciRegistry {
        OciRegistry::start_as(Some((user.to_owned(), password.to_owned())))
    }

    fn start_as(login: Option<(String, String)>) -> OciRegistry {
        let dir = tempfile::Builder::new()
            .prefix("airlock-registry-")
            .tempdir()
            .expect("create a directory for the registry");
        let port = free_port();
        let mut registry = OciRegistry {
            daemon: None,
            port,
            dir,
            login,
        };
        registry.restart();
        registry
    }

    /// Starts the registry again (after [`OciRegistry::stop`]), with what it
    /// stored.
    pub fn restart(&mut self) {
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: warn\n\
             storage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            root = self.storage().display(),
            port = self.port
        );
        if let Some((user, password)) = &self.login {
            let htpasswd = self.dir.path().join("htpasswd");
            let hash = bcrypt::hash(password, 4).expect("bcrypt the password");
            fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("write the htpasswd file");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: airlock-test\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_path = self.dir.path().join("config.yml");
        fs::write(&config_path, config).expect("write the registry's config");
        let mut command = Command::new("docker-registry");
        command.arg("serve").arg(&config_path);
        let mut daemon = Daemon::spawn(
            command,
            "apt-get install -y docker-registry; scripts/test does",
        );
        daemon.wait_for_port(self.port);
        self.daemon = Some(daemon);
    }

    /// Stops the registry (what it stored is kept).
    pub fn stop(&mut self) {
        self.daemon = None;
    }

    /// `127.0.0.1:PORT`: the registry part of a reference.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// `request` with the registry's login, if it requires one.
    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        use base64::Engine as _;
        match &self.login {
            Some((user, password)) => {
                let basic =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                request.header("authorization", format!("Basic {basic}"))
            }
            None => request,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/v2/{path}", self.host())
    }

    /// Uploads a blob to `repository`; returns its digest.
    pub fn push_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let started = self
            .authorized(agent().post(&self.url(&format!("{repository}/blobs/uploads/"))))
            .send_empty()
            .expect("start a blob upload");
        assert_eq!(started.status(), 202, "blob upload refused");
        let location = started
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .expect("an upload location")
            .to_owned();
        let location = if location.starts_with('/') {
            format!("http://{}{location}", self.host())
        } else {
            location
        };
        let separator = if location.contains('?') { '&' } else { '?' };
        let done = self
            .authorized(agent().put(&format!("{location}{separator}digest={digest}")))
            .header("content-type", "application/octet-stream")
            .send(bytes)
            .expect("finish a blob upload");
        assert_eq!(done.status(), 201, "blob refused");
        digest
    }

    /// Pushes a manifest of `layers` (media type, bytes) to
    /// `repository:tag`; returns its digest.
    pub fn push_layers(&self, repository: &str, tag: &str, layers: &[(&str, &[u8])]) -> String {
        let config = br#"{"type":"wit"}"#;
        let config_digest = self.push_blob(repository, config);
        let layers: Vec<_> = layers
            .iter()
            .map(|(media_type, bytes)| {
                serde_json::json!({
                    "mediaType": media_type,
                    "digest": self.push_blob(repository, bytes),
                    "size": bytes.len(),
                })
            })
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": WASM_CONFIG, "digest": config_digest, "size": config.len()},
            "layers": layers,
        });
        self.push_manifest(repository, tag, &serde_json::to_vec(&manifest).unwrap())
    }

    /// Pushes a cosign signature of `signed` (a manifest digest, which may
    /// differ from `digest`, the manifest it is attached to) made with
    /// `key`, the way `cosign sign --key` stores it: a simple-signing
    /// payload layer at the tag `sha256-<hex>.sig` of `repository`, its
    /// signature in the layer's annotation.
    pub fn push_signature(&self, repository: &str, digest: &str, signed: &str, key: &CosignKey) {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{host}/{repository}"}},"image":{{"docker-manifest-digest":"{signed}"}},"type":"cosign container image signature"}},"optional":null}}"#,
            host = self.host()
        );
        let signature = key.sign(payload.as_bytes());
        let config = b"{}";
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": self.push_blob(repository, config),
                "size": config.len(),
            },
            "layers": [{
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": self.push_blob(repository, payload.as_bytes()),
                "size": payload.len(),
                "annotations": {"dev.cosignproject.cosign/signature": signature},
            }],
        });
        let tag = digest.replacen(':', "-", 1) + ".sig";
        self.push_manifest(repository, &tag, &serde_json::to_vec(&manifest).unwrap());
    }

    /// Attaches the Sigstore `bundle` to the manifest `subject` of
    /// `repository` the way `cosign sign --new-bundle-format` does on a
    /// registry without the referrers API (this one, Debian's registry
    /// 2.8): a referrer manifest (artifact type the bundle's, its one layer
    /// the bundle, its subject the manifest), listed in the image index at
    /// the referrers tag schema's tag `sha256-<hex>`.
    pub fn push_bundle(&self, repository: &str, subject: &str, bundle: &[u8]) {
        let empty = b"{}";
        let subject_size = self.manifest(repository, subject).len();
        let referrer = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": crate::sigstore::BUNDLE_MEDIA_TYPE,
            "config": {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": self.push_blob(repository, empty),
                "size": empty.len(),
            },
            "layers": [{
                "mediaType": crate::sigstore::BUNDLE_MEDIA_TYPE,
                "digest": self.push_blob(repository, bundle),
                "size": bundle.len(),
            }],
            "subject": {"mediaType": OCI_MANIFEST, "digest": subject, "size": subject_size},
        });
        let referrer = serde_json::to_vec(&referrer).unwrap();
        let referrer_digest = sha256(&referrer);
        self.put_manifest(repository, &referrer_digest, OCI_MANIFEST, &referrer);
        let tag = subject.replacen(':', "-", 1);
        let mut index = self
            .get_manifest(repository, &tag, OCI_INDEX)
            .map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).unwrap())
            .unwrap_or_else(
                || serde_json::json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}),
            );
        index["manifests"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "mediaType": OCI_MANIFEST,
                "artifactType": crate::sigstore::BUNDLE_MEDIA_TYPE,
                "digest": referrer_digest,
                "size": referrer.len(),
            }));
        self.put_manifest(
            repository,
            &tag,
            OCI_INDEX,
            &serde_json::to_vec(&index).unwrap(),
        );
    }

    /// The manifest `reference` (a tag or digest) of `repository`, as stored.
    pub fn manifest(&self, repository: &str, reference: &str) -> Vec<u8> {
        self.get_manifest(repository, reference, OCI_MANIFEST)
            .expect("the manifest is stored")
    }

    fn get_manifest(&self, repository: &str, reference: &str, accept: &str) -> Option<Vec<u8>> {
        let mut response = self
            .authorized(agent().get(&self.url(&format!("{repository}/manifests/{reference}"))))
            .header("accept", accept)
            .call()
            .expect("get a manifest");
        (response.status() == 200).then(|| response.body_mut().read_to_vec().unwrap())
    }

    fn put_manifest(&self, repository: &str, reference: &str, media_type: &str, bytes: &[u8]) {
        let response = self
            .authorized(agent().put(&self.url(&format!("{repository}/manifests/{reference}"))))
            .header("content-type", media_type)
            .send(bytes)
            .expect("put a manifest");
        assert_eq!(response.status(), 201, "manifest refused");
    }

    /// Pushes `component` (its bytes) to `repository:tag` in the Wasm OCI
    /// artifact layout; returns the manifest's digest.
    pub fn push_component(&self, repository: &str, tag: &str, component: &[u8]) -> String {
        self.push_layers(repository, tag, &[(WASM_LAYER, component)])
    }

    /// Puts `manifest` at `repository:tag`; returns its digest.
    pub fn push_manifest(&self, repository: &str, tag: &str, manifest: &[u8]) -> String {
        self.put_manifest(repository, tag, OCI_MANIFEST, manifest);
        sha256(manifest)
    }

    /// Replaces the stored bytes of the blob `digest` by `bytes`, as a
    /// tampered store would serve them.
    pub fn tamper_blob(&self, digest: &str, bytes: &[u8]) {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        let path = self
            .storage()
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data");
        assert!(
            path.exists(),
            "the registry stores blobs at {}",
            path.display()
        );
        fs::write(path, bytes).expect("tamper with a blob");
    }
}

/// A cosign key pair (ECDSA P-256) made by the test: its public key in
/// the PEM `PUBLIC KEY` form of `cosign.pub`.
pub struct CosignKey {
    pair: ring::signature::EcdsaKeyPair,
}

impl CosignKey {
    /// A new random key pair.
    pub fn generate() -> CosignKey {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        CosignKey { pair }
    }

    /// The public key as `cosign.pub` holds it (SubjectPublicKeyInfo, PEM).
    pub fn public_pem(&self) -> String {
        use base64::Engine as _;
        use ring::signature::KeyPair as _;
        // SubjectPublicKeyInfo of an id-ecPublicKey on prime256v1, then the point.
        let mut der = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        der.extend_from_slice(self.pair.public_key().as_ref());
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|chunk| std::str::from_utf8(chunk).unwrap())
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    /// The base64 ASN.1 DER signature of `payload`, as cosign writes it.
    pub fn sign(&self, payload: &[u8]) -> String {
        use base64::Engine as _;
        let rng = ring::rand::SystemRandom::new();
        let signature = self.pair.sign(&rng, payload).expect("sign");
        base64::engine::general_purpose::STANDARD.encode(signature.as_ref())
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
