//! Copies of a built component with some of its bytes replaced: how the
//! tests make components that differ in what they list (a tool's name, a
//! `_meta` text) from one test guest, since listing runs with nothing
//! granted and a component cannot be told anything else.

/// `bytes` with `replacement` in place of `placeholder`, which must appear
/// exactly once and be as long as `replacement` (the component's layout
/// stays as built).
#[track_caller]
pub fn replace_once(bytes: &[u8], placeholder: &[u8], replacement: &[u8]) -> Vec<u8> {
    assert_eq!(
        placeholder.len(),
        replacement.len(),
        "a replacement as long as the placeholder"
    );
    let found: Vec<usize> = bytes
        .windows(placeholder.len())
        .enumerate()
        .filter(|(_, window)| *window == placeholder)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the placeholder appears exactly once in the component"
    );
    let mut stamped = bytes.to_vec();
    stamped[found[0]..found[0] + replacement.len()].copy_from_slice(replacement);
    stamped
}
