//! Errors of the TOML files a person writes (manifests, the access
//! policy): each names the file, the line and the offending key.

use std::path::Path;

/// A TOML error in `text`, read from `file`: the message names the file,
/// the line and the offending key (by quoting the line).
pub(crate) fn toml_error(err: &toml::de::Error, text: &str, file: &Path) -> String {
    let message = err.message().trim_end();
    let message = renamed_key(message).unwrap_or_else(|| message.to_owned());
    match err.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let line = text[..start].matches('\n').count() + 1;
            let quoted = text.lines().nth(line - 1).unwrap_or("").trim();
            format!("{}:{line}: {message} (at `{quoted}`)", file.display())
        }
        None => format!("{}: {message}", file.display()),
    }
}

/// The `[limits]` keys that carried their unit in their name, with the
/// form that replaced them.
const RENAMED_KEYS: [(&str, &str); 3] = [
    ("memory-mib", "memory = \"32MiB\""),
    ("timeout-ms", "timeout = \"2s\""),
    ("max-output-kib", "max-output = \"256KiB\""),
];

/// For serde's "unknown field" error about an old key, a message naming
/// its new form.
fn renamed_key(message: &str) -> Option<String> {
    RENAMED_KEYS.iter().find_map(|(old, new)| {
        message
            .starts_with(&format!("unknown field `{old}`"))
            .then(|| {
                format!("`{old}` is no longer a key: write the value with its unit, e.g. {new}")
            })
    })
}
