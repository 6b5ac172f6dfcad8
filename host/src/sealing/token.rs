//! The plaintext of a `requestState` token, inside the sealed envelope
//! (`envelope.rs`, domain `airlock/request-state`, no associated data). No
//! cryptography here.
//!
//! ```text
//! token     = base64url-nopad( envelope )
//! payload   = issued_at         u64     unix seconds
//!           || expires_at       u64     unix seconds
//!           || round            u32
//!           || token_id         16 bytes, random
//!           || principal        u32 length || UTF-8
//!           || method           u32 length || UTF-8
//!           || target           u32 length || UTF-8
//!           || arguments_digest 32 bytes
//!           || guest_state      u8 0x00                     (none)
//!                             | u8 0x01 || u32 length || bytes (some)
//! ```
//!
//! Integers are big-endian. Decoding checks every length against what is
//! left, refuses flags other than 0 and 1, invalid UTF-8 and trailing bytes,
//! and never panics.

use super::envelope::{HEADER_LEN, TAG_LEN};

/// Random token id length.
pub(crate) const TOKEN_ID_LEN: usize = 16;
/// Payload bytes that do not depend on field contents (fixed fields, the
/// three length prefixes and the presence flag).
pub(crate) const PAYLOAD_FIXED_LEN: usize = 8 + 8 + 4 + TOKEN_ID_LEN + 3 * 4 + 32 + 1;
/// The smallest possible sealed token.
pub(crate) const MIN_ENVELOPE_LEN: usize = HEADER_LEN + PAYLOAD_FIXED_LEN + TAG_LEN;

/// The plaintext inside a token. Borrows its strings and state, from the
/// caller when sealing and from the decrypted buffer when opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Payload<'a> {
    pub issued_at: u64,
    pub expires_at: u64,
    pub round: u32,
    pub token_id: [u8; TOKEN_ID_LEN],
    pub principal: &'a str,
    pub method: &'a str,
    pub target: &'a str,
    pub arguments_digest: [u8; 32],
    pub guest_state: Option<&'a [u8]>,
}

impl<'a> Payload<'a> {
    /// The encoded length, or `None` if a variable field does not fit its
    /// u32 length prefix.
    pub fn encoded_len(&self) -> Option<usize> {
        let mut len = PAYLOAD_FIXED_LEN;
        for field in [
            self.principal.as_bytes(),
            self.method.as_bytes(),
            self.target.as_bytes(),
        ]
        .into_iter()
        .chain(self.guest_state)
        {
            u32::try_from(field.len()).ok()?;
            len = len.checked_add(field.len())?;
        }
        if self.guest_state.is_some() {
            len = len.checked_add(4)?;
        }
        Some(len)
    }

