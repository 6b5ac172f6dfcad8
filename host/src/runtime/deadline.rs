//! A call's wall-clock deadline: running guest code is stopped by the
//! epoch callback (see [`store`](super::store)), which [`TickPolicy`]
//! decides, and waits the host does on a guest's behalf by [`within`].

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use wasmtime::UpdateDeadline;

use super::ticker::EPOCH_TICK;

/// The error a call fails with once its deadline has passed; recognised with
/// `wasmtime::Error::is`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the call's deadline has passed")]
pub(crate) struct DeadlineExceeded;

/// What a call's epoch callback does at each tick while its guest runs:
/// ends the call once its deadline has passed; else yields to tokio if the
/// guest has run for a whole tick since it started or last yielded (so a
/// looping guest holds a worker thread for less than two ticks); else lets
/// it run on.
///
/// A call shorter than a tick that a tick happens to cross does not yield.
/// A yield puts the call back in the runtime's queue and wakes a parked
/// worker thread to take it, often with an interrupt to the other CPU; on a
/// busy host, where the OS preempts calls and ticks cross them more often,
/// yielding at every tick cost more than the fairness it bought.
pub(super) struct TickPolicy {
    deadline: Instant,
    running_since: Instant,
}

impl TickPolicy {
    /// The policy of a call with this `deadline` whose guest starts `now`.
    pub(super) fn new(deadline: Instant, now: Instant) -> TickPolicy {
        TickPolicy {
            deadline,
            running_since: now,
        }
    }

    /// The decision at a tick seen at `now`; the next tick is checked in
    /// every case but the last.
    pub(super) fn at_tick(&mut self, now: Instant) -> Result<UpdateDeadline, DeadlineExceeded> {
        if now >= self.deadline {
            return Err(DeadlineExceeded);
        }
        if now.duration_since(self.running_since) < EPOCH_TICK {
            return Ok(UpdateDeadline::Continue(1));
        }
        self.running_since = now;
        Ok(UpdateDeadline::Yield(1))
    }
}

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

    use std::time::Duration;

    /// Which way a tick went: `Continue`, `Yield` or the deadline.
    fn decision(policy: &mut TickPolicy, now: Instant) -> &'static str {
        match policy.at_tick(now) {
            Ok(UpdateDeadline::Continue(1)) => "continue",
            Ok(UpdateDeadline::Yield(1)) => "yield",
            Err(DeadlineExceeded) => "deadline",
            Ok(_) => "something else",
        }
    }

    #[test]
    fn a_guest_yields_once_it_has_run_a_whole_tick_and_ends_at_its_deadline() {
        let start = Instant::now();
        let at = |micros: u64| start + Duration::from_micros(micros);
        let mut policy = TickPolicy::new(at(10_000), start);
        // A tick crossing a call in its first tick: it runs on.
        assert_eq!(decision(&mut policy, at(300)), "continue");
        // The guest is still running a tick later: it yields, and its tick
        // starts again from there.
        assert_eq!(decision(&mut policy, at(1_300)), "yield");
        assert_eq!(decision(&mut policy, at(2_200)), "continue");
        assert_eq!(decision(&mut policy, at(3_300)), "yield");
        // A looping guest, ticks a whole tick apart: it yields at each.
        let mut looping = TickPolicy::new(at(10_000), start);
        let yields = (1..=8)
            .map(|tick| decision(&mut looping, at(tick * 1_000)))
            .filter(|&decision| decision == "yield")
            .count();
        assert_eq!(yields, 8);
        assert_eq!(decision(&mut policy, at(10_000)), "deadline");
        assert_eq!(decision(&mut policy, at(10_001)), "deadline");
    }

    #[test]
    fn the_deadline_holds_the_call_once() {
        let bounded = within(Instant::now(), || crate::held_once::four_kib(()));
        crate::held_once::assert_held_once(&bounded);
    }
}
