//! Rust bindings of the `airlock:mcp` WIT package, world `server`.
//!
//! Generated at compile time by `wit-bindgen` from the `wit/` folder of the
//! workspace. Component crates never run the generator themselves: they use
//! the types re-exported from [`crate::types`] and the [`crate::export!`]
//! macro.

#![allow(missing_docs)]

wit_bindgen::generate!({
    path: "../wit",
    world: "server",
    // The export macro must be reachable from component crates, through
    // `airlock_guest::export!`.
    pub_export_macro: true,
    export_macro_name: "__export_server",
    default_bindings_module: "airlock_guest::bindings",
    // Lets tests compare results with `assert_eq!`.
    additional_derives: [PartialEq],
});
