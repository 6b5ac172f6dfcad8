//! Fuzz target: opening a client's `requestState`.
//!
//! At start-up a sealer with a fixed two-key ring seals a few valid tokens
//! (with and without guest state, with the first and the second key, for
//! several bindings) and a few tokens that must never open although they are
//! well formed (sealed with a key outside the ring, expired, issued in the
//! future). Each input then builds one token string and one binding:
//!
//! ```text
//! data[0] % 5   mode: 0 arbitrary text, 1 edit the token text,
//!               2 edit the decoded token bytes (re-encoded as base64url),
//!               3 cut the token and append text, 4 parse a key ring
//! data[1]       which sealed token to start from (modes 1-3)
//! data[2]       which binding to open it with
//! data[3..]     the text (0, 3, 4) or edits of 4 bytes each (1, 2):
//!               kind (overwrite / insert / delete), position (u16), byte
//! ```
//!
//! `open` must never panic; it must accept a token only if the string is
//! one of the valid sealed tokens and the binding is the one it was sealed
//! for, and then return exactly what was sealed; it must accept every valid
//! token with its own binding; and every refusal must be a client error with
//! the one generic client message. Times are fixed (`seal_at` / `open_at`,
//! the same code as `seal` / `open` with the clock read) so that runs are
//! reproducible up to the random nonces.