    /// Appends the encoding to `out`. The caller has checked
    /// [`Payload::encoded_len`]; a field too long for its prefix is refused.
    pub fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        out.extend_from_slice(&self.issued_at.to_be_bytes());
        out.extend_from_slice(&self.expires_at.to_be_bytes());
        out.extend_from_slice(&self.round.to_be_bytes());
        out.extend_from_slice(&self.token_id);
        put_bytes(out, self.principal.as_bytes())?;
        put_bytes(out, self.method.as_bytes())?;
        put_bytes(out, self.target.as_bytes())?;
        out.extend_from_slice(&self.arguments_digest);
        match self.guest_state {
            None => out.push(0),
            Some(state) => {
                out.push(1);
                put_bytes(out, state)?;
            }
        }
        Some(())
    }

    /// Decodes a payload, refusing anything but an exact encoding. The error
    /// says what was wrong, for the server log.
    pub fn decode(bytes: &'a [u8]) -> Result<Payload<'a>, PayloadError> {
        let mut r = Reader(bytes);
        let payload = Payload {
            issued_at: u64::from_be_bytes(r.array("issued_at")?),
            expires_at: u64::from_be_bytes(r.array("expires_at")?),
            round: u32::from_be_bytes(r.array("round")?),
            token_id: r.array("token_id")?,
            principal: r.text("principal")?,
            method: r.text("method")?,
            target: r.text("target")?,
            arguments_digest: r.array("arguments_digest")?,
            guest_state: match r.array::<1>("guest_state")?[0] {
                0 => None,
                1 => Some(r.bytes("guest_state")?),
                flag => return Err(PayloadError::BadFlag(flag)),
            },
        };
        if !r.0.is_empty() {
            return Err(PayloadError::TrailingBytes(r.0.len()));
        }
        Ok(payload)
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    let len = u32::try_from(bytes.len()).ok()?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
    Some(())
}

/// What is wrong with a payload that authenticated but does not decode
/// (a bug or a format mismatch between key holders, never a client's doing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// The payload ends inside this field (or its length prefix says so).
    #[error("payload ends inside field `{0}`")]
    Truncated(&'static str),
    /// This string field is not UTF-8.
    #[error("field `{0}` is not UTF-8")]
    NotUtf8(&'static str),
    /// The guest state presence flag is neither 0 nor 1.
    #[error("guest state flag is {0}, not 0 or 1")]
    BadFlag(u8),
    /// This many bytes follow the last field.
    #[error("{0} trailing bytes after the payload")]
    TrailingBytes(usize),
}

/// A cursor over the payload; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], PayloadError> {
        if self.0.len() < n {
            return Err(PayloadError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], PayloadError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], PayloadError> {
        let len = u32::from_be_bytes(self.array(what)?);
        let len = usize::try_from(len).map_err(|_| PayloadError::Truncated(what))?;
        self.take(len, what)
    }

    fn text(&mut self, what: &'static str) -> Result<&'a str, PayloadError> {
        std::str::from_utf8(self.bytes(what)?).map_err(|_| PayloadError::NotUtf8(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(state: Option<&[u8]>) -> Payload<'_> {
        Payload {
            issued_at: 0x0102_0304_0506_0708,
            expires_at: u64::MAX,
            round: 7,
            token_id: [9; TOKEN_ID_LEN],
            principal: "alice",
            method: "tools/call",
            target: "weather",
            arguments_digest: [0xaa; 32],
            guest_state: state,
        }
    }

    fn encoded(p: &Payload<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        p.encode(&mut out).unwrap();
        assert_eq!(Some(out.len()), p.encoded_len());
        out
    }

    #[test]
    fn layout_is_as_documented() {
        let bytes = encoded(&sample(Some(b"xy")));
        let mut expected = Vec::new();
        expected.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        expected.extend_from_slice(&[0xff; 8]);
        expected.extend_from_slice(&[0, 0, 0, 7]);
        expected.extend_from_slice(&[9; 16]);
        expected.extend_from_slice(b"\0\0\0\x05alice\0\0\0\x0atools/call\0\0\0\x07weather");
        expected.extend_from_slice(&[0xaa; 32]);
        expected.extend_from_slice(b"\x01\0\0\0\x02xy");
        assert_eq!(bytes, expected);
        let none = encoded(&sample(None));
        assert_eq!(none.last(), Some(&0));
        assert_eq!(none.len(), PAYLOAD_FIXED_LEN + 5 + 10 + 7);
    }

    #[test]
    fn round_trips() {
        for state in [None, Some(&b""[..]), Some(&b"state"[..])] {
            let p = sample(state);
            let bytes = encoded(&p);
            assert_eq!(Payload::decode(&bytes), Ok(p));
        }
    }

    #[test]
    fn every_truncation_and_extension_is_refused() {
        for state in [None, Some(&b"abc"[..])] {
            let bytes = encoded(&sample(state));
            for len in 0..bytes.len() {
                assert!(Payload::decode(&bytes[..len]).is_err(), "len {len}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(
                Payload::decode(&longer),
                Err(PayloadError::TrailingBytes(1))
            );
        }
    }

    #[test]
    fn bad_flags_lengths_and_utf8_are_refused() {
        let mut bytes = encoded(&sample(None));
        *bytes.last_mut().unwrap() = 2;
        assert_eq!(Payload::decode(&bytes), Err(PayloadError::BadFlag(2)));

        let mut bytes = encoded(&sample(None));
        // principal length prefix starts after 8+8+4+16 bytes.
        bytes[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(
            Payload::decode(&bytes),
            Err(PayloadError::Truncated("principal"))
        );

        let mut bytes = encoded(&sample(None));
        bytes[40] = 0xff; // first byte of "alice"
        assert_eq!(
            Payload::decode(&bytes),
            Err(PayloadError::NotUtf8("principal"))
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic generator; the point is coverage of odd shapes.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..300 {
            let mut buf = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push((x >> 56) as u8);
            }
            let _ = Payload::decode(&buf);
        }
    }
}
