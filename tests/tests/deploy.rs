//! The Kubernetes manifests under `deploy/kubernetes` against the real binary:
//! every option they name (container arguments, `AIRLOCK_*` variables, keys of
//! `airlock.toml`, the settings it shows commented out included) is an option
//! of `airlock serve`, the probes ask `/healthz` and `/readyz` on the port
//! Airlock listens on, each kustomization lists every manifest of its
//! directory and the base generates the Secrets the pods use, and the
//! autoscaler keeps two pods or more of the Airlock Deployment, which has the
//! CPU request it scales on. Renaming an option fails here.
//!
//! Then the manifests as they are applied: the default and each overlay
//! rendered with `kubectl kustomize` and every object validated against the
//! Kubernetes API schemas (`scripts/kubernetes-validate --strict`; the
//! ServiceMonitor, a CRD with no schema there, is checked field by field),
//! and what the rendering must do: a change of `airlock.toml` renames the
//! ConfigMap the pods mount (so it rolls them), the metrics port is the one
//! Airlock serves metrics on, Redis asks for the password Airlock is given.
//!
//! No YAML parser is in the workspace's tree, so the source manifests are read
//! by lines and indentation (enough for their plain block style; each lookup
//! fails loudly when it finds nothing), and rendered ones are turned into JSON
//! by the Python of that script's venv (`yaml` comes with kubernetes-validate).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use airlock_e2e::paths::workspace_root;
use airlock_e2e::run_airlock;
use serde_json::Value;

/// One meaningful line of a manifest: its indentation and its text, with
/// blank lines and whole-line comments left out.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// One YAML document of a manifest file.
struct Document {
    file: String,
    lines: Vec<(usize, String)>,
}

impl Document {
    fn lines(&self) -> Vec<Line<'_>> {
        self.lines
            .iter()
            .map(|(indent, text)| Line {
                indent: *indent,
                text,
            })
            .collect()
    }

    /// The value of the first top-level `key:`.
    fn top(&self, key: &str) -> Option<String> {
        let top: Vec<Line<'_>> = self
            .lines()
            .into_iter()
            .filter(|line| line.indent == 0)
            .collect();
        value_in(&top, key)
    }
}

fn kubernetes_dir() -> PathBuf {
    workspace_root().join("deploy").join("kubernetes")
}

/// Every `*.yaml` file under `deploy/kubernetes`, at any depth, by its path
/// from there (`base/deployment.yaml`).
fn manifest_files() -> Vec<(String, String)> {
    let root = kubernetes_dir();
    let mut files = Vec::new();
    let mut directories = vec![root.clone()];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).expect("a directory of deploy/kubernetes") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                directories.push(path);
            } else if path.extension().is_some_and(|ext| ext == "yaml") {
                let name = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&path).expect("a manifest");
                files.push((name, text));
            }
        }
    }
    files.sort();
    assert!(
        files.iter().any(|(name, _)| name == "base/deployment.yaml"),
        "no base/deployment.yaml under deploy/kubernetes: {files:?}"
    );
    files
}

/// Every YAML document of every manifest (files split at `---`).
fn documents() -> Vec<Document> {
    let mut documents = Vec::new();
    for (file, text) in manifest_files() {
        let mut lines = Vec::new();
        for raw in text.lines().chain(std::iter::once("---")) {
            if raw.trim_end() == "---" {
                if !lines.is_empty() {
                    documents.push(Document {
                        file: file.clone(),
                        lines: std::mem::take(&mut lines),
                    });
                }
                continue;
            }
            let text = raw.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            lines.push((raw.len() - raw.trim_start().len(), text.to_owned()));
        }
    }
    documents
}

/// The lines under `lines[at]`: those after it, indented deeper.
fn children<'a>(lines: &[Line<'a>], at: usize) -> Vec<Line<'a>> {
    let parent = lines[at].indent;
    lines[at + 1..]
        .iter()
        .take_while(|line| line.indent > parent)
        .copied()
        .collect()
}

