//! Test-only guest for loading many distinct components (the start-up
//! benchmark, the parallel-loading test): one tool, `numbered_000`, that
//! answers with its own name.
//!
//! The name is [`NAME`], whose last three characters are a placeholder. The
//! tests write copies of the built component with other digits in their
//! place (`airlock_e2e::numbered`): each copy is a distinct component (other
//! bytes, so another compile-cache entry) serving a tool of its own name, as
//! a directory of many different tools would be.

use airlock_guest::{Call, Outcome, Tool, Tools};

/// The tool's name; its last three characters are the placeholder.
const NAME: &str = "numbered_000";

/// [`NAME`], read from the component's memory where the copies stamp it:
/// used directly, the compiler may fold it into the code (comparing or
/// copying its bytes as immediates), which stamping does not change.
fn name() -> &'static str {
    std::hint::black_box(NAME)
}

struct Numbered;

impl Tools for Numbered {
    fn list() -> Vec<Tool> {
        vec![Tool::new(name(), "Answers with its own name.").read_only()]
    }

    fn call(call: Call) -> Outcome {
        if call.name() == name() {
            Outcome::text(name())
        } else {
            Outcome::unknown_tool(call.name())
        }
    }
}

airlock_guest::export!(Numbered);
