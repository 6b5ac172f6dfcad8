//! Redis URLs as Airlock takes them, for every store it keeps in Redis (the
//! task store, the single-use record of `requestState`): `redis://` or
//! `rediss://` (TLS), with a password (`redis://:PASSWORD@HOST`, or
//! `USER:PASSWORD@` for an ACL user) sent with `AUTH` on every connection;
//! described without their password.

use redis::Client;

/// A Redis URL without its password, for logs and errors, or why it is
/// refused (the URL itself is never echoed: it may hold a password).
pub(crate) fn describe(url: &str) -> Result<String, &'static str> {
    let mut parsed =
        redis::parse_redis_url(url).ok_or("not a Redis URL (expected redis://HOST:PORT/DB)")?;
    match parsed.scheme() {
        "redis" | "rediss" => {}
        _ => {
            return Err(
                "only redis://HOST:PORT/DB and rediss://HOST:PORT/DB (TLS) URLs are supported",
            );
        }
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(None);
    }
    Ok(parsed.to_string())
}

/// A client for the Redis at `url` (checked by [`describe`] first). Over
/// `rediss://` the server's certificate must chain to a root the system
/// trusts (or those of `SSL_CERT_FILE` / `SSL_CERT_DIR`) and name the host
/// of the URL; the TLS is rustls with the process's ring provider.
pub(crate) fn client(url: &str) -> redis::RedisResult<Client> {
    crate::tls::use_ring();
    Client::open(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_only_redis_and_rediss_are_taken() {
        assert_eq!(
            describe("redis://user:secret@cache.internal:6380/2").unwrap(),
            "redis://user@cache.internal:6380/2"
        );
        assert_eq!(
            describe("rediss://:secret@cache.internal:6380/2").unwrap(),
            "rediss://cache.internal:6380/2"
        );
        assert_eq!(
            describe("redis://127.0.0.1:6379/0").unwrap(),
            "redis://127.0.0.1:6379/0"
        );
        for refused in [
            "valkeys://user:secret@cache.internal:6380/2",
            "redis+unix:///tmp/secret.sock",
            "http://user:secret@cache.internal/",
            "secret",
        ] {
            let why = describe(refused).unwrap_err();
            assert!(!why.contains("secret"), "{why}");
        }
    }
}
