//! A plain WASI command component (`wasi:cli/command`), not an Airlock
//! `tool-provider`. Airlock must skip it when loading its tools directory.

fn main() {
    println!("this component is a command, not an Airlock tool provider");
}
