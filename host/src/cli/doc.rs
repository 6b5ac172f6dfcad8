//! `docs/configuration.md`, generated from the option definitions (`airlock
//! config-doc` prints it), so the page cannot drift from the binary: a test
//! fails when the committed page differs from what the definitions give.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

/// The command that rewrites the page.
pub const REGENERATE: &str = "cargo run --release -p airlock -- config-doc > docs/configuration.md";

/// The example configuration file of the page (a test checks that
/// `airlock serve` accepts it).
pub const EXAMPLE_FILE: &str = r#"# airlock.toml
tools = "/srv/airlock/tools"
listen = "0.0.0.0:8080"
call-timeout = "30s"
max-memory = "128MiB"
max-body = "1MiB"
reload-interval = "off"
allowed-host = ["mcp.example.com", "mcp.internal"]
tokens-file = "/etc/airlock/tokens"
state-keys-file = "/etc/airlock/state-keys"
single-use-state = true
"#;

/// The page's text before the option tables.
const INTRODUCTION: &str = "\
`airlock serve` takes each setting from the first of these that gives it:

1. the command line: `--call-timeout 10s`;
2. the option's environment variable, named after it: `AIRLOCK_CALL_TIMEOUT=10s`
   (lists comma-separated, `AIRLOCK_ALLOWED_HOST=a.example.com,b.example.com`;
   flags `true` or `false`);
3. the configuration file named by `--config FILE` (or `AIRLOCK_CONFIG`);
4. the default.

Every value is checked when it is read, before anything loads: a bad value, an
unknown key in the file or a missing unit stops `airlock` with a message naming
the option (and the file). An `AIRLOCK_*` environment variable that names no
option (nor `AIRLOCK_LOG`, the log filter) is most likely a typo: `serve` logs a
warning naming it, and `serve --check` fails on it.

`airlock serve --check` (with the same options, variables and file) checks a
configuration before it is served, like `nginx -t`: it reads every setting, the
key, token and access policy files, and loads and compiles every component of the
tools directory, then logs what would be served and exits without listening:
0 when everything loaded, 1 on the first error or a component that would be
skipped (the log says why). It does not connect to the task or single-use store,
and writes nothing anywhere: not the audit trail (it only reads the audit key
file), not the task store, not the pull cache (it reads it; what it pulls goes to
a temporary directory removed when it ends), and not the compile cache: it
compiles every component in memory, unless `--fill-cache` asks it to use the
cache as serving does, so the server started next loads from it.

## Values

- **Durations** take a unit: `250ms`, `10s`, `5m`, `1h`, or a sum such as
  `1h 30m`; at most `1year`.
- **Sizes** take a binary unit: `1000B`, `512KiB`, `64MiB`, `1GiB`
  (1 KiB = 1024 B). Decimal units (`kB`, `MB`) and bare letters (`M`) are
  refused, since tools disagree on what they mean.
- **A number without a unit is refused** for both, with a message saying to add
  one: whether `64` meant bytes or MiB would be a guess.
- **Lists**: repeat the option (`--allowed-host a --allowed-host b`) or separate
  the values with commas; in the file, a TOML array.

Manifests (`NAME.toml` beside a component) write their `[limits]` the same way:
`memory = \"32MiB\"`, `timeout = \"2s\"`, `max-output = \"256KiB\"`.

## The configuration file

A TOML file whose keys are the long names of the options, with values as above
(a flag is `true` or `false`, a list an array):

```toml
";

/// The page's text between the example file and the option tables.
const FILE_RULES: &str = "```

Paths are relative to the working directory, as on the command line. A key whose
option is also given on the command line or in the environment is overridden by
it. Unknown keys and bad values are refused, naming the file, the key and why.
`airlock inspect` and `airlock pull` read the same file and skip the keys of
options they do not take.

## Options of `airlock serve`
";

/// The page's closing section.
const OTHER_VARIABLES: &str = "
## Other environment variables