/// The index of the first line that is `key:` (or the sequence item `- key:`).
fn find_key(lines: &[Line<'_>], key: &str) -> Option<usize> {
    lines.iter().position(|line| {
        let text = line.text.strip_prefix("- ").unwrap_or(line.text);
        text.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
    })
}

/// The scalar after the first `key:`, unquoted.
fn value_in(lines: &[Line<'_>], key: &str) -> Option<String> {
    let at = find_key(lines, key)?;
    let text = lines[at].text.strip_prefix("- ").unwrap_or(lines[at].text);
    Some(unquote(text[key.len() + 1..].trim()))
}

fn unquote(value: &str) -> String {
    value.trim_matches(|c| c == '"' || c == '\'').to_owned()
}

/// The items of the sequence under `lines[at]`, each with its own lines (the
/// item's first line included, its `- ` removed).
fn items<'a>(lines: &[Line<'a>], at: usize) -> Vec<Vec<Line<'a>>> {
    let under = children(lines, at);
    let Some(indent) = under.first().map(|line| line.indent) else {
        return Vec::new();
    };
    let mut items: Vec<Vec<Line<'a>>> = Vec::new();
    for line in under {
        if line.indent == indent {
            let text = line.text.strip_prefix("- ").unwrap_or_else(|| {
                panic!("expected a sequence item, got {:?}", line.text);
            });
            items.push(vec![Line {
                indent: indent + 2,
                text,
            }]);
        } else {
            items.last_mut().expect("an item").push(line);
        }
    }
    items
}

/// A list value: a flow sequence on the key's line, or a block sequence of
/// scalars under it.
fn list_in(lines: &[Line<'_>], key: &str) -> Option<Vec<String>> {
    let at = find_key(lines, key)?;
    let inline = value_in(lines, key)?;
    if let Some(flow) = inline.strip_prefix('[') {
        let flow = flow.strip_suffix(']').expect("a flow sequence on one line");
        return Some(flow.split(',').map(|item| unquote(item.trim())).collect());
    }
    Some(
        items(lines, at)
            .iter()
            .map(|item| unquote(item[0].text))
            .collect(),
    )
}

/// A container of a workload: its lines.
struct Container<'a> {
    lines: Vec<Line<'a>>,
}

impl Container<'_> {
    fn value(&self, key: &str) -> Option<String> {
        value_in(&self.lines, key)
    }

    /// Its image names Airlock's (any registry, any tag).
    fn runs_airlock(&self) -> bool {
        let image = self.value("image").unwrap_or_default();
        let name = image.rsplit('/').next().unwrap_or_default();
        name.split([':', '@']).next() == Some("airlock")
    }

    /// Its `containerPort`s, each with its name when it has one.
    fn ports(&self) -> Vec<(Option<String>, u16)> {
        let at = find_key(&self.lines, "ports").expect("the container's ports");
        items(&self.lines, at)
            .iter()
            .map(|port| {
                let number = value_in(port, "containerPort")
                    .expect("containerPort")
                    .parse()
                    .expect("a port number");
                (value_in(port, "name"), number)
            })
            .collect()
    }

    /// The number of a port given by number or by name.
    fn port_number(&self, port: &str) -> u16 {
        port.parse().unwrap_or_else(|_| {
            self.ports()
                .iter()
                .find(|(name, _)| name.as_deref() == Some(port))
                .unwrap_or_else(|| panic!("no container port named {port:?}"))
                .1
        })
    }

    /// `(path, port)` of an `httpGet` probe.
    fn probe(&self, kind: &str) -> (String, u16) {
        let at = find_key(&self.lines, kind).unwrap_or_else(|| panic!("no {kind}"));
        let probe = children(&self.lines, at);
        let path = value_in(&probe, "path").unwrap_or_else(|| panic!("{kind} has no path"));
        let port = value_in(&probe, "port").unwrap_or_else(|| panic!("{kind} has no port"));
        (path, self.port_number(&port))
    }
}

/// Every container of every workload in `document`.
fn containers(document: &Document) -> Vec<Container<'_>> {
    let lines = document.lines();
    let Some(at) = find_key(&lines, "containers") else {
        return Vec::new();
    };
    items(&lines, at)
        .into_iter()
        .map(|lines| Container { lines })
        .collect()
}

/// The Airlock containers of every manifest, with the file each is in; at
/// least one.
fn airlock_containers(documents: &[Document]) -> Vec<(&str, Container<'_>)> {
    let found: Vec<_> = documents
        .iter()
        .flat_map(|document| {
            containers(document)
                .into_iter()
                .filter(Container::runs_airlock)
                .map(|container| (document.file.as_str(), container))
        })
        .collect();
    assert!(!found.is_empty(), "no container runs the airlock image");
    found
}

