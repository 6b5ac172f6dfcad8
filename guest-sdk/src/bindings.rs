//! Rust bindings of the `airlock:mcp` WIT package (`wit/` in this crate).
//!
//! Generated at compile time by `wit-bindgen`, one module per exported
//! interface, each from the world that exports only that interface
//! (`tool-provider`, `prompt-provider`, `resource-provider`,
//! `completion-provider`). The imported interfaces (`types`, `host`) are
//! generated once, in [`tools`], and the other three modules use those
//! types (`with`), so a `Tool` or a `Round` is one Rust type everywhere.
//!
//! Each module has its own export macro, and each macro embeds its world in
//! the component it is expanded in. [`crate::export!`] expands only the
//! macros of the interfaces a component names, so the component exports
//! those and nothing else. Component crates never run the generator
//! themselves: they use the types re-exported from [`crate::types`] and the
//! [`crate::export!`] macro.

#![allow(missing_docs)]

/// World `tool-provider`: the `tools` export, and the imported `types` and
/// `host` every other module shares.
pub mod tools {
    wit_bindgen::generate!({
        path: "wit",
        world: "tool-provider",
        // The export macro must be reachable from component crates, through
        // `airlock_guest::export!`.
        pub_export_macro: true,
        export_macro_name: "__export_tools",
        default_bindings_module: "airlock_guest::bindings::tools",
        // Lets tests compare results with `assert_eq!`.
        additional_derives: [PartialEq],
    });
}

/// World `prompt-provider`: the `prompts` export.
pub mod prompts {
    wit_bindgen::generate!({
        path: "wit",
        world: "prompt-provider",
        with: {
            "airlock:mcp/types@0.2.0": crate::bindings::tools::airlock::mcp::types,
            "airlock:mcp/host@0.2.0": crate::bindings::tools::airlock::mcp::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_prompts",
        default_bindings_module: "airlock_guest::bindings::prompts",
        additional_derives: [PartialEq],
    });
}

/// World `resource-provider`: the `resources` export.
pub mod resources {
    wit_bindgen::generate!({
        path: "wit",
        world: "resource-provider",
        with: {
            "airlock:mcp/types@0.2.0": crate::bindings::tools::airlock::mcp::types,
            "airlock:mcp/host@0.2.0": crate::bindings::tools::airlock::mcp::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_resources",
        default_bindings_module: "airlock_guest::bindings::resources",
        additional_derives: [PartialEq],
    });
}

/// World `completion-provider`: the `completions` export.
pub mod completions {
    wit_bindgen::generate!({
        path: "wit",
        world: "completion-provider",
        // `completions` uses no shared type.
        with: {
            "airlock:mcp/host@0.2.0": crate::bindings::tools::airlock::mcp::host,
        },
        pub_export_macro: true,
        export_macro_name: "__export_completions",
        default_bindings_module: "airlock_guest::bindings::completions",
        additional_derives: [PartialEq],
    });
}

pub use tools::airlock::mcp::{host, types};
