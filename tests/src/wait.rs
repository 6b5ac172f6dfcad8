//! Waiting for what happens in the background (a reload, a log line, a
//! notification): poll with a deadline. A test never sleeps a fixed time
//! and then asserts.

use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something it expects to happen.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often [`wait_until`] looks.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Calls `check` until it returns `Some`, and returns that; panics, saying
/// what was awaited and the last `Err` `check` gave, after [`WAIT_TIMEOUT`].
///
/// `check` returns `Err(why)` while the condition does not hold yet; the
/// last `why` is shown on failure.
#[track_caller]
pub fn wait_until<T>(what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + WAIT_TIMEOUT;
    loop {
        match check() {
            Ok(found) => return found,
            Err(why) if Instant::now() >= deadline => {
                panic!("gave up after {WAIT_TIMEOUT:?} waiting for {what}; last seen: {why}")
            }
            Err(_) => thread::sleep(POLL_INTERVAL),
        }
    }
}