/// The long names of `airlock serve`'s options, from the real binary's
/// `--help`: the first word of each line that defines an option.
fn serve_options() -> BTreeSet<String> {
    let (status, help, stderr) = run_airlock(&["serve", "--help"]);
    assert!(status.success(), "airlock serve --help failed: {stderr}");
    let options: BTreeSet<String> = help
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|word| word.strip_prefix("--"))
        .map(str::to_owned)
        .collect();
    assert!(
        options.contains("config") && options.contains("task-store"),
        "could not read the options from --help: {help}"
    );
    options
}

/// `--name` or `--name=value` of an argument, if it is an option.
fn flag_name(arg: &str) -> Option<&str> {
    let flag = arg.strip_prefix("--")?;
    Some(flag.split('=').next().unwrap_or(flag))
}

/// The lines of `base/airlock.toml`, which the base's `configMapGenerator`
/// makes the ConfigMap `airlock-config` of: its meaningful lines, trimmed.
fn airlock_toml(documents: &[Document]) -> Vec<String> {
    let kustomization = documents
        .iter()
        .find(|document| document.file == "base/kustomization.yaml")
        .expect("base/kustomization.yaml")
        .lines();
    let at = find_key(&kustomization, "configMapGenerator").expect("a configMapGenerator");
    let generated = items(&kustomization, at);
    assert!(
        generated.iter().any(|map| {
            value_in(map, "name").as_deref() == Some("airlock-config")
                && list_in(map, "files").is_some_and(|files| files == ["airlock.toml"])
        }),
        "base/kustomization.yaml does not make airlock-config of airlock.toml"
    );
    let text = std::fs::read_to_string(kubernetes_dir().join("base").join("airlock.toml"))
        .expect("read base/airlock.toml");
    let toml: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(!toml.is_empty(), "airlock.toml is empty");
    toml
}

/// A setting shown commented out, as `# key = value` (a key of lowercase
/// words): checked like the others, so it still works once uncommented.
fn commented_setting(line: &str) -> Option<&str> {
    let setting = line.strip_prefix("# ")?;
    let (key, _) = setting.split_once(" = ")?;
    key.chars()
        .all(|c| c.is_ascii_lowercase() || c == '-')
        .then_some(setting)
}

/// `(key, value)` of each setting of a flat TOML file, commented-out ones
/// included.
fn toml_settings(toml: &[String]) -> Vec<(String, String)> {
    toml.iter()
        .filter_map(|line| {
            if line.starts_with('#') {
                commented_setting(line)
            } else {
                Some(line.as_str())
            }
        })
        .map(|line| {
            assert!(
                !line.starts_with('['),
                "airlock.toml has no tables, got {line:?}"
            );
            let (key, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("not a `key = value` line: {line:?}"));
            (key.trim().to_owned(), unquote(value.trim()))
        })
        .collect()
}

#[test]
fn container_arguments_are_options_of_airlock_serve() {
    let options = serve_options();
    let documents = documents();
    for (file, container) in airlock_containers(&documents) {
        let args = list_in(&container.lines, "args")
            .unwrap_or_else(|| panic!("{file}: the airlock container has no args"));
        assert_eq!(
            args.first().map(String::as_str),
            Some("serve"),
            "{file}: args must start with the serve command"
        );
        let flags: Vec<&str> = args.iter().filter_map(|arg| flag_name(arg)).collect();
        assert!(!flags.is_empty(), "{file}: no options in {args:?}");
        for flag in flags {
            assert!(
                options.contains(flag),
                "{file}: --{flag} is not an option of `airlock serve` (its options: {options:?})"
            );
        }
    }
}

#[test]
fn airlock_environment_variables_name_options() {
    let variables: BTreeSet<String> = serve_options()
        .iter()
        .map(|option| format!("AIRLOCK_{}", option.to_uppercase().replace('-', "_")))
        .collect();
    let mut named = 0;
    for document in documents() {
        for line in document.lines() {
            for word in line
                .text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| word.starts_with("AIRLOCK_"))
            {
                named += 1;
                assert!(
                    variables.contains(word),
                    "{}: {word} is not the variable of an option of `airlock serve`",
                    document.file
                );
            }
        }
    }
    assert!(named > 0, "the manifests name no AIRLOCK_* variable");
}

