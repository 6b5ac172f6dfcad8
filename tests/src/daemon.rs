//! A server program the tests start beside Airlock (nginx, Prometheus): run
//! in the foreground as a child of the test, its stderr collected, stopped
//! when dropped (SIGTERM, so that nginx's master takes its workers with it;
//! SIGKILL if it lingers).

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::wait::wait_until;

/// A running child process and everything it wrote to stderr.
pub struct Daemon {
    name: String,
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Daemon {
    /// Starts `command` (stdout discarded, stderr collected); `install` says
    /// how to get the program when it is missing.
    pub fn spawn(mut command: Command, install: &str) -> Daemon {
        let name = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({e}); install it ({install})"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(read @ 1..) = pipe.read(&mut chunk) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        });
        Daemon {
            name,
            child,
            stderr,
        }
    }

    /// Everything it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until it accepts connections on `port` of 127.0.0.1; panics
    /// with its stderr if it exits first or takes too long.
    #[track_caller]
    pub fn wait_for_port(&mut self, port: u16) {
        wait_until(&format!("{} to accept connections", self.name), || {
            if let Some(status) = self.child.try_wait().expect("poll the process") {
                panic!("{} exited with {status}:\n{}", self.name, self.stderr());
            }
            TcpStream::connect(("127.0.0.1", port))
                .map(drop)
                .map_err(|e| format!("{e}; stderr:\n{}", self.stderr()))
        });
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let terminated = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|status| status.success());
        let deadline = Instant::now() + Duration::from_secs(5);
        let exited = terminated
            && loop {
                match self.child.try_wait() {
                    Ok(Some(_)) => break true,
                    Ok(None) if Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(20))
                    }
                    _ => break false,
                }
            };
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if thread::panicking() {
            eprintln!(
                "---- {} (pid {}) stderr ----\n{}---- end of {} stderr ----",
                self.name,
                self.child.id(),
                self.stderr(),
                self.name
            );
        }
    }
}

/// A port of 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("find a free port")
        .port()
}
