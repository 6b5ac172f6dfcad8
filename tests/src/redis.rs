//! A `redis-server` of a test's own, for the hosts that share tasks through
//! Redis: on a free port, in a temporary directory, saving nothing, and
//! killed when dropped; optionally asking for a password, and serving TLS
//! only, with a certificate for 127.0.0.1 from a certificate authority made
//! for it (with the `openssl` command). `scripts/test` installs
//! `redis-server`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::wait::wait_until;

/// How a [`RedisServer`] is reached.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The password it asks for (`--requirepass`), if any.
    pub password: Option<String>,
    /// Whether it serves TLS only (`--tls-port`), with no plain port.
    pub tls: bool,
}

/// A running `redis-server`.
pub struct RedisServer {
    process: Child,
    port: u16,
    access: Access,
    /// The certificate authority and the server's key and certificate.
    certificates: Option<tempfile::TempDir>,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one on a free port and waits until it accepts connections.
    pub fn start() -> RedisServer {
        RedisServer::start_with(Access::default())
    }

    /// Starts one reached as `access` says.
    pub fn start_with(access: Access) -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("find a free port")
            .port();
        let certificates = access.tls.then(make_certificates);
        RedisServer::on(port, access, certificates)
    }

    /// Stops it and starts an empty one on the same port (a Redis that went
    /// away and came back).
    pub fn restart(&mut self) {
        self.kill();
        let certificates = self.certificates.take();
        *self = RedisServer::on(self.port, self.access.clone(), certificates);
    }

    /// The certificate of the authority that signed its certificate (with
    /// TLS): what a client must trust.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.certificates
            .as_ref()
            .map(|dir| dir.path().join("ca.crt"))
    }

    /// Starts one on `port`.
    fn on(port: u16, access: Access, certificates: Option<tempfile::TempDir>) -> RedisServer {
        let dir = tempfile::tempdir().expect("create a directory for redis-server");
        let mut command = Command::new("redis-server");
        match &certificates {
            Some(certs) => {
                let file = |name: &str| certs.path().join(name);
                command
                    .args(["--port", "0", "--tls-port", &port.to_string()])
                    .arg("--tls-cert-file")
                    .arg(file("server.crt"))
                    .arg("--tls-key-file")
                    .arg(file("server.key"))
                    .arg("--tls-ca-cert-file")
                    .arg(file("ca.crt"))
                    .args(["--tls-auth-clients", "no"]);
            }
            None => {
                command.args(["--port", &port.to_string()]);
            }
        }
        if let Some(password) = &access.password {
            command.args(["--requirepass", password]);
        }
        let process = command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}); install it \
                     (apt-get install -y redis-server; scripts/test does)"
                )
            });
        let server = RedisServer {
            process,
            port,
            access,
            certificates,
            _dir: dir,
        };
        wait_until("redis-server to accept connections", || {
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())
        });
        server
    }

    /// Where it listens, with its password if it has one:
    /// `redis://127.0.0.1:PORT/0`, `rediss://:PASSWORD@127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        self.url_with_password(self.access.password.as_deref())
    }

    /// Where it listens, with `password` (or none) in the URL.
    pub fn url_with_password(&self, password: Option<&str>) -> String {
        let scheme = if self.access.tls { "rediss" } else { "redis" };
        let auth = password.map(|p| format!(":{p}@")).unwrap_or_default();
        format!("{scheme}://{auth}127.0.0.1:{}/0", self.port)
    }

    /// Stops it now (a Redis that goes away).
    pub fn kill(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A certificate authority and a certificate it signed for `127.0.0.1` and
/// `localhost`, made with the `openssl` command: `ca.crt`, `server.crt`,
/// `server.key`.
fn make_certificates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a directory for certificates");
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run openssl ({e}): apt-get install -y openssl"));
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=airlock test CA",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"],
            &ec[..],
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    write(
        dir.path(),
        "server.ext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    );
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write a file for openssl");
}