| variable | meaning |
|---|---|
| `AIRLOCK_STATE_KEYS` | state keys, comma- or newline-separated; used when no `--state-keys-file` is given |
| `AIRLOCK_REGISTRY_TOKEN` | bearer token sent to every registry; used when neither `--registry-token-file` nor `--registry-basic-auth-file` is given |
| `AIRLOCK_REGISTRY_BASIC_AUTH` | `user:password` for basic authentication to every registry; used when none of `--registry-token-file`, `--registry-basic-auth-file`, `AIRLOCK_REGISTRY_TOKEN` is given |
| `AIRLOCK_LOG` | log filter, e.g. `debug` or `airlock=debug` (default `info`) |
";

/// The page, from `command` (with its environment variables, see
/// [`super::command`]).
pub fn configuration(command: &Command) -> String {
    let mut page = String::from(
        "<!-- Generated from the option definitions in host/src/cli/: do not edit.\n     \
         Regenerate with: ",
    );
    let _ = writeln!(page, "{REGENERATE} -->\n\n# Configuration\n");
    page.push_str(INTRODUCTION);
    page.push_str(EXAMPLE_FILE);
    page.push_str(FILE_RULES);
    // Built, so that flags show their default (false).
    let mut command = command.clone();
    command.build();
    let serve = command
        .find_subcommand("serve")
        .expect("airlock has a serve subcommand");
    let options: Vec<&Arg> = serve.get_arguments().filter(|arg| is_option(arg)).collect();
    let mut headings: Vec<&str> = Vec::new();
    for arg in &options {
        let heading = arg.get_help_heading().unwrap_or("Options");
        if !headings.contains(&heading) {
            headings.push(heading);
        }
    }
    for heading in headings {
        let _ = writeln!(page, "\n### {heading}\n");
        page.push_str("| option | environment variable | default | meaning |\n|---|---|---|---|\n");
        for arg in options
            .iter()
            .filter(|arg| arg.get_help_heading().unwrap_or("Options") == heading)
        {
            page.push_str(&row(arg));
        }
    }
    for (name, usage) in [
        ("inspect", "airlock inspect NAME.wasm"),
        ("pull", "airlock pull"),
    ] {
        let Some(subcommand) = command.find_subcommand(name) else {
            continue;
        };
        let names: Vec<String> = subcommand
            .get_arguments()
            .filter(|arg| is_option(arg))
            .map(|arg| format!("`--{}`", arg.get_long().unwrap_or_default()))
            .collect();
        let _ = write!(
            page,
            "\n## Options of `airlock {name}`\n\n`{usage}` takes {}, \
             with the meanings, variables and defaults above.\n",
            names.join(", ")
        );
    }
    page.push_str(OTHER_VARIABLES);
    page
}

/// Whether `arg` is an option a person sets (not `--help` or a positional).
fn is_option(arg: &Arg) -> bool {
    arg.get_long().is_some()
        && !arg.is_hide_set()
        && matches!(
            arg.get_action(),
            ArgAction::Set | ArgAction::Append | ArgAction::SetTrue
        )
}

/// One table row: option and value name, variable, default, meaning.
fn row(arg: &Arg) -> String {
    let long = arg.get_long().unwrap_or_default();
    let option = match arg.get_value_names() {
        Some([name, ..]) if !matches!(arg.get_action(), ArgAction::SetTrue) => {
            format!("`--{long} {name}`")
        }
        _ => format!("`--{long}`"),
    };
    let variable = arg.get_env().map_or("none".to_owned(), |name| {
        format!("`{}`", name.to_string_lossy())
    });
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    // A default clap cannot know is written at the end of the help.
    let (meaning, written_default) = match help.rsplit_once(" [default: ") {
        Some((meaning, default)) if default.ends_with(']') => (
            meaning.to_owned(),
            Some(default.trim_end_matches(']').to_owned()),
        ),
        _ => (help.clone(), None),
    };
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| format!("`{}`", value.to_string_lossy()))
        .collect();
    let default = match (defaults.is_empty(), written_default) {
        (false, _) => defaults.join(", "),
        (true, Some(written)) => written,
        (true, None) => "none".to_owned(),
    };
    format!(
        "| {option} | {variable} | {default} | {} |\n",
        meaning.replace('|', "\\|")
    )
}