#![no_main]

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use airlock::sealing::{
    Binding, CLOCK_SKEW, INVALID_STATE_MESSAGE, KeyRing, Redemption, RedemptionStore, StateLimits,
    StateSealer, StoreError, TokenId,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const KEY_A: [u8; 32] = [0x11; 32];
const KEY_B: [u8; 32] = [0x22; 32];
const KEY_FOREIGN: [u8; 32] = [0x33; 32];
const NOW: u64 = 1_785_000_000;
const TTL: Duration = Duration::from_secs(600);

struct Sealed {
    token: String,
    /// Index into `Fixture::bindings`.
    binding: usize,
    /// `Some((round, guest_state))` when the token must open with its binding.
    opens_as: Option<(u32, Option<Vec<u8>>)>,
}

/// A single-use record that remembers nothing between inputs: it notes each
/// id it is asked to redeem, and always answers "first use".
#[derive(Default)]
struct Spy(Mutex<Vec<TokenId>>);

impl RedemptionStore for Spy {
    fn redeem(&self, id: &TokenId, _expires_at: u64, _now: u64) -> Result<Redemption, StoreError> {
        self.0.lock().unwrap().push(*id);
        Ok(Redemption::First)
    }
}

impl Spy {
    fn take(&self) -> Vec<TokenId> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct Fixture {
    sealer: StateSealer,
    /// The same keys in single-use mode, recording into `spy`.
    single_use: StateSealer,
    spy: Arc<Spy>,
    bindings: Vec<Binding<'static>>,
    tokens: Vec<Sealed>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let sealer = |keys: &[[u8; 32]]| {
        StateSealer::new(
            KeyRing::from_keys(keys).expect("distinct keys"),
            TTL,
            StateLimits::default(),
        )
    };
    let main = sealer(&[KEY_A, KEY_B]);
    let second_key = sealer(&[KEY_B]);
    let foreign = sealer(&[KEY_FOREIGN]);

    let args = json!({"location": "New York", "days": 3});
    let bindings = vec![
        Binding::new("iss|alice|client-1", "tools/call", "get_weather", &args),
        Binding::new("iss|bob|client-1", "tools/call", "get_weather", &args),
        Binding::new("iss|alice|client-1", "prompts/get", "get_weather", &args),
        Binding::new("iss|alice|client-1", "tools/call", "get_forecast", &args),
        Binding::new(
            "iss|alice|client-1",
            "tools/call",
            "get_weather",
            &json!({}),
        ),
        Binding::new("", "resources/read", "file:///ü/ñ", &json!(null)),
    ];
    let big_state: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    let seal = |s: &StateSealer, b: usize, round: u32, state: Option<&[u8]>, at: u64| {
        s.seal_at(&bindings[b], round, state, at).expect("seals")
    };
    let valid = |token: String, binding: usize, round: u32, state: Option<&[u8]>| Sealed {
        token,
        binding,
        opens_as: Some((round, state.map(<[u8]>::to_vec))),
    };
    let never = |token: String, binding: usize| Sealed {
        token,
        binding,
        opens_as: None,
    };
    let tokens = vec![
        valid(seal(&main, 0, 1, None, NOW), 0, 1, None),
        valid(
            seal(&main, 0, 2, Some(b"step=2;city=New York"), NOW),
            0,
            2,
            Some(b"step=2;city=New York"),
        ),
        valid(seal(&main, 3, 7, Some(b""), NOW), 3, 7, Some(b"")),
        valid(
            seal(&main, 1, u32::MAX, Some(&big_state), NOW - 1),
            1,
            u32::MAX,
            Some(&big_state),
        ),
        valid(seal(&second_key, 0, 1, Some(b"x"), NOW), 0, 1, Some(b"x")),
        valid(seal(&main, 5, 3, None, NOW + 30), 5, 3, None),
        never(seal(&foreign, 0, 1, None, NOW), 0),
        never(seal(&main, 0, 1, None, NOW - TTL.as_secs()), 0),
        never(
            seal(&main, 0, 1, Some(b"later"), NOW + CLOCK_SKEW.as_secs() + 1),
            0,
        ),
    ];
    // Sanity: each token opens exactly as expected, with its binding only.
    for t in &tokens {
        for (b, binding) in bindings.iter().enumerate() {
            let opened = main.open_at(&t.token, binding, NOW);
            match (&t.opens_as, b == t.binding) {
                (Some((round, state)), true) => {
                    let opened = opened.expect("a valid token opens");
                    assert_eq!((&opened.round, &opened.guest_state), (round, state));
                }
                _ => assert!(opened.is_err()),
            }
        }
    }
    let spy = Arc::new(Spy::default());
    Fixture {
        sealer: main,
        single_use: sealer(&[KEY_A, KEY_B]).with_redemption_store(spy.clone()),
        spy,
        bindings,
        tokens,
    }
});

/// Applies 4-byte edits: kind, position (u16, big-endian), byte.
fn edit(mut bytes: Vec<u8>, ops: &[u8]) -> Vec<u8> {
    for op in ops.chunks_exact(4) {
        let pos = usize::from(u16::from_be_bytes([op[1], op[2]]));
        match op[0] % 3 {
            0 if !bytes.is_empty() => {
                let i = pos % bytes.len();
                bytes[i] = op[3];
            }
            1 => {
                let i = pos % (bytes.len() + 1);
                bytes.insert(i, op[3]);
            }
            2 if !bytes.is_empty() => {
                let i = pos % bytes.len();
                bytes.remove(i);
            }
            _ => {}
        }
    }
    bytes
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let f = &*FIXTURE;
    let [mode, base, binding, rest @ ..] = data else {
        return;
    };
    let base = &f.tokens[usize::from(*base) % f.tokens.len()];
    let binding_index = usize::from(*binding) % f.bindings.len();
    let token = match mode % 5 {
        0 => text(rest),
        1 => text(&edit(base.token.clone().into_bytes(), rest)),
        2 => {
            let bytes = URL_SAFE_NO_PAD
                .decode(&base.token)
                .expect("sealed tokens decode");
            URL_SAFE_NO_PAD.encode(edit(bytes, rest))
        }
        3 => {
            let cut = rest.first().map_or(0, |&c| usize::from(c)) % (base.token.len() + 1);
            let mut token = base.token[..cut].to_owned();
            token.push_str(&text(rest.get(1..).unwrap_or_default()));
            token
        }
        _ => {
            if let Ok(ring) = KeyRing::parse(&text(rest)) {
                assert!(!ring.key_ids().is_empty());
                assert_eq!(ring.key_ids()[0], ring.sealing_key_id());
            }
            return;
        }
    };

    let expected = f
        .tokens
        .iter()
        .find(|t| t.token == token && t.binding == binding_index && t.opens_as.is_some());
    let binding = &f.bindings[binding_index];
    let result = f.sealer.open_at(&token, binding, NOW);

    // Single-use mode: the same verdict, and only a token that passes every
    // check reaches the record (a forgery never spends a genuine id).
    f.spy.take();
    let single = f.single_use.open_at(&token, binding, NOW);
    let redeemed = f.spy.take();
    match (&result, &single) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            assert_eq!(redeemed, [TokenId::from_bytes(a.token_id)]);
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b);
            assert!(redeemed.is_empty(), "a refused token reached the record");
        }
        _ => panic!("single-use mode changed the verdict: {result:?} vs {single:?}"),
    }

    match result {
        Ok(opened) => {
            let Some(Sealed {
                opens_as: Some((round, state)),
                ..
            }) = expected
            else {
                panic!(
                    "accepted a token that is not a valid sealed one for this binding: {token:?} \
                     (binding {binding_index})"
                );
            };
            assert_eq!((&opened.round, &opened.guest_state), (round, state));
        }
        Err(e) => {
            assert!(
                expected.is_none(),
                "refused a valid token with its own binding: {e}"
            );
            assert!(e.is_client_error(), "{e:?}");
            assert_eq!(e.client_message(), INVALID_STATE_MESSAGE);
        }
    }
});
