//! What a component needs before it runs a line of code: its size on disk
//! and the linear memory its instances start with (the memories its core
//! modules define, at their initial sizes). `airlock inspect` reports both,
//! so that an operator can size `--max-memory` or a manifest's memory limit
//! before a call fails for want of it; an interpreter's component (Python,
//! JavaScript) starts with a heap snapshot of several MiB.

use std::path::Path;

use wasmparser::{Parser, Payload};

/// A component file's size and its instances' initial linear memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes of the component file.
    pub file_bytes: u64,
    /// Bytes of linear memory every instance starts with, over all the
    /// memories its core modules define.
    pub initial_memory_bytes: u64,
    /// How many core modules it holds.
    pub core_modules: usize,
}

impl Footprint {
    /// Reads and parses the component at `path`, a regular file of at most
    /// `limit` bytes with a component's header (blocking).
    pub fn of(path: &Path, limit: u64) -> Result<Footprint, String> {
        let wasm = super::component::read_component(path, limit)?;
        Footprint::of_bytes(&wasm)
    }

    /// Parses a component (or core module) in memory.
    pub fn of_bytes(wasm: &[u8]) -> Result<Footprint, String> {
        let mut footprint = Footprint {
            file_bytes: wasm.len() as u64,
            initial_memory_bytes: 0,
            core_modules: 0,
        };
        // `parse_all` walks nested modules and components too.
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(|err| format!("it does not parse: {err}"))? {
                Payload::ModuleSection { .. } => footprint.core_modules += 1,
                Payload::MemorySection(memories) => {
                    for memory in memories {
                        let memory = memory.map_err(|err| format!("it does not parse: {err}"))?;
                        let page = 1u64 << memory.page_size_log2.unwrap_or(16);
                        footprint.initial_memory_bytes = footprint
                            .initial_memory_bytes
                            .saturating_add(memory.initial.saturating_mul(page));
                    }
                }
                _ => {}
            }
        }
        Ok(footprint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core module defining one memory of three 64 KiB pages.
    const MODULE_WITH_MEMORY: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x05, 0x03, 0x01, 0x00, 0x03, // memory section: one memory, min 3
    ];

    #[test]
    fn counts_defined_memories_at_their_initial_size() {
        let footprint = Footprint::of_bytes(MODULE_WITH_MEMORY).unwrap();
        assert_eq!(footprint.initial_memory_bytes, 3 * 65536);
        assert_eq!(footprint.file_bytes, MODULE_WITH_MEMORY.len() as u64);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Footprint::of_bytes(b"\0asm\x01\0\0\0\x05\xff").is_err());
    }
}
