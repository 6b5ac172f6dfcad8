//! `--config FILE` (or `AIRLOCK_CONFIG`): a TOML file whose keys are the
//! long names of the options, e.g.
//!
//! ```toml
//! call-timeout = "10s"
//! allowed-host = ["mcp.example.com", "mcp.internal"]
//! stdio = true
//! ```
//!
//! Each key whose option was given neither on the command line nor in its
//! environment variable is handed to clap as if it had been an argument,
//! so every value goes through its option's own parser, and the precedence
//! is: command line, then environment, then file, then default. A file
//! shared by `serve`, `inspect` and `pull` may hold options only `serve`
//! takes; the others skip them. Unknown keys and bad values are refused, naming
//! the file, the key and why.

use std::error::Error as _;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, Command};
use toml::Value;

/// The id (and long name) of the option naming the file.
const CONFIG: &str = "config";

/// The subcommand whose options make up the keys a file may hold.
const SERVE: &str = "serve";

/// The settings a configuration file added to the arguments.
#[derive(Debug)]
pub(super) struct FileSettings {
    /// The file.
    file: PathBuf,
    /// The keys whose values were added.
    keys: Vec<String>,
}

/// `args`, with the settings of the configuration file it names (if any)
/// added as arguments right after the subcommand.
pub(super) fn with_file_arguments(
    command: &Command,
    args: Vec<OsString>,
) -> Result<(Vec<OsString>, Option<FileSettings>), clap::Error> {
    // A lenient first parse, to learn the file and what the command line
    // and the environment set; the real parse reports any error.
    let Ok(matches) = command
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(&args)
    else {
        return Ok((args, None));
    };
    let Some((name, given)) = matches.subcommand() else {
        return Ok((args, None));
    };
    let Some(subcommand) = command.find_subcommand(name) else {
        return Ok((args, None));
    };
    let Some(file) = given.try_get_one::<PathBuf>(CONFIG).ok().flatten() else {
        return Ok((args, None));
    };
    let table = read(file)?;
    let serve = command.find_subcommand(SERVE);
    let mut added = Vec::new();
    let mut keys = Vec::new();
    for (key, value) in &table {
        let fail = |why: String| refuse(format!("{}: `{key}`: {why}", file.display()));
        let Some(arg) = option(subcommand, key) else {
            if serve.is_some_and(|serve| option(serve, key).is_some()) {
                continue;
            }
            return Err(fail(format!(
                "unknown key: the keys are the long names of the options of `airlock {name}` \
                 (see `airlock {name} --help`)"
            )));
        };
        if key == CONFIG {
            return Err(fail(
                "a configuration file cannot name another one".to_owned(),
            ));
        }
        if matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        added.extend(arguments(arg, key, value).map_err(fail)?);
        keys.push(key.clone());
    }
    let at = args
        .iter()
        .position(|arg| arg == name)
        .map_or(args.len(), |at| at + 1);
    let mut args = args;
    args.splice(at..at, added);
    let settings = FileSettings {
        file: file.clone(),
        keys,
    };
    Ok((args, Some(settings)))
}

impl FileSettings {
    /// `error`, naming the file and the key when it is about a value the
    /// file gave.
    pub(super) fn explain(&self, error: clap::Error) -> clap::Error {
        let Some(ContextValue::String(invalid)) = error.get(ContextKind::InvalidArg) else {
            return error;
        };
        let Some(key) = self.keys.iter().find(|key| {
            invalid
                .strip_prefix("--")
                .and_then(|rest| rest.strip_prefix(key.as_str()))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '=']))
        }) else {
            return error;
        };
        let value = match error.get(ContextKind::InvalidValue) {
            Some(ContextValue::String(value)) => value.as_str(),
            _ => "",
        };
        let why = error
            .source()
            .map_or_else(|| error.kind().to_string(), ToString::to_string);
        let file = self.file.display();
        // Most parsers' messages quote the value already.
        if why.starts_with(value) || why.contains(&format!("`{value}`")) {
            refuse(format!("{file}: `{key}`: {why}"))
        } else {
            refuse(format!("{file}: `{key}`: `{value}`: {why}"))
        }
    }
}

/// The file's table.
fn read(file: &Path) -> Result<toml::Table, clap::Error> {
    let text = std::fs::read_to_string(file).map_err(|error| {
        refuse(format!(
            "cannot read the configuration file {}: {error}",
            file.display()
        ))
    })?;
    text.parse()
        .map_err(|error| refuse(format!("{}: {error}", file.display())))
}

/// The option of `command` whose long name is `key`.
fn option<'a>(command: &'a Command, key: &str) -> Option<&'a Arg> {
    command.get_arguments().find(|arg| {
        arg.get_long() == Some(key)
            && matches!(
                arg.get_action(),
                ArgAction::Set | ArgAction::Append | ArgAction::SetTrue
            )
    })
}

/// The arguments that give `arg` the file's `value` (its option's parser
/// checks them, as it checks the command line).
fn arguments(arg: &Arg, key: &str, value: &Value) -> Result<Vec<OsString>, String> {
    let values = match (arg.get_action(), value) {
        (ArgAction::SetTrue, Value::Boolean(true)) => return Ok(vec![format!("--{key}").into()]),
        (ArgAction::SetTrue, Value::Boolean(false)) => return Ok(Vec::new()),
        (ArgAction::SetTrue, other) => {
            return Err(format!(
                "expected true or false, not a {}",
                other.type_str()
            ));
        }
        (ArgAction::Set, Value::Array(_)) => {
            return Err("takes one value, not a list".to_owned());
        }
        (_, Value::Array(values)) => values.as_slice(),
        (_, value) => std::slice::from_ref(value),
    };
    values
        .iter()
        .map(|value| {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Integer(n) => n.to_string(),
                Value::Float(x) => x.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "expected a string, a number or a boolean, not a {}",
                        other.type_str()
                    ));
                }
            };
            Ok(format!("--{key}={text}").into())
        })
        .collect()
}

/// A usage error (exit status 2) with this message.
fn refuse(message: String) -> clap::Error {
    clap::Error::raw(ErrorKind::ValueValidation, format!("{message}\n"))
}
