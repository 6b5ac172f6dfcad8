//! Who may use what: the caller of a request and the rules that admit it
//! to a component's tools, prompts and resources.
//!
//! A [`Caller`] is what authentication found: its principal, where that
//! came from ([`Source`]), its scopes, its groups and, for a JWT, its other
//! claims (bounded). A [`Rule`] is a list of alternatives, any of which
//! admits a caller; an alternative is one condition or several that must
//! all hold. Rules are written in manifests (`[access]`, `[tools.NAME]`,
//! `[prompts.NAME]`, `[resources."URI"]`, see [`ComponentRules`]) and in
//! the server's access policy (`--access-policy`, see [`ServerRules`]),
//! which decides with them what a caller may use, or only see
//! ([`Decision`]). With no rule anywhere every caller may use everything.
//! Rules do not apply on stdio: its caller is whoever started the process,
//! who could read the components anyway.

mod caller;
mod policy;
mod rule;

pub use self::caller::{
    ANONYMOUS, Caller, CallerLimits, JWT_PRINCIPAL_PREFIX, MAX_NAMES, STDIO, Source,
    TOKEN_PRINCIPAL_PREFIX,
};
pub use self::policy::{ComponentRules, Decision, Kind, ServerRules};
pub use self::rule::{Condition, Rule};

/// Says at start how callers are admitted to what the server serves: once
/// when no rule exists anywhere, and once on stdio when rules exist (they
/// do not apply there).
pub fn log_mode(has_rules: bool, stdio: bool) {
    if !has_rules {
        tracing::info!(
            "access: no rules; every authenticated caller may use every tool, prompt and resource"
        );
    } else if stdio {
        tracing::info!(
            "access: rules do not apply on stdio, whose caller is the local user who started airlock"
        );
    } else {
        tracing::info!("access: rules apply (--access-policy and the manifests' allow keys)");
    }
}
