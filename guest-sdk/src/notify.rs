//! Change notifications, over the host's `notify-list-changed` and
//! `notify-resource-updated` imports.
//!
//! A component whose lists depend on something outside it (the time, a
//! fetched catalogue) reports a change; Airlock lists the component again
//! and tells the clients that subscribed. Outside WebAssembly (unit tests on
//! the build machine) notifications go to stderr instead.
//!
//! ```no_run
//! use airlock_guest::notify::{self, ListKind};
//!
//! notify::list_changed(ListKind::Tools);
//! notify::resource_updated("test://watched-resource");
//! ```

pub use crate::bindings::host::ListKind;

/// Reports that this component's list of `kind` (tools, prompts, or
/// resources and resource templates) has changed.
pub fn list_changed(kind: ListKind) {
    imp::list_changed(kind);
}

/// Reports that the resource at `uri` has changed; clients that subscribed
/// to it are told.
pub fn resource_updated(uri: impl AsRef<str>) {
    imp::resource_updated(uri.as_ref());
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::ListKind;
    use crate::bindings::host;

    pub fn list_changed(kind: ListKind) {
        host::notify_list_changed(kind);
    }

    pub fn resource_updated(uri: &str) {
        host::notify_resource_updated(uri);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::ListKind;

    pub fn list_changed(kind: ListKind) {
        eprintln!("[notify] {kind:?} list changed");
    }

    pub fn resource_updated(uri: &str) {
        eprintln!("[notify] resource updated: {uri}");
    }
}
