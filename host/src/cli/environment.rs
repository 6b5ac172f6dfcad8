//! Every option's environment variable, derived from its long name, so no
//! option can lack one: `--call-timeout` is `AIRLOCK_CALL_TIMEOUT`. In the
//! environment (and on the command line) lists are comma-separated, and
//! flags take `true`/`false` (also `yes`/`no`, `on`/`off`, `1`/`0`).

use std::collections::BTreeSet;

use clap::builder::BoolishValueParser;
use clap::{Arg, ArgAction, Command};

/// The environment variable of the option `--long`.
pub fn variable(long: &str) -> String {
    format!("AIRLOCK_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// The variable that filters the log (read by the logger, not an option).
pub(super) const LOG_FILTER: &str = "AIRLOCK_LOG";

/// The variables read besides the options' own: the log filter, and
/// secrets better kept off a command line.
const NON_OPTION_VARIABLES: [&str; 4] = [
    LOG_FILTER,
    crate::sealing::STATE_KEYS_ENV,
    crate::supply::credentials::TOKEN_ENV,
    crate::supply::credentials::BASIC_AUTH_ENV,
];

/// The names among `names` that look like Airlock's (`AIRLOCK_*`) but are
/// neither an option's variable nor one of [`NON_OPTION_VARIABLES`]: most likely a typo,
/// which would otherwise be ignored without a word.
pub(super) fn unknown_variables(
    command: &Command,
    names: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<String> {
    let known = every_variable(command);
    names
        .into_iter()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.starts_with("AIRLOCK_") && !known.contains(name))
        .collect()
}

/// The environment variable of every option of every subcommand of
/// `command` (made by [`with_variables`]), and the [`NON_OPTION_VARIABLES`].
pub(super) fn every_variable(command: &Command) -> BTreeSet<String> {
    command
        .get_subcommands()
        .flat_map(Command::get_arguments)
        .filter_map(|arg| arg.get_env())
        .map(|name| name.to_string_lossy().into_owned())
        .chain(NON_OPTION_VARIABLES.map(str::to_owned))
        .collect()
}

/// `command` with an environment variable on every option of every
/// subcommand.
pub(super) fn with_variables(command: Command) -> Command {
    command.mut_subcommands(|subcommand| subcommand.mut_args(with_variable))
}

fn with_variable(arg: Arg) -> Arg {
    let Some(name) = arg.get_long().map(variable) else {
        return arg;
    };
    let arg = match arg.get_action().clone() {
        ArgAction::Set => arg,
        ArgAction::Append => arg.value_delimiter(','),
        ArgAction::SetTrue => arg.value_parser(BoolishValueParser::new()),
        _ => return arg,
    };
    // Named by the rule in the help's closing text, and one by one in the
    // configuration doc.
    arg.env(name).hide_env(true)
}
