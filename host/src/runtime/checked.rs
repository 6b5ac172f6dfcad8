//! A linked component whose exports were type-checked once, at load, and
//! what it lists.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Semaphore;
use wasmtime::Store;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, InstancePre, Lift, Lower, TypedFunc,
};

use super::bindings::{
    completions_export, prompts_export, resources_export, tools_export, wit, wit_prompts,
    wit_resources,
};
use super::store::CallState;
use crate::policy::Policy;

/// Everything a component serves, as its list functions described it
/// (not yet validated).
#[derive(Debug, Default, Clone)]
pub(crate) struct Listing {
    /// `list-tools`
    pub(crate) tools: Vec<wit::Tool>,
    /// `list-prompts`
    pub(crate) prompts: Vec<wit_prompts::Prompt>,
    /// `list-resources`
    pub(crate) resources: Vec<wit_resources::Resource>,
    /// `list-resource-templates`
    pub(crate) templates: Vec<wit_resources::ResourceTemplate>,
}

/// The generated lookups of each interface a component exports.
pub(super) struct Lookups {
    pub(super) tools: Option<tools_export::GuestIndices>,
    pub(super) prompts: Option<prompts_export::GuestIndices>,
    pub(super) resources: Option<resources_export::GuestIndices>,
    pub(super) completions: Option<completions_export::GuestIndices>,
}

impl Lookups {
    /// Finds the interfaces `pre` exports; an interface that is exported
    /// but lacks a function is an error, and so is exporting none.
    pub(super) fn new(pre: &InstancePre<CallState>) -> wasmtime::Result<Lookups> {
        let component = pre.component();
        let exports = |name: &str| component.get_export_index(None, name).is_some();
        let lookups = Lookups {
            tools: exports(TOOLS_INTERFACE)
                .then(|| tools_export::GuestIndices::new(pre))
                .transpose()?,
            prompts: exports(PROMPTS_INTERFACE)
                .then(|| prompts_export::GuestIndices::new(pre))
                .transpose()?,
            resources: exports(RESOURCES_INTERFACE)
                .then(|| resources_export::GuestIndices::new(pre))
                .transpose()?,
            completions: exports(COMPLETIONS_INTERFACE)
                .then(|| completions_export::GuestIndices::new(pre))
                .transpose()?,
        };
        if lookups.tools.is_none()
            && lookups.prompts.is_none()
            && lookups.resources.is_none()
            && lookups.completions.is_none()
        {
            wasmtime::bail!(
                "it exports none of `{TOOLS_INTERFACE}`, `{PROMPTS_INTERFACE}`, `{RESOURCES_INTERFACE}` and `{COMPLETIONS_INTERFACE}` (build it against world `airlock:mcp/server`)"
            );
        }
        Ok(lookups)
    }

    /// The indices of the per-call functions of the interfaces found.
    pub(super) fn exports(&self, pre: &InstancePre<CallState>) -> Exports {
        let component = pre.component();
        let find = |found: bool, iface: &str, func: &str| {
            let iface = component.get_export_index(None, iface).filter(|_| found)?;
            component.get_export_index(Some(&iface), func)
        };
        Exports {
            call_tool: find(self.tools.is_some(), TOOLS_INTERFACE, "call-tool"),
            get_prompt: find(self.prompts.is_some(), PROMPTS_INTERFACE, "get-prompt"),
            read_resource: find(
                self.resources.is_some(),
                RESOURCES_INTERFACE,
                "read-resource",
            ),
            complete: find(
                self.completions.is_some(),
                COMPLETIONS_INTERFACE,
                "complete",
            ),
        }
    }
}

/// The per-call exports of a component, by pre-resolved index.
#[derive(Clone, Copy, Default)]
pub(super) struct Exports {
    pub(super) call_tool: Option<ComponentExportIndex>,
    pub(super) get_prompt: Option<ComponentExportIndex>,
    pub(super) read_resource: Option<ComponentExportIndex>,
    pub(super) complete: Option<ComponentExportIndex>,
}

/// A linked component whose exports have been type-checked against the
/// `server` world, ready for calls.
///
/// The generated bindings type-check every export each time they
/// instantiate, which walks the whole outcome type (a few microseconds, a
/// sizeable share of a call). Export types belong to the component, not to
/// an instance, so checking once, at load, is enough: a `CheckedComponent`
/// can only be made by [`Runtime::list_component`] after the checked
/// instantiation succeeded, and each call then looks its function up by a
/// pre-resolved index without checking again.
#[derive(Clone)]
pub(crate) struct CheckedComponent {
    pub(super) instance_pre: InstancePre<CallState>,
    pub(super) source: Arc<Path>,
    pub(super) exports: Exports,
    /// What its calls are granted and limited to.
    pub(super) policy: Arc<Policy>,
    /// Its own concurrency limit, if its manifest sets one.
    pub(super) slots: Option<Arc<Semaphore>>,
}

impl CheckedComponent {
    /// The component's policy.
    pub(crate) fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The `airlock:mcp` interfaces it exports.
    pub(crate) fn exported_interfaces(&self) -> Vec<&'static str> {
        let exports = &self.exports;
        [
            (exports.call_tool.is_some(), "tools"),
            (exports.get_prompt.is_some(), "prompts"),
            (exports.read_resource.is_some(), "resources"),
            (exports.complete.is_some(), "completions"),
        ]
        .into_iter()
        .filter_map(|(exported, name)| exported.then_some(name))
        .collect()
    }

    /// A fresh instance's function `export`.
    pub(super) async fn instantiate<P, O>(
        &self,
        store: &mut Store<CallState>,
        export: Option<ComponentExportIndex>,
    ) -> wasmtime::Result<TypedFunc<P, (O,)>>
    where
        P: ComponentNamedList + Lower,
        O: Lift,
    {
        let export =
            export.ok_or_else(|| wasmtime::format_err!("the component lacks this export"))?;
        let instance = self.instance_pre.instantiate_async(&mut *store).await?;
        let func = instance
            .get_func(&mut *store, export)
            .ok_or_else(|| wasmtime::format_err!("the component lacks this export"))?;
        // SAFETY: a `CheckedComponent` is only made by `list_component`,
        // after the generated bindings type-checked every function of every
        // exported interface against the world, with the very parameter and
        // result types the `Runtime` methods above pass here; an export's
        // type is fixed by the component, so it is the same in every
        // instance.
        Ok(unsafe { TypedFunc::new_unchecked(func) })
    }
}

/// The exported interfaces, as the generated bindings name them.
const TOOLS_INTERFACE: &str = "airlock:mcp/tools@0.2.0";
const PROMPTS_INTERFACE: &str = "airlock:mcp/prompts@0.2.0";
const RESOURCES_INTERFACE: &str = "airlock:mcp/resources@0.2.0";
const COMPLETIONS_INTERFACE: &str = "airlock:mcp/completions@0.2.0";
