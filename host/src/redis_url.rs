//! Redis URLs as Airlock takes them, for every store it keeps in Redis (the
//! task store, the single-use record of `requestState`): `redis://` only,
//! and described without their password.

/// A Redis URL without its password, for logs and errors, or why this
/// build refuses it (the URL itself is never echoed: it may hold a
/// password).
pub(crate) fn describe(url: &str) -> Result<String, &'static str> {
    let mut parsed =
        redis::parse_redis_url(url).ok_or("not a Redis URL (expected redis://HOST:PORT/DB)")?;
    match parsed.scheme() {
        "redis" => {}
        "rediss" | "valkeys" => {
            return Err(
                "TLS (rediss://) is not supported; reach Redis over a private network \
                 or through a TLS tunnel, with redis://",
            );
        }
        _ => return Err("only redis://HOST:PORT/DB URLs are supported"),
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(None);
    }
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_only_plain_redis_is_taken() {
        assert_eq!(
            describe("redis://user:secret@cache.internal:6380/2").unwrap(),
            "redis://user@cache.internal:6380/2"
        );
        assert_eq!(
            describe("redis://127.0.0.1:6379/0").unwrap(),
            "redis://127.0.0.1:6379/0"
        );
        for refused in [
            "rediss://user:secret@cache.internal:6380/2",
            "valkeys://user:secret@cache.internal:6380/2",
            "http://user:secret@cache.internal/",
            "secret",
        ] {
            let why = describe(refused).unwrap_err();
            assert!(!why.contains("secret"), "{why}");
        }
        assert!(
            describe("rediss://cache.internal/0")
                .unwrap_err()
                .contains("TLS")
        );
    }
}