#[test]
fn configmap_keys_are_options_of_airlock_serve() {
    let options = serve_options();
    let settings = toml_settings(&airlock_toml(&documents()));
    assert!(!settings.is_empty(), "airlock.toml sets nothing");
    for (key, _) in &settings {
        assert!(
            options.contains(key.as_str()),
            "airlock.toml: `{key}` is not an option of `airlock serve` (its options: {options:?})"
        );
    }
}

#[test]
fn probes_ask_healthz_and_readyz_on_the_port_airlock_listens_on() {
    let documents = documents();
    let settings = toml_settings(&airlock_toml(&documents));
    for (file, container) in airlock_containers(&documents) {
        // Where Airlock listens: --listen in the args, else the ConfigMap's.
        let args = list_in(&container.lines, "args").unwrap_or_default();
        let listen = args
            .iter()
            .position(|arg| arg == "--listen")
            .map(|at| args[at + 1].clone())
            .or_else(|| {
                let (_, value) = settings.iter().find(|(key, _)| key == "listen")?;
                Some(value.clone())
            })
            .unwrap_or_else(|| panic!("{file}: no listen address in args or airlock.toml"));
        let listen_port: u16 = listen
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("{file}: no port in listen address {listen:?}"));
        assert!(
            container
                .ports()
                .iter()
                .any(|(_, port)| *port == listen_port),
            "{file}: Airlock listens on {listen_port}, not a containerPort: {:?}",
            container.ports()
        );
        assert_eq!(
            container.probe("readinessProbe"),
            ("/readyz".to_owned(), listen_port),
            "{file}: readiness"
        );
        assert_eq!(
            container.probe("livenessProbe"),
            ("/healthz".to_owned(), listen_port),
            "{file}: liveness"
        );
        // Pods compile every component cold before they answer: the startup
        // probe waits minutes for that, not liveness's seconds.
        assert_eq!(
            container.probe("startupProbe"),
            ("/healthz".to_owned(), listen_port),
            "{file}: startup"
        );
        let at = find_key(&container.lines, "startupProbe").expect("the startup probe");
        let probe = children(&container.lines, at);
        let number = |key| -> u32 {
            value_in(&probe, key)
                .unwrap_or_else(|| panic!("{file}: the startup probe has no {key}"))
                .parse()
                .expect("a number")
        };
        let patience = number("periodSeconds") * number("failureThreshold");
        assert!(
            patience >= 120,
            "{file}: the startup probe gives a cold pod only {patience} s"
        );
    }
}

/// The directory part of a manifest's path (`base` of `base/hpa.yaml`).
fn directory_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(directory, _)| directory)
}

#[test]
fn each_kustomization_lists_every_manifest_of_its_directory() {
    let documents = documents();
    let kustomizations: Vec<&Document> = documents
        .iter()
        .filter(|document| {
            matches!(
                document.top("kind").as_deref(),
                Some("Kustomization" | "Component")
            )
        })
        .collect();
    assert!(
        kustomizations.len() >= 4,
        "the base, the default, the overlays and the component"
    );
    for kustomization in kustomizations {
        let directory = directory_of(&kustomization.file);
        let lines = kustomization.lines();
        // Resources and patches that are files of this directory (not
        // directories, not files elsewhere).
        let mut listed: BTreeSet<String> = list_in(&lines, "resources")
            .unwrap_or_default()
            .into_iter()
            .collect();
        if let Some(at) = find_key(&lines, "patches") {
            listed.extend(
                items(&lines, at)
                    .iter()
                    .filter_map(|patch| value_in(patch, "path")),
            );
        }
        listed.retain(|entry| entry.ends_with(".yaml") && !entry.contains('/'));
        let files: BTreeSet<String> = manifest_files()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| name != &kustomization.file && directory_of(name) == directory)
            .map(|name| name.rsplit('/').next().unwrap().to_owned())
            .collect();
        assert_eq!(
            listed, files,
            "{}: its resources and patches are not the manifests beside it",
            kustomization.file
        );
    }
}

