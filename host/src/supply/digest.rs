//! SHA-256 digests as OCI writes them: `sha256:<64 lowercase hex digits>`.

/// `sha256:<hex>` of `bytes`.
pub(super) fn sha256_of(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    format!("sha256:{}", hex(digest.as_ref()))
}

/// Lower-case hexadecimal of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The hex of a `sha256:<64 lowercase hex digits>` digest, if it is one.
pub(super) fn sha256_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then_some(hex)
}
