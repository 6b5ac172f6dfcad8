//! The wasmtime [`Engine`] every component is compiled for, and the epoch
//! interruption that gives every call a wall-clock deadline.
//!
//! # Why these settings
//!
//! Every tool call runs in a fresh instance, so instantiation is on the hot
//! path of every request. Three things make it cost microseconds instead of
//! tens of microseconds:
//!
//! - **Pooling allocator.** Memories, tables, fiber stacks and instance
//!   metadata come from slots reserved once at start, not from `mmap` and
//!   `munmap` per call (which take a process-wide lock and cause TLB
//!   shootdowns on every core).
//! - **Copy-on-write memory images.** A component's initial linear memory
//!   (its data segments) is mapped from an image instead of being copied.
//! - **Keeping a little memory resident.** When a slot is released, the first
//!   [`LINEAR_MEMORY_KEEP_RESIDENT`] bytes of its memory (and
//!   [`TABLE_KEEP_RESIDENT`] of its tables) are reset in place instead of
//!   being handed back to the kernel, so the next instance does not take a
//!   page fault on every page it touches. With `PAGEMAP_SCAN` (Linux 6.7+,
//!   detected at start) only the pages the guest actually dirtied are reset.
//!
//! Pool sizes follow from [`RuntimeLimits`]: each memory slot reserves (and
//! may grow to) the memory cap and no more, and there is one slot of
//! everything for every call that may run at once, plus [`POOL_HEADROOM`]
//! for loading components. See [`PoolPlan`].
//!
//! # Why epoch interruption
//!
//! Compiled guest code checks a shared counter at function entries and loop
//! back-edges, which is about 1 % of the cost of a trivial call (fuel costs
//! 13-27 %); the [`ticker`](super::ticker) advances it.

use anyhow::Context as _;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeLimits;

/// Bytes of each linear memory reset in place (not returned to the kernel)
/// when its slot is released.
pub const LINEAR_MEMORY_KEEP_RESIDENT: usize = 2 << 20;

/// Bytes of each table reset in place when its slot is released.
pub const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Pool slots beyond `max_concurrent_calls`: room for the `list-tools`
/// instances made while loading components, which do not wait for a call
/// permit's worth of slots to free up.
pub const POOL_HEADROOM: u32 = 16;

/// Most core module instances one component may create. A Rust
/// `wasm32-wasip2` component has three or four (the program, a shim and its
/// fix-ups for indirect calls, plus one per group of lowered imports); a
/// composition of several components has more.
pub const MAX_CORE_INSTANCES_PER_COMPONENT: u32 = 32;

/// Most linear memories one component may contain. A component made by one
/// language toolchain has one; composing two makes two.
pub const MAX_MEMORIES_PER_COMPONENT: u32 = 2;

/// Most tables one component may contain (a Rust component has two: its
/// function table and the shim's).
pub const MAX_TABLES_PER_COMPONENT: u32 = 8;

/// How the pooling allocator is sized for a given set of limits.
///
/// Each total is "per component instance" times the number of instances that
/// may be alive at once, so a full load of worst-case components can never
/// exhaust a pool (which would make calls fail for reasons unrelated to the
/// tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolPlan {
    /// Component instances alive at once: one per concurrent call plus
    /// [`POOL_HEADROOM`].
    pub component_instances: u32,
    /// Core module instances across all component instances.
    pub core_instances: u32,
    /// Linear memories across all component instances.
    pub memories: u32,
    /// Tables across all component instances.
    pub tables: u32,
    /// Fiber stacks for async calls (one per component instance).
    pub stacks: u32,
    /// Largest size any linear memory may grow to: the memory cap, rounded up
    /// to whole 64 KiB wasm pages.
    pub max_memory_bytes: usize,
}

impl PoolPlan {
    /// Derives pool sizes from the runtime limits.
    pub fn new(limits: &RuntimeLimits) -> anyhow::Result<PoolPlan> {
        anyhow::ensure!(
            limits.max_concurrent_calls > 0,
            "max_concurrent_calls must be at least 1"
        );
        anyhow::ensure!(
            limits.max_memory_bytes > 0,
            "max_memory_bytes must be at least 1"
        );
        let concurrent =
            u32::try_from(limits.max_concurrent_calls).context("max_concurrent_calls too large")?;
        let component_instances = concurrent
            .checked_add(POOL_HEADROOM)
            .context("max_concurrent_calls too large")?;
        let times = |per: u32| {
            component_instances
                .checked_mul(per)
                .context("max_concurrent_calls too large for the instance pool")
        };
        const WASM_PAGE: usize = 64 << 10;
        let max_memory_bytes = limits
            .max_memory_bytes
            .checked_next_multiple_of(WASM_PAGE)
            .context("max_memory_bytes too large")?;
        Ok(PoolPlan {
            component_instances,
            core_instances: times(MAX_CORE_INSTANCES_PER_COMPONENT)?,
            memories: times(MAX_MEMORIES_PER_COMPONENT)?,
            tables: times(MAX_TABLES_PER_COMPONENT)?,
            stacks: component_instances,
            max_memory_bytes,
        })
    }

