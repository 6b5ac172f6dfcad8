//! The signer identity a Fulcio signing certificate carries: its subject
//! alternative name (an email address or a URI) and the OIDC issuer that
//! vouched for it (Fulcio's extension `1.3.6.1.4.1.57264.1.8`, a DER
//! UTF8String, or the older `1.3.6.1.4.1.57264.1.1`, raw bytes).
//!
//! Only what the identity check reads is parsed here; the certificate's
//! chain, validity and signatures are checked by `webpki` (see
//! [`super::trust`]).

/// The DER of the OID `1.3.6.1.4.1.57264.1.8` (OIDC issuer, v2).
const ISSUER_V2: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x08];
/// The DER of the OID `1.3.6.1.4.1.57264.1.1` (OIDC issuer, v1).
const ISSUER_V1: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x01];
/// The DER of the OID `2.5.29.17` (subject alternative name).
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// Who a signing certificate was issued to, and by which OIDC issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Signer {
    /// The OIDC issuer, if the certificate names one.
    pub(super) issuer: Option<String>,
    /// Its email and URI subject alternative names.
    pub(super) subjects: Vec<String>,
}

/// The signer named by the DER certificate `der`; `None` if it is not a
/// well-formed certificate.
pub(super) fn signer(der: &[u8]) -> Option<Signer> {
    let (certificate, _) = element(der, 0x30)?;
    let (tbs, _) = element(certificate, 0x30)?;
    let mut rest = tbs;
    let mut extensions = None;
    while !rest.is_empty() {
        let (tag, content, after) = any(rest)?;
        if tag == 0xa3 {
            extensions = Some(element(content, 0x30)?.0);
        }
        rest = after;
    }
    let mut signer = Signer {
        issuer: None,
        subjects: Vec::new(),
    };
    let mut rest = extensions?;
    while !rest.is_empty() {
        let (extension, after) = element(rest, 0x30)?;
        rest = after;
        let (oid, mut fields) = element(extension, 0x06)?;
        if let Some((_, after)) = element(fields, 0x01) {
            fields = after; // `critical`
        }
        let (value, _) = element(fields, 0x04)?;
        if oid == ISSUER_V2 {
            let (text, _) = element(value, 0x0c)?;
            signer.issuer = Some(String::from_utf8(text.to_vec()).ok()?);
        } else if oid == ISSUER_V1 && signer.issuer.is_none() {
            signer.issuer = Some(String::from_utf8(value.to_vec()).ok()?);
        } else if oid == SUBJECT_ALT_NAME {
            let (mut names, _) = element(value, 0x30)?;
            while !names.is_empty() {
                let (tag, name, after) = any(names)?;
                names = after;
                // [1] rfc822Name, [6] uniformResourceIdentifier (IA5String).
                if tag == 0x81 || tag == 0x86 {
                    signer.subjects.push(String::from_utf8(name.to_vec()).ok()?);
                }
            }
        }
    }
    Some(signer)
}

/// The content of the DER element at the start of `input` if its tag is
/// `tag`, and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = any(input)?;
    (found == tag).then_some((content, rest))
}

/// The tag and content of the DER element at the start of `input`, and
/// what follows it (single-byte tags, definite lengths).
fn any(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (bytes, after) = rest.split_at(count);
        rest = after;
        bytes
            .iter()
            .fold(0usize, |len, byte| (len << 8) | usize::from(*byte))
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_e2e::sigstore::TestSigstore;

    #[test]
    fn the_issuer_and_the_subject_are_read_and_garbage_is_refused() {
        let sigstore = TestSigstore::new();
        let (der, _) = sigstore.certificate("https://issuer.example.com", "dev@example.com");
        assert_eq!(
            signer(&der),
            Some(Signer {
                issuer: Some("https://issuer.example.com".into()),
                subjects: vec!["dev@example.com".into()],
            })
        );
        let (der, _) = sigstore.certificate("https://ci.example.com", "https://example.com/ci");
        assert_eq!(signer(&der).unwrap().subjects, ["https://example.com/ci"]);
        assert_eq!(signer(&der[..der.len() / 2]), None);
        assert_eq!(signer(b"\x30\x00"), None);
    }
}
