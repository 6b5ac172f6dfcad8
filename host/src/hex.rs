//! Bytes as lowercase hexadecimal text, the way digests, key ids and token
//! ids are written in logs, files and on the wire.

use std::fmt::Write as _;

/// `bytes` as lowercase hex, two digits per byte.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_lowercase_digits_per_byte() {
        assert_eq!(super::encode(&[0, 0xab, 0x10, 0xff]), "00ab10ff");
        assert_eq!(super::encode(&[]), "");
    }
}