/// The scalar at `path`, each key looked up under the one before.
fn value_at(lines: &[Line<'_>], path: &[&str]) -> Option<String> {
    let (last, parents) = path.split_last()?;
    let mut scope = lines.to_vec();
    for key in parents {
        let at = find_key(&scope, key)?;
        scope = children(&scope, at);
    }
    value_in(&scope, last)
}

/// The documents of `kind`.
fn of_kind<'a>(documents: &'a [Document], kind: &str) -> Vec<&'a Document> {
    documents
        .iter()
        .filter(|document| document.top("kind").as_deref() == Some(kind))
        .collect()
}

/// The one Deployment whose containers run Airlock.
fn airlock_deployment(documents: &[Document]) -> &Document {
    let found: Vec<&Document> = of_kind(documents, "Deployment")
        .into_iter()
        .filter(|document| containers(document).iter().any(Container::runs_airlock))
        .collect();
    assert_eq!(found.len(), 1, "expected one Deployment running airlock");
    found[0]
}

#[test]
fn the_autoscaler_keeps_two_airlock_pods_or_more_and_scales_on_cpu() {
    let documents = documents();
    let deployment = airlock_deployment(&documents);
    let name = value_at(&deployment.lines(), &["metadata", "name"]).expect("a name");
    let autoscalers = of_kind(&documents, "HorizontalPodAutoscaler");
    assert_eq!(autoscalers.len(), 1, "expected one HorizontalPodAutoscaler");
    let hpa = autoscalers[0].lines();
    assert_eq!(
        autoscalers[0].top("apiVersion").as_deref(),
        Some("autoscaling/v2")
    );
    let target = |key| value_at(&hpa, &["spec", "scaleTargetRef", key]);
    assert_eq!(target("kind").as_deref(), Some("Deployment"));
    assert_eq!(target("apiVersion").as_deref(), Some("apps/v1"));
    assert_eq!(target("name"), Some(name.clone()), "the HPA scales {name}");

    let replicas = |key| -> u32 {
        value_at(&hpa, &["spec", key])
            .unwrap_or_else(|| panic!("the HPA has no {key}"))
            .parse()
            .expect("a number of replicas")
    };
    let (min, max) = (replicas("minReplicas"), replicas("maxReplicas"));
    assert!(min >= 2, "minReplicas {min}: a fleet is two pods or more");
    assert!(max > min, "maxReplicas {max} leaves no room above {min}");
    // The HPA owns the count: one in the Deployment would be put back by
    // every apply.
    assert_eq!(
        value_at(&deployment.lines(), &["spec", "replicas"]),
        None,
        "{}: the HPA owns the replica count",
        deployment.file
    );

    // CPU utilisation is measured against the pods' CPU request.
    assert_eq!(
        value_at(&hpa, &["resource", "name"]).as_deref(),
        Some("cpu")
    );
    assert_eq!(
        value_at(&hpa, &["target", "type"]).as_deref(),
        Some("Utilization")
    );
    for container in containers(deployment)
        .iter()
        .filter(|container| container.runs_airlock())
    {
        assert!(
            value_at(&container.lines, &["resources", "requests", "cpu"]).is_some(),
            "{}: the airlock container needs a CPU request for the HPA",
            deployment.file
        );
    }

    // A voluntary disruption leaves pods serving.
    let budgets = of_kind(&documents, "PodDisruptionBudget");
    assert_eq!(budgets.len(), 1, "expected one PodDisruptionBudget");
    let unavailable: u32 = value_at(&budgets[0].lines(), &["spec", "maxUnavailable"])
        .expect("maxUnavailable")
        .parse()
        .expect("a number of pods");
    assert!(
        unavailable < min,
        "maxUnavailable {unavailable} could take all {min} pods"
    );
}

#[test]
fn the_secrets_the_pods_use_are_made_by_the_kustomization() {
    let documents = documents();
    let kustomization = documents
        .iter()
        .find(|document| document.file == "base/kustomization.yaml")
        .expect("base/kustomization.yaml")
        .lines();
    let at = find_key(&kustomization, "secretGenerator").expect("a secretGenerator");
    let generated: BTreeSet<String> = items(&kustomization, at)
        .iter()
        .map(|secret| value_in(secret, "name").expect("a generated secret's name"))
        .collect();
    // Secrets mounted (`secretName:`) or read into variables
    // (`secretKeyRef:` and its `name:`), by any workload.
    let mut used = BTreeSet::new();
    for document in &documents {
        let lines = document.lines();
        for (at, line) in lines.iter().enumerate() {
            if let Some(name) = line.text.strip_prefix("secretName:") {
                used.insert(unquote(name.trim()));
            }
            if line.text == "secretKeyRef:" {
                used.insert(value_in(&children(&lines, at), "name").expect("a secret's name"));
            }
        }
    }
    assert!(
        ["airlock-state-keys", "airlock-tokens", "airlock-redis"]
            .iter()
            .all(|secret| used.contains(*secret)),
        "the pods should use the state keys, the tokens and Redis's password: {used:?}"
    );
    assert_eq!(
        used, generated,
        "the Secrets the pods use are not those the kustomization generates"
    );
}

