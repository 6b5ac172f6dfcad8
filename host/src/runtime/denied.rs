//! Imports a component may name but its manifest does not grant.
//!
//! A component without an `[http]` allow list gets no `wasi:http` at all:
//! if it imports it (a library may link it in for a path the tool never
//! takes), every `wasi:http` function is linked as one that fails the call
//! with [`NotGranted`] the moment it is called, before the host creates
//! anything. So the component loads and serves what does not need HTTP,
//! and the host holds no HTTP state (header fields, bodies, streams) for it.

use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceType};

use super::store::CallState;

/// The import names of `wasi:http`, whatever its version.
const HTTP_IMPORTS: &str = "wasi:http/";

/// The error a call fails with when it calls an import its manifest does
/// not grant; recognised with `wasmtime::Error::is`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{import}` is not granted: {reason}")]
pub(crate) struct NotGranted {
    /// The import, as `interface#function`.
    pub(crate) import: String,
    /// What the manifest would have to grant.
    pub(crate) reason: &'static str,
}

/// What a denied import's resources are on the host: never made.
struct DeniedResource;

/// Links every `wasi:http` function `component` imports into `linker` as
/// one that fails with [`NotGranted`]. `linker` must not link `wasi:http`
/// itself.
pub(crate) fn deny_http(
    linker: &mut Linker<CallState>,
    engine: &Engine,
    component: &Component,
) -> wasmtime::Result<()> {
    let ty = component.component_type();
    // Resources other imports define (`wasi:io`'s pollable and streams,
    // which `wasi:http/types` uses): those are linked already, as they are.
    let mut defined_elsewhere = Vec::new();
    for (name, import) in ty.imports(engine) {
        if let ComponentItem::ComponentInstance(instance) = import.ty
            && !name.starts_with(HTTP_IMPORTS)
        {
            defined_elsewhere.extend(instance.exports(engine).filter_map(|(_, export)| {
                match export.ty {
                    ComponentItem::Resource(resource) => Some(resource),
                    _ => None,
                }
            }));
        }
    }
    for (name, import) in ty.imports(engine) {
        if !name.starts_with(HTTP_IMPORTS) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = import.ty else {
            continue;
        };
        let mut linked = linker.instance(name)?;
        for (item, export) in instance.exports(engine) {
            match export.ty {
                ComponentItem::Resource(resource) if defined_elsewhere.contains(&resource) => {}
                ComponentItem::ComponentFunc(_) => {
                    let denied = NotGranted {
                        import: format!("{name}#{item}"),
                        reason: "outbound HTTP needs an [http] allow list in the component's manifest",
                    };
                    linked.func_new(item, move |_, _, _, _| {
                        Err(wasmtime::Error::new(denied.clone()))
                    })?;
                }
                ComponentItem::Resource(_) => {
                    linked.resource(item, ResourceType::host::<DeniedResource>(), |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}
