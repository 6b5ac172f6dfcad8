//! The epoch ticker: a dedicated OS thread that advances the engine's epoch
//! while guest code may run, and sleeps while none can.
//!
//! # Why a thread
//!
//! The epoch must be advanced by a dedicated OS thread: a tokio task could be
//! starved by the very guests it is meant to interrupt, leaving looping
//! guests running forever.
//!
//! # Why it sleeps when idle
//!
//! Ticking every millisecond wakes a thread a thousand times a second, which
//! on an idle server is nearly all the CPU it uses. Every store holds a
//! [`Ticking`] guard for as long as it lives; the ticker keeps ticking while
//! any store lives, and once none has lived at [`IDLE_TICKS`] ticks in a row
//! it parks until the next store is made. A store made while the ticker is
//! parked wakes it, and the first tick comes one tick after that, as it would
//! have anyway: the deadline of every call is kept.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use anyhow::Context as _;
use wasmtime::Engine;

/// How often the epoch advances; also how long a guest runs before it
/// yields at the next tick (so a looping guest holds a worker thread for less
/// than two), and how late past its deadline it may be stopped.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// How many ticks in a row with no store alive the ticker waits before it
/// parks: a server under steady load, whose calls are shorter than a tick,
/// keeps ticking instead of being woken for every call.
pub const IDLE_TICKS: u32 = 100;

/// A thread that advances an engine's epoch every tick while a store lives.
/// Stops (and joins the thread) when dropped, or by itself once the engine
/// is gone.
pub struct EpochTicker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the ticker thread and the stores' guards share.
struct Shared {
    /// Stores alive now.
    live_stores: AtomicUsize,
    /// Set when the ticker is dropped.
    stopping: AtomicBool,
    /// Set while the ticker is parked, waiting for a store: only then does a
    /// new store wake it (a wake-up per call would cost a system call each).
    parked: AtomicBool,
    /// The ticker thread, to wake it; set before any guard exists.
    thread: OnceLock<Thread>,
}

/// Keeps the ticker ticking while it lives; every store holds one.
pub struct Ticking {
    shared: Arc<Shared>,
}

impl EpochTicker {
    /// Starts advancing `engine`'s epoch every `tick` while a store lives.
    pub fn start(engine: &Engine, tick: Duration) -> anyhow::Result<EpochTicker> {
        let engine = engine.weak();
        EpochTicker::start_with(tick, IDLE_TICKS, move || match engine.upgrade() {
            Some(engine) => {
                engine.increment_epoch();
                true
            }
            None => false,
        })
    }

    /// Starts calling `advance` every `tick` while a [`Ticking`] guard lives
    /// and for `idle_ticks` ticks after the last one is dropped; stops when
    /// `advance` returns false.
    fn start_with(
        tick: Duration,
        idle_ticks: u32,
        advance: impl FnMut() -> bool + Send + 'static,
    ) -> anyhow::Result<EpochTicker> {
        let shared = Arc::new(Shared {
            live_stores: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            thread: OnceLock::new(),
        });
        let thread = std::thread::Builder::new()
            .name("airlock-epoch".into())
            .spawn({
                let shared = shared.clone();
                move || shared.run(tick, idle_ticks, advance)
            })
            .context("failed to start the epoch ticker thread")?;
        let _ = shared.thread.set(thread.thread().clone());
        Ok(EpochTicker {
            shared,
            thread: Some(thread),
        })
    }

    /// A guard that keeps the epoch advancing while it lives: held by every
    /// store, so that running guest code always meets its next tick.
    pub fn ticking(&self) -> Ticking {
        if self.shared.live_stores.fetch_add(1, Ordering::SeqCst) == 0
            && self.shared.parked.load(Ordering::SeqCst)
        {
            self.shared.wake();
        }
        Ticking {
            shared: self.shared.clone(),
        }
    }
}

impl Shared {
    /// The ticker thread's loop.
    fn run(&self, tick: Duration, idle_ticks: u32, mut advance: impl FnMut() -> bool) {
        let mut idle = 0;
        loop {
            std::thread::sleep(tick);
            if self.stopping.load(Ordering::SeqCst) || !advance() {
                return;
            }
            if self.live_stores.load(Ordering::SeqCst) > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle >= idle_ticks {
                if !self.park_until_a_store_lives() {
                    return;
                }
                idle = 0;
            }
        }
    }

