//! A call's wall-clock deadline, for the waits the host does on a guest's
//! behalf: running guest code is stopped by the epoch callback (see
//! [`store`](super::store)), waits on the host by [`within`].

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

/// The error a call fails with once its deadline has passed; recognised with
/// `wasmtime::Error::is`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the call's deadline has passed")]
pub(crate) struct DeadlineExceeded;

/// A call's deadline passed while it waited on the host (a WASI sleep, a
/// full event channel); running guest code is stopped by the epoch instead.
#[derive(Debug)]
pub(crate) struct DeadlinePassed;

/// Runs the future `make` makes until `deadline`. The timer is armed only
/// if the future does not finish on its first poll: most calls never wait
/// on the host, and they then pay nothing for a timer they would never
/// need.
///
/// It takes a maker, not the future: an `async fn` keeps a future it is
/// given beside the one it awaits, and this one holds a fresh instance's
/// whole call.
pub(super) async fn within<F: Future>(
    deadline: Instant,
    make: impl FnOnce() -> F,
) -> Result<F::Output, DeadlinePassed> {
    let mut future = std::pin::pin!(make());
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let timer =
            timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        timer.as_mut().poll(cx).map(|()| Err(DeadlinePassed))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_holds_the_call_once() {
        let bounded = within(Instant::now(), || crate::held_once::four_kib(()));
        crate::held_once::assert_held_once(&bounded);
    }
}
