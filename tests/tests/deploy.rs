//! The Kubernetes manifests under `deploy/kubernetes` against the real binary:
//! every option they name (container arguments, `AIRLOCK_*` variables, keys of
//! the ConfigMap's `airlock.toml`) is an option of `airlock serve`, the probes
//! ask `/healthz` and `/readyz` on the port Airlock listens on, the
//! kustomization lists every manifest and generates the Secrets the pods
//! mount, and the autoscaler keeps two pods or more of the Airlock
//! Deployment, which has the CPU request it scales on. Renaming an option
//! fails here. Not checked: the manifests against the Kubernetes API schemas
//! (no cluster or schema validator here).
//!
//! No YAML parser is in the workspace's tree, so the manifests are read by
//! lines and indentation: enough for their plain block style, and each lookup
//! fails loudly when it finds nothing.

use std::collections::BTreeSet;
use std::path::PathBuf;

use airlock_e2e::paths::workspace_root;
use airlock_e2e::run_airlock;

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

/// Every `*.yaml` file under `deploy/kubernetes`, by name.
fn manifest_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(kubernetes_dir())
        .expect("deploy/kubernetes")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("a manifest");
            (name, text)
        })
        .collect();
    files.sort();
    assert!(
        files.iter().any(|(name, _)| name == "deployment.yaml"),
        "no deployment.yaml under deploy/kubernetes: {files:?}"
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

/// The `airlock.toml` of the ConfigMap: its lines, unindented.
fn airlock_toml(documents: &[Document]) -> Vec<String> {
    let mut found = Vec::new();
    for document in documents {
        if document.top("kind").as_deref() != Some("ConfigMap") {
            continue;
        }
        let lines = document.lines();
        if let Some(at) = find_key(&lines, "airlock.toml") {
            found.push(
                children(&lines, at)
                    .iter()
                    .map(|line| line.text.to_owned())
                    .collect::<Vec<_>>(),
            );
        }
    }
    assert_eq!(found.len(), 1, "expected one ConfigMap with airlock.toml");
    let toml = found.remove(0);
    assert!(!toml.is_empty(), "airlock.toml is empty");
    toml
}

/// `(key, value)` of each setting of a flat TOML file.
fn toml_settings(toml: &[String]) -> Vec<(String, String)> {
    toml.iter()
        .filter(|line| !line.starts_with('#'))
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
    }
}

#[test]
fn the_kustomization_lists_every_manifest() {
    let documents = documents();
    let kustomization = documents
        .iter()
        .find(|document| document.top("kind").as_deref() == Some("Kustomization"))
        .expect("a Kustomization");
    let resources: BTreeSet<String> = list_in(&kustomization.lines(), "resources")
        .expect("resources")
        .into_iter()
        .collect();
    let files: BTreeSet<String> = manifest_files()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| *name != kustomization.file)
        .collect();
    assert_eq!(
        resources, files,
        "kustomization.yaml's resources are not the manifests under deploy/kubernetes"
    );
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
fn the_secrets_the_pods_mount_are_made_by_the_kustomization() {
    let documents = documents();
    let kustomization = of_kind(&documents, "Kustomization")[0].lines();
    let at = find_key(&kustomization, "secretGenerator").expect("a secretGenerator");
    let generated: BTreeSet<String> = items(&kustomization, at)
        .iter()
        .map(|secret| value_in(secret, "name").expect("a generated secret's name"))
        .collect();
    let deployment = airlock_deployment(&documents);
    let mounted: BTreeSet<String> = deployment
        .lines()
        .iter()
        .filter_map(|line| line.text.strip_prefix("secretName:"))
        .map(|name| unquote(name.trim()))
        .collect();
    assert!(
        mounted.contains("airlock-state-keys") && mounted.contains("airlock-tokens"),
        "{}: the pods should mount the state keys and tokens: {mounted:?}",
        deployment.file
    );
    assert_eq!(
        mounted, generated,
        "the Secrets the pods mount are not those the kustomization generates"
    );
}
