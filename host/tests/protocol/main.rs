//! The protocol's rules, checked in-process: a whole server built from the
//! library on the sample guests, its endpoint driven through the HTTP
//! router and the stdio transport over in-memory connections, for both
//! eras (2026-07-28 requests, 2025-era sessions). What the end-to-end suite
//! checks against the release binary, without building it: changing a
//! rule of the envelope needs a debug build of the host, and this test.
//!
//! Needs the guests built first (`scripts/test` does it):
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p hash -p work-items -p deploy \
//!     -p summarize -p report -p everything -p probe -p watcher
//! cargo test -p airlock --test protocol
//! ```

mod access;
mod arguments;
mod cancellation;
mod envelope;
mod loading;
mod mrtr;
mod sessions;
mod skills;
mod support;
mod tasks;
