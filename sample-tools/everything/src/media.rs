//! The binary payloads of the fixture, as the suite's reference gives them.

/// A 1×1 PNG, in base64 as the suite's reference fixture has it.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A tiny WAV clip, in base64 as the suite's reference fixture has it.
const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The PNG's bytes (the host base64-encodes them again on the wire).
pub fn png() -> Vec<u8> {
    decode_base64(PNG_BASE64)
}

/// The WAV's bytes.
pub fn wav() -> Vec<u8> {
    decode_base64(WAV_BASE64)
}

/// Decodes standard base64 (RFC 4648 alphabet, `=` padding).
///
/// # Panics
///
/// On a character outside the alphabet: the inputs are the constants above.
fn decode_base64(text: &str) -> Vec<u8> {
    fn sextet(c: u8) -> u32 {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not a base64 character: {:?}", c as char),
        };
        u32::from(value)
    }

    let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().take_while(|&c| c != b'=') {
        acc = (acc << 6) | sextet(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_fixture_payloads() {
        let png = png();
        assert_eq!(png.len(), 70);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[png.len() - 8..], b"IEND\xaeB`\x82");

        let wav = wav();
        assert_eq!(wav.len(), 44);
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
    }

    #[test]
    fn decodes_every_padding() {
        assert_eq!(decode_base64("SGVsbG8="), b"Hello");
        assert_eq!(decode_base64("SGVsbG8h"), b"Hello!");
        assert_eq!(decode_base64("SGk="), b"Hi");
        assert_eq!(decode_base64("SA=="), b"H");
        assert_eq!(decode_base64("+/8="), [0xfb, 0xff]);
        assert!(decode_base64("").is_empty());
    }
}
