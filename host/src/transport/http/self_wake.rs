//! Polling a connection again at once when it wakes itself.
//!
//! hyper serves a connection's requests inside the connection's own task,
//! and hands a request body to its handler through a channel whose two ends
//! both live in that task: the handler asking for the body wakes the
//! connection, and the body sent wakes the handler, while the task is being
//! polled. Tokio treats a task woken while it runs as a yield: it goes to the
//! back of the run queue and a parked worker thread is woken to steal it,
//! which costs a futex or eventfd write, that thread's wake-up (a cross-core
//! interrupt), and can move the request to a core whose caches hold none
//! of it. [`PollAgainOnSelfWake`] catches those wake-ups: a wake that arrives
//! while the inner future is being polled makes it poll the future again
//! straight away, on the same thread, instead of waking the task. Wakes at
//! any other time reach the task as usual, and it still gives the scheduler
//! its turn when Tokio's cooperative budget runs out, or after eight polls
//! in a row.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Most polls of the inner future in one poll of the task.
const MAX_POLLS: usize = 8;

/// The inner future is not being polled: wakes go to the task.
const IDLE: u8 = 0;
/// It is being polled, and nothing woke it yet.
const POLLING: u8 = 1;
/// It is being polled, and something woke it: poll it again.
const WOKEN_WHILE_POLLING: u8 = 2;

/// `F`, polled again at once when it wakes itself during a poll (see the
/// module docs).
pub struct PollAgainOnSelfWake<F> {
    inner: F,
    wakes: Arc<Wakes>,
    waker: Waker,
}

/// What the waker handed to the inner future shares with its poller.
struct Wakes {
    state: AtomicU8,
    /// The task polling [`PollAgainOnSelfWake`], as of its last poll.
    task: AtomicWaker,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let noted = self.state.compare_exchange(
            POLLING,
            WOKEN_WHILE_POLLING,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        match noted {
            Ok(_) | Err(WOKEN_WHILE_POLLING) => {}
            Err(_) => self.task.wake(),
        }
    }
}

impl<F> PollAgainOnSelfWake<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        let wakes = Arc::new(Wakes {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        PollAgainOnSelfWake {
            inner,
            waker: Waker::from(wakes.clone()),
            wakes,
        }
    }

    /// The wrapped future.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.inner
    }
}

impl<F: Future + Unpin> Future for PollAgainOnSelfWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.wakes.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(&this.waker);
        for _ in 0..MAX_POLLS {
            this.wakes.state.store(POLLING, Ordering::Release);
            let polled = Pin::new(&mut this.inner).poll(&mut inner_cx);
            let woken = this.wakes.state.swap(IDLE, Ordering::AcqRel) == WOKEN_WHILE_POLLING;
            if polled.is_ready() {
                return polled;
            }
            if !woken {
                return Poll::Pending;
            }
            if !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        // Woken, but it has had its share of this thread for now.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A future that wakes itself during its first `self_wakes` polls and
    /// then stores its waker, to be woken from outside; ready once
    /// `finish` is set. Counts its polls.
    struct Probe {
        self_wakes: usize,
        polls: Arc<AtomicUsize>,
        stored: Arc<std::sync::Mutex<Option<Waker>>>,
        finish: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Future for Probe {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.finish.load(Ordering::SeqCst) {
                return Poll::Ready(polls);
            }
            if self.self_wakes > 0 {
                self.self_wakes -= 1;
                cx.waker().wake_by_ref();
            } else {
                *self.stored.lock().unwrap() = Some(cx.waker().clone());
            }
            Poll::Pending
        }
    }

    fn probe(self_wakes: usize) -> Probe {
        Probe {
            self_wakes,
            polls: Arc::default(),
            stored: Arc::default(),
            finish: Arc::default(),
        }
    }

    /// A waker that counts how often it is woken.
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_without_waking_the_task() {
        let task = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let inner = probe(3);
        let polls = inner.polls.clone();
        let mut future = PollAgainOnSelfWake::new(inner);
        let polled = Pin::new(&mut future).poll(&mut Context::from_waker(&waker));
        assert!(polled.is_pending());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            4,
            "three self-wakes, four polls"
        );
        assert_eq!(task.0.load(Ordering::SeqCst), 0, "the task was never woken");
    }

    #[test]
    fn a_wake_after_the_poll_wakes_the_task() {
        let task = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let inner = probe(0);
        let (stored, finish) = (inner.stored.clone(), inner.finish.clone());
        let mut future = PollAgainOnSelfWake::new(inner);
        assert!(
            Pin::new(&mut future)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        let from_outside = stored.lock().unwrap().take().unwrap();
        std::thread::spawn(move || from_outside.wake())
            .join()
            .unwrap();
        assert_eq!(task.0.load(Ordering::SeqCst), 1, "woken once, from outside");
        finish.store(true, Ordering::SeqCst);
        let polled = Pin::new(&mut future).poll(&mut Context::from_waker(&waker));
        assert_eq!(polled, Poll::Ready(2));
    }

    #[test]
    fn a_future_that_keeps_waking_itself_gives_the_thread_back() {
        let task = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let inner = probe(usize::MAX);
        let polls = inner.polls.clone();
        let mut future = PollAgainOnSelfWake::new(inner);
        assert!(
            Pin::new(&mut future)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(polls.load(Ordering::SeqCst), MAX_POLLS);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "the task is woken to go on later"
        );
    }

    #[tokio::test]
    async fn a_future_out_of_budget_gives_the_thread_back() {
        let inner = probe(usize::MAX);
        let polls = inner.polls.clone();
        // Spend the task's budget.
        while tokio::task::coop::has_budget_remaining() {
            tokio::task::coop::consume_budget().await;
        }
        let mut future = PollAgainOnSelfWake::new(inner);
        let polled = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut future).poll(cx))).await;
        assert!(polled.is_pending());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "not polled again out of budget"
        );
    }
}
