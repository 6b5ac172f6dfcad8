//! A `redis-server` of a test's own, for the hosts that share tasks through
//! Redis: on a free port, in a temporary directory, saving nothing, and
//! killed when dropped. `scripts/test` installs `redis-server`.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

use crate::wait::wait_until;

/// A running `redis-server`.
pub struct RedisServer {
    process: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one on a free port and waits until it accepts connections.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("find a free port")
            .port();
        RedisServer::on(port)
    }

    /// Stops it and starts an empty one on the same port (a Redis that went
    /// away and came back).
    pub fn restart(&mut self) {
        self.kill();
        *self = RedisServer::on(self.port);
    }

    /// Starts one on `port`.
    fn on(port: u16) -> RedisServer {
        let dir = tempfile::tempdir().expect("create a directory for redis-server");
        let process = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
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
            _dir: dir,
        };
        wait_until("redis-server to accept connections", || {
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())
        });
        server
    }

    /// Where it listens: `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
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