    /// Parks until a store lives (true) or the ticker is stopping (false).
    /// `parked` is set before `live_stores` is read, and a new guard counts
    /// itself before it reads `parked`: either the ticker sees the guard or
    /// the guard wakes the ticker. A wake-up that comes between the check and
    /// the park is kept, and the park returns at once.
    fn park_until_a_store_lives(&self) -> bool {
        self.parked.store(true, Ordering::SeqCst);
        let woken_for_a_store = loop {
            if self.stopping.load(Ordering::SeqCst) {
                break false;
            }
            if self.live_stores.load(Ordering::SeqCst) > 0 {
                break true;
            }
            std::thread::park();
        };
        self.parked.store(false, Ordering::SeqCst);
        woken_for_a_store
    }

    /// Wakes the ticker thread if it is parked (or makes its next park
    /// return at once).
    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        self.shared.live_stores.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Ticks counted by a test ticker.
    fn counting_ticker(idle_ticks: u32) -> (EpochTicker, Arc<AtomicUsize>) {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counter = ticks.clone();
        let ticker = EpochTicker::start_with(Duration::from_millis(1), idle_ticks, move || {
            counter.fetch_add(1, Ordering::SeqCst);
            true
        })
        .unwrap();
        (ticker, ticks)
    }

    /// Waits (up to 10 s) until the ticker is parked, waiting for a store;
    /// the ticks counted by then.
    fn wait_until_parked(ticker: &EpochTicker, ticks: &AtomicUsize) -> usize {
        let give_up = Instant::now() + Duration::from_secs(10);
        while !ticker.shared.parked.load(Ordering::SeqCst) {
            assert!(Instant::now() < give_up, "the ticker never parked");
            std::thread::sleep(Duration::from_millis(5));
        }
        ticks.load(Ordering::SeqCst)
    }

    /// Waits (up to 10 s) until `ticks` has passed `above`.
    fn wait_for_ticks_above(ticks: &AtomicUsize, above: usize) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while ticks.load(Ordering::SeqCst) <= above {
            assert!(Instant::now() < give_up, "the ticker did not tick");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn parks_with_no_store_and_wakes_for_one() {
        let (ticker, ticks) = counting_ticker(5);
        let parked_at = wait_until_parked(&ticker, &ticks);
        assert!(parked_at >= 5, "parked after {parked_at} ticks, not 5");

        let guard = ticker.ticking();
        wait_for_ticks_above(&ticks, parked_at);
        // While a store lives, it never parks: 50 more ticks come.
        wait_for_ticks_above(&ticks, parked_at + 50);

        drop(guard);
        let parked_again = wait_until_parked(&ticker, &ticks);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ticks.load(Ordering::SeqCst), parked_again);
    }

    #[test]
    fn every_new_store_wakes_a_parked_ticker() {
        // Waiting one idle tick only, the ticker parks soon after each guard
        // is dropped; every new guard must wake it.
        let (ticker, ticks) = counting_ticker(1);
        for _ in 0..100 {
            let before = wait_until_parked(&ticker, &ticks);
            let guard = ticker.ticking();
            wait_for_ticks_above(&ticks, before + 1);
            drop(guard);
        }
    }

    #[test]
    fn stops_when_dropped_ticking_or_parked() {
        let (ticker, ticks) = counting_ticker(1);
        let guard = ticker.ticking();
        wait_for_ticks_above(&ticks, 0);
        drop(ticker); // joins the thread while it ticks: must not hang
        drop(guard);

        let (ticker, ticks) = counting_ticker(1);
        wait_until_parked(&ticker, &ticks);
        drop(ticker); // joins the parked thread: must not hang
    }

    #[test]
    fn stops_by_itself_once_the_engine_is_gone() {
        let engine = Engine::new(wasmtime::Config::new().epoch_interruption(true)).unwrap();
        let ticker = EpochTicker::start(&engine, Duration::from_millis(1)).unwrap();
        let _guard = ticker.ticking();
        drop(engine);
        let give_up = Instant::now() + Duration::from_secs(10);
        while ticker.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            assert!(Instant::now() < give_up, "the ticker outlived its engine");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