/// A copy of `deploy/kubernetes` with the files the base makes Secrets of
/// (kept out of version control) filled with stand-ins, to render.
fn renderable_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut pending = vec![(kubernetes_dir(), dir.path().to_path_buf())];
    while let Some((from, to)) = pending.pop() {
        std::fs::create_dir_all(&to).expect("create a directory");
        for entry in std::fs::read_dir(&from).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            let target = to.join(path.file_name().unwrap());
            if path.is_dir() {
                pending.push((path, target));
            } else {
                std::fs::copy(&path, &target).expect("copy a manifest");
            }
        }
    }
    let secrets = dir.path().join("base").join("secrets");
    std::fs::create_dir_all(&secrets).expect("create base/secrets");
    for (file, text) in [
        ("state.keys", "a-state-key\n"),
        ("tokens", "a-token ci-bot\n"),
        ("redis-password", "a-password"),
    ] {
        std::fs::write(secrets.join(file), text).expect("write a stand-in secret");
    }
    dir
}

/// Runs `program ARGS`, with `input` on its standard input; its standard
/// output, or a panic with everything it said.
fn run(program: &str, args: &[&str], input: Option<&str>, install: &str) -> String {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): {install}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.unwrap_or_default().to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("wait for it");
    writer.join().expect("the writer").expect("write its input");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The repository's `scripts/kubernetes-validate`, which runs the schemas'
/// validator (or, with `--python`, the Python that has PyYAML) from a venv it
/// installs on first use.
fn kubernetes_validate() -> String {
    workspace_root()
        .join("scripts/kubernetes-validate")
        .to_string_lossy()
        .into_owned()
}

/// `kubectl kustomize` of `overlay` (a directory of the tree).
fn render(tree: &Path, overlay: &str) -> String {
    let dir = tree.join(overlay);
    run(
        "kubectl",
        &["kustomize", &dir.to_string_lossy()],
        None,
        "apt-get install -y kubectl; scripts/test does",
    )
}

/// The objects of rendered YAML, as JSON.
fn objects(yaml: &str) -> Vec<Value> {
    const TO_JSON: &str = "import json, sys, yaml\n\
        json.dump([o for o in yaml.safe_load_all(sys.stdin) if o], sys.stdout)";
    let json = run(
        &kubernetes_validate(),
        &["--python", "-c", TO_JSON],
        Some(yaml),
        "scripts/kubernetes-validate installs PyYAML with kubernetes-validate",
    );
    serde_json::from_str(&json).expect("JSON from python")
}

/// The one object of `kind` named `name`, or whose name is `name-<hash>`
/// (what a generator makes).
fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = objects
        .iter()
        .filter(|object| object["kind"] == kind)
        .filter(|object| {
            let named = object["metadata"]["name"].as_str().unwrap_or_default();
            named == name
                || named
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|hash| hash.len() == 10 && !hash.contains('-'))
        })
        .collect();
    assert_eq!(found.len(), 1, "expected one {kind} {name}");
    found[0]
}

/// The container `name` of a workload.
fn container<'a>(workload: &'a Value, name: &str) -> &'a Value {
    workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|container| container["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

/// The value of a container's variable, or the Secret it is read from.
fn variable<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|variable| variable["name"] == name)
        .unwrap_or_else(|| panic!("no variable {name}"))
}

/// The default and every overlay.
const RENDERED: [&str; 3] = [".", "overlays/monitored", "overlays/by-reference"];

/// Kinds that are no part of the Kubernetes API (CRDs), so that
/// `kubernetes-validate` has no schema for them; each is checked by its own
/// test here.
const CUSTOM_KINDS: [&str; 1] = ["ServiceMonitor"];