    /// Address space reserved for each linear memory (before its guard
    /// region): the memory cap, at most 4 GiB (all a 32-bit memory can
    /// address).
    ///
    /// wasmtime's default is 4 GiB per memory, which lets Cranelift drop
    /// bounds checks entirely; reserving only the cap makes it compare each
    /// access against a constant instead. Measured here, that costs nothing
    /// (a fresh `sha256` call: 14.1 vs 14.4 µs median; hashing 256 KiB:
    /// 1.13 vs 1.25 ms), while it shrinks the pool's reservation from
    /// 4 GiB to 96 MiB per memory slot (2.2 TiB to 51 GiB with the default
    /// limits), which leaves room for several engines in one process
    /// (tests) and for tight `ulimit -v` settings.
    pub fn memory_reservation(&self) -> u64 {
        (self.max_memory_bytes as u64).min(4 << 30)
    }

    /// The wasmtime pooling configuration for this plan.
    pub fn pooling_config(&self) -> PoolingAllocationConfig {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(self.component_instances)
            .total_core_instances(self.core_instances)
            .total_memories(self.memories)
            .total_tables(self.tables)
            .total_stacks(self.stacks)
            .max_core_instances_per_component(MAX_CORE_INSTANCES_PER_COMPONENT)
            .max_memories_per_component(MAX_MEMORIES_PER_COMPONENT)
            .max_tables_per_component(MAX_TABLES_PER_COMPONENT)
            .max_memory_size(self.max_memory_bytes)
            .linear_memory_keep_resident(LINEAR_MEMORY_KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT)
            // Only on Linux 6.7+; elsewhere the plain keep-resident reset is used.
            .pagemap_scan(Enabled::Auto);
        pool
    }
}

/// Builds the engine for the given limits: Cranelift, component model, epoch
/// interruption, pooling allocator with copy-on-write memory images.
pub fn build_engine(limits: &RuntimeLimits) -> anyhow::Result<Engine> {
    let plan = PoolPlan::new(limits)?;
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true)
        .consume_fuel(limits.fuel)
        .memory_reservation(plan.memory_reservation())
        .allocation_strategy(InstanceAllocationStrategy::Pooling(plan.pooling_config()));
    Engine::new(&config)
        .map_err(anyhow::Error::from)
        .context("failed to configure the WebAssembly engine (pooling allocator)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_for_defaults() {
        let plan = PoolPlan::new(&RuntimeLimits::default()).unwrap();
        assert_eq!(plan.component_instances, 256 + POOL_HEADROOM);
        assert_eq!(plan.stacks, plan.component_instances);
        assert_eq!(
            plan.core_instances,
            plan.component_instances * MAX_CORE_INSTANCES_PER_COMPONENT
        );
        assert_eq!(
            plan.memories,
            plan.component_instances * MAX_MEMORIES_PER_COMPONENT
        );
        assert_eq!(
            plan.tables,
            plan.component_instances * MAX_TABLES_PER_COMPONENT
        );
        assert_eq!(plan.max_memory_bytes, 64 << 20);
        assert_eq!(plan.memory_reservation(), 64 << 20);
        let huge = RuntimeLimits {
            max_memory_bytes: 16 << 30,
            ..RuntimeLimits::default()
        };
        assert_eq!(PoolPlan::new(&huge).unwrap().memory_reservation(), 4 << 30);
    }

    #[test]
    fn plan_rounds_memory_up_to_pages_and_rejects_zero() {
        let limits = RuntimeLimits {
            max_memory_bytes: (1 << 20) + 1,
            ..RuntimeLimits::default()
        };
        assert_eq!(
            PoolPlan::new(&limits).unwrap().max_memory_bytes,
            (1 << 20) + (64 << 10)
        );
        let zero = RuntimeLimits {
            max_concurrent_calls: 0,
            ..RuntimeLimits::default()
        };
        assert!(PoolPlan::new(&zero).is_err());
        let huge = RuntimeLimits {
            max_concurrent_calls: usize::MAX,
            ..RuntimeLimits::default()
        };
        assert!(PoolPlan::new(&huge).is_err());
    }

    #[test]
    fn engine_builds() {
        let limits = RuntimeLimits {
            max_concurrent_calls: 2,
            ..RuntimeLimits::default()
        };
        build_engine(&limits).unwrap();
    }
}
