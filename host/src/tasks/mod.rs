//! Tasks (MCP's tasks extension, SEP-2663): tool calls that run on after
//! their request has been answered, round after round, each in a fresh
//! instance, with the state between rounds kept in a [`TaskStore`] instead
//! of a sealed token.

pub mod embedded;
pub mod redis;
pub mod store;

pub use embedded::EmbeddedStore;
pub use redis::RedisStore;
pub use store::{
    Bound, Lease, MemoryStore, StoreError, StoreLimits, TaskEvent, TaskRecord, TaskStatus,
    TaskStore, now_ms,
};