#[test]
fn the_default_and_each_overlay_validate_against_the_kubernetes_schemas() {
    let tree = renderable_tree();
    for overlay in RENDERED {
        let yaml = render(tree.path(), overlay);
        let file = tree.path().join("rendered.yaml");
        std::fs::write(&file, &yaml).expect("write the rendering");
        let report = run(
            &kubernetes_validate(),
            &["--strict", &file.to_string_lossy()],
            None,
            "scripts/kubernetes-validate installs it on first use",
        );
        let kinds: BTreeSet<String> = objects(&yaml)
            .iter()
            .map(|object| object["kind"].as_str().expect("a kind").to_owned())
            .collect();
        for kind in &kinds {
            let unchecked = report.contains(&format!("find schema for kind {kind} "));
            assert_eq!(
                unchecked,
                CUSTOM_KINDS.contains(&kind.as_str()),
                "{overlay}: {kind} validated or not as expected:\n{report}"
            );
        }
        assert!(
            kinds.contains("Deployment") && kinds.contains("NetworkPolicy"),
            "{overlay}: {kinds:?}"
        );
    }
}

#[test]
fn a_change_of_airlock_toml_rolls_the_pods() {
    let tree = renderable_tree();
    let config_of = |yaml: &str| -> (String, String) {
        let objects = objects(yaml);
        let generated = object(&objects, "ConfigMap", "airlock-config")["metadata"]["name"]
            .as_str()
            .expect("a name")
            .to_owned();
        let deployment = object(&objects, "Deployment", "airlock");
        let mounted = deployment["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find_map(|volume| volume["configMap"]["name"].as_str())
            .expect("a ConfigMap volume")
            .to_owned();
        (generated, mounted)
    };
    let (before, mounted) = config_of(&render(tree.path(), "."));
    assert_eq!(mounted, before, "the pods mount the generated ConfigMap");
    let toml = tree.path().join("base").join("airlock.toml");
    let text = std::fs::read_to_string(&toml).expect("read airlock.toml");
    std::fs::write(
        &toml,
        text.replace("state-ttl = \"10m\"", "state-ttl = \"11m\""),
    )
    .expect("change airlock.toml");
    let (after, mounted) = config_of(&render(tree.path(), "."));
    assert_eq!(mounted, after, "the pods mount the generated ConfigMap");
    assert_ne!(
        before, after,
        "a new airlock.toml must rename the ConfigMap"
    );
}

#[test]
fn metrics_are_scraped_on_the_port_airlock_serves_them_on() {
    let tree = renderable_tree();
    let objects = objects(&render(tree.path(), "overlays/monitored"));
    let toml = object(&objects, "ConfigMap", "airlock-config")["data"]["airlock.toml"]
        .as_str()
        .expect("airlock.toml")
        .to_owned();
    let listen = toml
        .lines()
        .find_map(|line| line.strip_prefix("metrics-listen = "))
        .expect("metrics-listen in airlock.toml");
    let port: u64 = unquote(listen)
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .expect("a port");

    let deployment = object(&objects, "Deployment", "airlock");
    let airlock = container(deployment, "airlock");
    let ports = airlock["ports"].as_array().expect("ports");
    let metrics = ports
        .iter()
        .find(|p| p["containerPort"] == port)
        .unwrap_or_else(|| panic!("port {port} is not a containerPort"));
    let port_name = metrics["name"].as_str().expect("the metrics port's name");
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], port.to_string());
    assert_eq!(annotations["prometheus.io/path"], "/metrics");

    // The ServiceMonitor scrapes a port, by name, of a Service it selects,
    // which sends it to the pods' metrics port.
    let monitor = object(&objects, "ServiceMonitor", "airlock");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    let selected: Vec<&Value> = objects
        .iter()
        .filter(|object| object["kind"] == "Service")
        .filter(|service| {
            selector
                .iter()
                .all(|(key, value)| service["metadata"]["labels"][key] == *value)
        })
        .collect();
    assert_eq!(selected.len(), 1, "the ServiceMonitor selects one Service");
    let service_ports = selected[0]["spec"]["ports"].as_array().expect("ports");
    for endpoint in monitor["spec"]["endpoints"].as_array().expect("endpoints") {
        assert_eq!(endpoint["path"], "/metrics");
        let port = service_ports
            .iter()
            .find(|p| p["name"] == endpoint["port"])
            .unwrap_or_else(|| panic!("no Service port {}", endpoint["port"]));
        assert_eq!(port["targetPort"], port_name);
    }
    // The job name the alert rules expect.
    let job_label = monitor["spec"]["jobLabel"].as_str().expect("jobLabel");
    assert_eq!(selected[0]["metadata"]["labels"][job_label], "airlock");

    // The NetworkPolicy lets the metrics port in.
    let policy = object(&objects, "NetworkPolicy", "airlock");
    let allowed: Vec<&Value> = policy["spec"]["ingress"]
        .as_array()
        .expect("ingress")
        .iter()
        .flat_map(|rule| rule["ports"].as_array().expect("ports"))
        .map(|p| &p["port"])
        .collect();
    assert!(allowed.iter().any(|p| **p == port_name), "{allowed:?}");
}

