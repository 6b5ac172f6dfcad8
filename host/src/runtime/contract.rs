//! The version of the tool contract (`airlock:mcp`) a component was built
//! against: a component built against another version cannot be linked,
//! so it is refused at load with a line that says what to do.

use wasmtime::Engine;
use wasmtime::component::Component;

/// The contract's package, as interface names start (`airlock:mcp/tools@…`).
const PACKAGE: &str = "airlock:mcp/";

/// The version of the contract this host serves.
pub const VERSION: &str = "0.2.0";

/// Refuses `component` if it imports or exports an `airlock:mcp` interface
/// of another version than [`VERSION`].
pub(crate) fn check(component: &Component, engine: &Engine) -> Result<(), String> {
    let ty = component.component_type();
    let imports = ty.imports(engine).map(|(name, _)| name);
    let exports = ty.exports(engine).map(|(name, _)| name);
    for name in imports.chain(exports) {
        if let Some(version) = other_version(name) {
            return Err(format!(
                "it was built against airlock:mcp@{version}; rebuild it with the SDK of this \
                 version (airlock:mcp@{VERSION})"
            ));
        }
    }
    Ok(())
}

/// The version `name` names, if it is an `airlock:mcp` interface of
/// another version than [`VERSION`].
fn other_version(name: &str) -> Option<&str> {
    let (_, version) = name.strip_prefix(PACKAGE)?.split_once('@')?;
    (version != VERSION).then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_airlock_interfaces_of_another_version_are_refused() {
        assert_eq!(other_version("airlock:mcp/tools@0.1.0"), Some("0.1.0"));
        assert_eq!(other_version("airlock:mcp/host@0.2.0"), None);
        assert_eq!(other_version("wasi:io/streams@0.2.0"), None);
        assert_eq!(other_version("wasi:cli/environment@0.1.0"), None);
    }
}
