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

/// The environment variable of every option of every subcommand of
/// `command` (made by [`with_variables`]).
pub(super) fn every_variable(command: &Command) -> BTreeSet<String> {
    command
        .get_subcommands()
        .flat_map(Command::get_arguments)
        .filter_map(|arg| arg.get_env())
        .map(|name| name.to_string_lossy().into_owned())
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
