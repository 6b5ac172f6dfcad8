//! Retrying a registry request that failed for a reason that passes: the
//! connection refused or reset, or the registry answering 429, 502, 503 or
//! 504. It is tried again up to `--pull-retries` times, after a delay that
//! doubles from [`FIRST_DELAY`] (at most [`MAX_DELAY`]), each cut by a
//! random part so that hosts started together do not retry together. Any
//! other failure (another 4xx, a malformed answer) is final at once, and a
//! digest mismatch is never a request failure: it is refused where it is
//! checked. The whole pull, its retries included, stays within
//! `--pull-timeout`.

use std::time::Duration;

use ring::rand::SecureRandom as _;
use tracing::debug;

use super::distribution::RequestError;

/// The delay before the first retry.
const FIRST_DELAY: Duration = Duration::from_millis(200);

/// The longest delay between two tries.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// A request's last failure and how many tries it had.
pub(super) struct Tried {
    /// The last failure.
    pub(super) err: RequestError,
    /// How many times the request was sent.
    pub(super) tries: u32,
}

/// `request`, tried again up to `retries` times while it fails for a
/// reason that passes ([`is_transient`]); `what` names it in the log line
/// of each retry.
pub(super) async fn with_retries<T, F, Fut>(
    retries: u32,
    what: &str,
    mut request: F,
) -> Result<T, Tried>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RequestError>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match request().await {
            Ok(answer) => return Ok(answer),
            Err(err) if tries <= retries && is_transient(&err) => {
                let delay = backoff(tries);
                debug!(
                    tries,
                    "{what}: {err}; trying again in {}",
                    humantime::format_duration(delay)
                );
                tokio::time::sleep(delay).await;
            }
            Err(err) => return Err(Tried { err, tries }),
        }
    }
}

/// Whether `err` may pass: the connection refused or reset, or the
/// registry busy or its gateway failing (429, 502, 503, 504).
fn is_transient(err: &RequestError) -> bool {
    match err {
        RequestError::Status { status, codes, .. } => {
            matches!(status.as_u16(), 429 | 502 | 503 | 504)
                || codes.iter().any(|code| code == "TOOMANYREQUESTS")
        }
        RequestError::Transport(err) => err.is_connect() || connection_lost(err),
        RequestError::TooLarge { .. } | RequestError::Invalid(_) => false,
    }
}

/// Whether `err` was caused by the connection being reset or closed
/// before the answer was complete.
fn connection_lost(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(|hyper| hyper.is_incomplete_message() || hyper.is_closed())
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The delay after the `tries`-th failed try: [`FIRST_DELAY`] doubled at
/// each try, at most [`MAX_DELAY`], of which a random part, up to half, is
/// cut.
fn backoff(tries: u32) -> Duration {
    let full = FIRST_DELAY
        .saturating_mul(1 << tries.saturating_sub(1).min(16))
        .min(MAX_DELAY);
    let mut random = [0u8; 2];
    // Without randomness the full delay is waited: still bounded.
    let _ = ring::rand::SystemRandom::new().fill(&mut random);
    let cut = f64::from(u16::from_le_bytes(random)) / f64::from(u16::MAX) / 2.0;
    full.mul_f64(1.0 - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(code: u16, codes: &[&str]) -> RequestError {
        RequestError::Status {
            url: "http://registry.example/v2/".to_owned(),
            status: reqwest::StatusCode::from_u16(code).unwrap(),
            codes: codes.iter().map(|code| (*code).to_owned()).collect(),
            message: String::new(),
        }
    }

    fn server_error(code: u16) -> RequestError {
        answered(code, &[])
    }

    #[test]
    fn only_failures_that_pass_are_transient() {
        for code in [429, 502, 503, 504] {
            assert!(is_transient(&server_error(code)), "{code}");
        }
        for code in [400, 403, 404, 500, 501] {
            assert!(!is_transient(&server_error(code)), "{code}");
        }
        assert!(is_transient(&answered(400, &["TOOMANYREQUESTS"])));
        assert!(!is_transient(&answered(404, &["MANIFEST_UNKNOWN"])));
        assert!(!is_transient(&server_error(401)));
        assert!(!is_transient(&RequestError::TooLarge {
            url: String::new(),
            cap: 1,
            announced: None,
        }));
    }

    #[test]
    fn the_delay_doubles_up_to_its_bound_with_at_most_half_cut() {
        for tries in 1..=20 {
            let full = FIRST_DELAY
                .saturating_mul(1 << (tries - 1).min(16))
                .min(MAX_DELAY);
            let delay = backoff(tries);
            assert!(delay <= full && delay >= full / 2, "{tries}: {delay:?}");
        }
        assert!(backoff(20) <= MAX_DELAY);
        assert!(backoff(1) <= FIRST_DELAY);
    }

    #[tokio::test]
    async fn a_transient_failure_is_tried_again_up_to_the_retries_and_others_never() {
        let mut sent = 0;
        let tried = with_retries(3, "test", || {
            sent += 1;
            async { Err::<(), _>(server_error(503)) }
        })
        .await
        .err()
        .unwrap();
        assert_eq!((tried.tries, sent), (4, 4));

        let mut sent = 0;
        let answer = with_retries(3, "test", || {
            sent += 1;
            let failing = sent <= 2;
            async move {
                if failing {
                    Err(server_error(503))
                } else {
                    Ok("served")
                }
            }
        })
        .await;
        assert_eq!(answer.ok(), Some("served"));
        assert_eq!(sent, 3);

        let mut sent = 0;
        let tried = with_retries(3, "test", || {
            sent += 1;
            async { Err::<(), _>(server_error(404)) }
        })
        .await
        .err()
        .unwrap();
        assert_eq!((tried.tries, sent), (1, 1));
    }
}
