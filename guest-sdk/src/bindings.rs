//! Rust bindings of the `airlock:mcp` WIT package, world `tool-provider`.
//!
//! Generated at compile time by `wit-bindgen` from the `wit/` folder of the
//! workspace. Tool crates never run the generator themselves: they use the
//! types re-exported from [`crate::types`] and the [`crate::export!`] macro.

#![allow(missing_docs)]

wit_bindgen::generate!({
    path: "../wit",
    world: "tool-provider",
    // The export macro must be reachable from tool crates, through
    // `airlock_guest::export!`.
    pub_export_macro: true,
    export_macro_name: "__export_tool_provider",
    default_bindings_module: "airlock_guest::bindings",
    // Lets tests compare results with `assert_eq!`.
    additional_derives: [PartialEq],
});