#[test]
fn redis_asks_for_the_password_airlock_is_given() {
    let tree = renderable_tree();
    let objects = objects(&render(tree.path(), "."));
    let redis = object(&objects, "Deployment", "airlock-redis");
    assert_eq!(
        redis["spec"]["strategy"]["type"], "Recreate",
        "two Redis behind one Service would split the tasks"
    );
    let server = container(redis, "redis");
    let secret = &variable(server, "REDIS_PASSWORD")["valueFrom"]["secretKeyRef"];
    let command = format!("{} {}", server["command"], server["args"]);
    assert!(
        command.contains("requirepass") && command.contains("$REDIS_PASSWORD"),
        "{command}"
    );

    let airlock = container(object(&objects, "Deployment", "airlock"), "airlock");
    assert_eq!(
        variable(airlock, "REDIS_PASSWORD")["valueFrom"]["secretKeyRef"],
        *secret,
        "Airlock and Redis read the same password"
    );
    let env = airlock["env"].as_array().expect("env");
    let at = |name: &str| {
        env.iter()
            .position(|v| v["name"] == name)
            .expect("a variable")
    };
    assert!(
        at("REDIS_PASSWORD") < at("AIRLOCK_TASK_STORE"),
        "a variable is expanded only after the ones defined before it"
    );
    let store = variable(airlock, "AIRLOCK_TASK_STORE")["value"]
        .as_str()
        .expect("the task store URL");
    assert!(
        store.starts_with("redis://:$(REDIS_PASSWORD)@airlock-redis:"),
        "{store}"
    );
    object(&objects, "NetworkPolicy", "airlock-redis");
}

#[test]
fn the_by_reference_overlay_serves_the_lock_of_its_configmap() {
    let tree = renderable_tree();
    let objects = objects(&render(tree.path(), "overlays/by-reference"));
    let tools = object(&objects, "ConfigMap", "airlock-tools");
    for key in ["components.toml", "airlock.lock"] {
        assert!(tools["data"][key].is_string(), "airlock-tools has no {key}");
    }
    let deployment = object(&objects, "Deployment", "airlock");
    let pod = &deployment["spec"]["template"]["spec"];
    let airlock = container(deployment, "airlock");
    // The volume mounted at the directory of `path`, by the container.
    let volume_at = |path: &str| -> &Value {
        let mount = airlock["volumeMounts"]
            .as_array()
            .expect("volumeMounts")
            .iter()
            .find(|mount| {
                let at = mount["mountPath"].as_str().unwrap();
                path == at || path.starts_with(&format!("{at}/"))
            })
            .unwrap_or_else(|| panic!("nothing mounted at {path}"));
        pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|volume| volume["name"] == mount["name"])
            .expect("the mounted volume")
    };
    for (variable_name, key) in [
        ("AIRLOCK_COMPONENTS", "components.toml"),
        ("AIRLOCK_LOCK", "airlock.lock"),
    ] {
        let path = variable(airlock, variable_name)["value"]
            .as_str()
            .expect("a path");
        assert!(path.ends_with(&format!("/{key}")), "{path}");
        assert_eq!(
            volume_at(path)["configMap"]["name"],
            tools["metadata"]["name"],
            "{variable_name}"
        );
    }
    for variable_name in ["AIRLOCK_PULL_CACHE_DIR", "AIRLOCK_TOOLS"] {
        let path = variable(airlock, variable_name)["value"]
            .as_str()
            .expect("a path");
        assert!(volume_at(path)["emptyDir"].is_object(), "{variable_name}");
    }
}
