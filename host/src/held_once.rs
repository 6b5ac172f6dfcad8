//! For tests: the check that a wrapper of a request's future (its span, its
//! audit record, its trace, its cancellation, its deadline) holds the
//! future it wraps once.
//!
//! An `async fn` keeps a future it is given as an argument beside the one
//! it awaits, so every such wrapper doubled the request's future: five of
//! them made a future of under 1 KiB into one of 12 KiB, copied whole each
//! time a request's future is boxed. Wrappers take a maker of the future
//! instead, or are combinators.

use std::future::Future;

/// A future holding 4 KiB across an await, that ends with `value`.
pub(crate) async fn four_kib<T>(value: T) -> T {
    let block = [1u8; 4096];
    std::future::ready(()).await;
    std::hint::black_box(&block);
    value
}

/// Asserts that `wrapped`, a wrapper around one [`four_kib`], is not much
/// larger than that future: it holds it once.
pub(crate) fn assert_held_once(wrapped: &impl Future) {
    let inner = std::mem::size_of_val(&four_kib(()));
    let outer = std::mem::size_of_val(wrapped);
    assert!(
        outer < inner + 1024,
        "a wrapper of {outer} bytes around a future of {inner}: it holds the future twice"
    );
}
