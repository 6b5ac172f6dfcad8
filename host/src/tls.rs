//! The TLS clients of Airlock (the registry client, Redis over `rediss://`)
//! are rustls without a crypto provider of their own: they use the
//! process's, which is ring, already Airlock's for its own keys. No second
//! crypto stack (aws-lc) is linked.

/// Makes ring the process's rustls provider. Installing it fails only if
/// one is installed already, which is as good.
pub(crate) fn use_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
