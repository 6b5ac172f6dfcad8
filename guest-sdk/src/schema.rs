//! JSON Schemas derived from Rust types with `schemars` (feature
//! `schemars`), for [`Tool::input`](crate::Tool::input) and
//! [`Tool::output`](crate::Tool::output).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// The JSON Schema (2020-12) of what `T` deserializes from: fields with
/// defaults and `Option`s are not required.
pub(crate) fn of_input<T: JsonSchema>() -> Value {
    tool_schema::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The JSON Schema (2020-12) of what `T` serializes to.
pub(crate) fn of_output<T: JsonSchema>() -> Value {
    tool_schema::<T>(SchemaSettings::draft2020_12().for_serialize())
}

/// The schema without the two keys a tool's schema does not need: `$schema`
/// (MCP's default dialect is 2020-12 already) and a `title` that is only
/// the Rust type's name (a `#[schemars(title = "...")]` is kept).
fn tool_schema<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let mut schema: Schema = settings
        .with(|settings| settings.meta_schema = None)
        .into_generator()
        .into_root_schema_for::<T>();
    if schema.get("title").and_then(Value::as_str) == Some(&T::schema_name()) {
        schema.remove("title");
    }
    schema.to_value()
}
