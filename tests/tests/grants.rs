//! A granted directory is the directory its path named when the component
//! loaded, whatever happens to the path afterwards; a grant that a guest
//! could redirect (one inside a read-write grant) is refused; no grant
//! exposes Airlock's own files.
//!
//! Each test tries the escape for real: a path swapped for a symbolic link
//! to the host's root (absolute, and as a relative `../` chain), by the test
//! itself or by a component that can write there, and a read through it.
//! No grant may be, contain or lie inside the root, `/proc`, `/sys` or
//! `/dev`, however it is spelled, and a link to them inside a granted
//! directory leads nowhere.

use std::path::{Path, PathBuf};

use airlock_e2e::hostile::{
    airlock, assert_ok, assert_refused, assert_sha256_works, call, serve, toml_path, tools_with,
};
use airlock_e2e::{McpClient, ToolsDir, run_airlock};
use serde_json::{Value, json};

/// What the granted file holds.
const ALLOWED: &str = "granted-content-e2e";

/// A relative chain of `..` that reaches `/` from any directory of the
/// temporary tree.
fn up_to_root(from: &Path) -> String {
    let depth = from.components().count();
    vec![".."; depth + 2].join("/")
}

/// A temporary tree: `<root>/data/allowed.txt` (and `<root>/data/inner/`).
struct Tree {
    root: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let root = tempfile::Builder::new()
            .prefix("airlock-grants-")
            .tempdir()
            .expect("a temporary directory");
        std::fs::create_dir_all(root.path().join("data/inner")).unwrap();
        std::fs::write(root.path().join("data/allowed.txt"), ALLOWED).unwrap();
        std::fs::write(root.path().join("data/inner/inner.txt"), ALLOWED).unwrap();
        Tree { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    /// Moves `relative` away and puts a symbolic link to `target` in its
    /// place, as an attacker with write access to its parent would.
    fn swap(&self, relative: &str, target: &str) {
        let path = self.path(relative);
        let moved = self.path(&format!("{relative}.moved-{}", target.len()));
        std::fs::rename(&path, moved).expect("move the granted directory away");
        std::os::unix::fs::symlink(target, &path).expect("link in its place");
    }
}

/// `[[dirs]]` entries granting `grants` (host path, guest path, mode).
fn dirs(grants: &[(&Path, &str, &str)]) -> String {
    grants
        .iter()
        .map(|(host, guest, mode)| {
            format!(
                "[[dirs]]\nhost = {}\nguest = \"{guest}\"\nmode = \"{mode}\"\n",
                toml_path(host)
            )
        })
        .collect()
}

/// Reading `path` showed none of the host's root.
#[track_caller]
fn assert_no_host_root(client: &dyn McpClient, path: &str) {
    let response = call(client, "read_file", json!({ "path": path })).to_string();
    assert!(
        !response.contains("root:x:"),
        "{path} leaked the host: {response}"
    );
}

#[test]
fn a_grant_keeps_its_directory_when_its_path_becomes_a_link_to_the_root() {
    let tree = Tree::new();
    let data = tree.path("data");
    let tools = tools_with(Some(&dirs(&[(&data, "/data", "read-only")])));
    let server = serve(&tools, &[]);
    let client = server.client();
    assert_ok(
        &call(&client, "read_file", json!({"path": "/data/allowed.txt"})),
        ALLOWED,
    );

    for target in ["/".to_owned(), up_to_root(&data)] {
        tree.swap("data", &target);
        // Not the new path: the directory granted at load, moved or not.
        assert_no_host_root(&client, "/data/etc/passwd");
        assert_refused(
            &call(&client, "list_dir", json!({"path": "/data/etc"})),
            &format!("listing /data/etc after /data became a link to {target}"),
        );
        assert_ok(
            &call(&client, "read_file", json!({"path": "/data/allowed.txt"})),
            ALLOWED,
        );
        // Put a directory back at the path for the next swap.
        std::fs::remove_file(&data).unwrap();
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("allowed.txt"), "a new directory").unwrap();
    }
    assert_sha256_works(&client);
}

#[test]
fn a_deleted_grant_stays_empty_and_never_follows_a_new_path() {
    let tree = Tree::new();
    let data = tree.path("data");
    let tools = tools_with(Some(&dirs(&[(&data, "/data", "read-write")])));
    let server = serve(&tools, &[]);
    let client = server.client();
    std::fs::remove_dir_all(&data).unwrap();
    std::os::unix::fs::symlink("/", &data).unwrap();
    assert_no_host_root(&client, "/data/etc/passwd");
    assert_refused(
        &call(
            &client,
            "write_file",
            json!({"path": "/data/planted.txt", "text": "x"}),
        ),
        "writing into a deleted grant",
    );
    assert!(!Path::new("/planted.txt").exists());
    assert_sha256_works(&client);
}

/// A component whose read-only grant lies inside its own read-write grant:
/// it could swap the inner path for a link between two calls.
#[test]
fn a_grant_inside_a_writable_grant_of_the_same_component_is_refused() {
    let tree = Tree::new();
    let manifest = dirs(&[
        (&tree.path("data"), "/shared", "read-write"),
        (&tree.path("data/inner"), "/inner", "read-only"),
    ]);
    let tools = tools_with(Some(&manifest));
    let server = serve(&tools, &[]);
    let client = server.client();

    // The escape, tried: swap the inner grant's path for a link to the
    // root, then read through the inner grant in a later call.
    let target = up_to_root(&tree.path("data"));
    let swapped = call(
        &client,
        "swap",
        json!({"path": "/shared/inner", "target": target}),
    );
    assert_no_host_root(&client, "/inner/etc/passwd");
    assert!(
        is_unknown_tool(&swapped),
        "the component must not be served: {swapped}"
    );
    let log = server.stderr();
    assert!(
        log.lines().any(|line| line.contains("skipping component")
            && line.contains("inside the read-write grant")),
        "the log should say why the component was skipped:\n{log}"
    );
    assert_sha256_works(&client);
}

/// Two components: one may write where the other's grant lies.
#[test]
fn a_grant_under_another_components_writable_grant_is_refused() {
    let tree = Tree::new();
    let tools = tools_with(Some(&dirs(&[(
        &tree.path("data"),
        "/shared",
        "read-write",
    )])));
    tools.add("watcher");
    tools.add_bytes(
        "watcher.toml",
        dirs(&[(&tree.path("data/inner"), "/inner", "read-only")]).as_bytes(),
    );
    let (status, stderr) = airlock(&tools).run_expecting_exit();
    assert!(!status.success());
    assert!(
        stderr.contains("inside the read-write grant")
            && stderr.contains("hostile.toml")
            && stderr.contains("watcher.toml"),
        "the error should name both manifests:\n{stderr}"
    );
}

#[test]
fn a_reload_that_nests_a_grant_in_another_components_writable_grant_is_refused() {
    let tree = Tree::new();
    let tools = tools_with(Some(&dirs(&[(
        &tree.path("data"),
        "/shared",
        "read-write",
    )])));
    let server = serve(&tools, &[]);
    let client = server.client();
    tools.add_bytes(
        "watcher.toml",
        dirs(&[(&tree.path("data/inner"), "/inner", "read-only")]).as_bytes(),
    );
    tools.add("watcher");
    airlock_e2e::wait_until("the reload to be refused", || {
        let log = server.stderr();
        if log.contains("reload refused") && log.contains("inside the read-write grant") {
            Ok(())
        } else {
            Err("no refusal yet".to_owned())
        }
    });
    let touched = call(&client, "touch", json!({"uri": "watch://alpha"}));
    assert!(is_unknown_tool(&touched), "{touched}");
    assert_ok(
        &call(&client, "read_file", json!({"path": "/shared/allowed.txt"})),
        ALLOWED,
    );
}

#[test]
fn a_grant_may_expose_neither_the_tools_directory_for_writing_nor_key_files() {
    let keys = tempfile::Builder::new()
        .prefix("airlock-grants-keys-")
        .tempdir()
        .unwrap();
    let key_file = keys.path().join("state.keys");
    let (status, key, _) = run_airlock(&["keygen"]);
    assert!(status.success());
    std::fs::write(&key_file, key).unwrap();

    let tools = ToolsDir::with(&["hostile", "hash"]);
    let parent = tools.path().parent().unwrap().to_path_buf();
    tools.add_bytes(
        "hostile.toml",
        dirs(&[(&parent, "/up", "read-write")]).as_bytes(),
    );
    let server = serve(&tools, &[]);
    let log = server.stderr();
    assert!(
        log.contains("skipping component") && log.contains("Airlock loads code from"),
        "{log}"
    );
    assert_sha256_works(&server.client());
    drop(server);

    tools.add_bytes(
        "hostile.toml",
        dirs(&[(keys.path(), "/keys", "read-only")]).as_bytes(),
    );
    let server = serve(&tools, &["--state-keys-file", key_file.to_str().unwrap()]);
    let said = call(
        &server.client(),
        "read_file",
        json!({"path": "/keys/state.keys"}),
    );
    assert!(is_unknown_tool(&said), "{said}");
    assert!(server.stderr().contains("keys, tokens or secrets"));
}

/// The call was refused because no component serves the tool.
fn is_unknown_tool(response: &Value) -> bool {
    response["error"]["message"]
        .as_str()
        .is_some_and(|message| message.contains("Unknown tool"))
}

/// A fresh state key, as `airlock keygen` prints it.
fn state_key() -> String {
    let (status, key, _) = run_airlock(&["keygen"]);
    assert!(status.success());
    key.trim().to_owned()
}

/// The server's own process, its environment with the state keys in it,
/// through a grant of `/proc`: the component is refused, the keys stay in.
#[test]
fn a_grant_of_proc_is_refused_so_the_state_keys_stay_in_the_server() {
    let key = state_key();
    let tools = tools_with(Some(&dirs(&[(Path::new("/proc"), "/p", "read-only")])));
    let server = airlock(&tools).env("AIRLOCK_STATE_KEYS", &key).start_http();
    let client = server.client();
    for path in ["/p/self/environ", "/p/1/environ", "/p/self/status"] {
        let said = call(&client, "read_file", json!({ "path": path }));
        assert!(
            !said.to_string().contains(&key),
            "{path} gave a guest the state keys: {said}"
        );
        assert!(
            is_unknown_tool(&said),
            "the component must not be served: {said}"
        );
    }
    let log = server.stderr();
    assert!(
        log.lines().any(|line| line.contains("skipping component")
            && line.contains("hostile.toml")
            && line.contains("[[dirs]] #1")
            && line.contains("/proc")
            && line.contains("expose the host")),
        "the log should name the manifest, the grant and why:\n{log}"
    );
    assert_sha256_works(&client);
    drop(server);

    // Nor may a manifest copy the variable that holds them.
    tools.add_bytes(
        "hostile.toml",
        b"[env]\nKEYS = { from-env = \"AIRLOCK_STATE_KEYS\" }\n",
    );
    let server = airlock(&tools).env("AIRLOCK_STATE_KEYS", &key).start_http();
    let said = call(&server.client(), "env", json!({"name": "KEYS"}));
    assert!(!said.to_string().contains(&key), "{said}");
    assert!(is_unknown_tool(&said), "{said}");
    assert!(server.stderr().contains("holds Airlock's state keys"));
}

/// Every spelling of a place that exposes the host is the same place, and
/// refused as a grant: `airlock inspect` says why the component would not
/// be loaded.
#[test]
fn the_host_is_never_granted_however_it_is_spelled() {
    let tree = Tree::new();
    std::os::unix::fs::symlink("/proc", tree.path("to-proc")).unwrap();
    std::os::unix::fs::symlink("/", tree.path("to-root")).unwrap();
    std::os::unix::fs::symlink(up_to_root(&tree.path("data")), tree.path("data/up")).unwrap();
    let link = |name: &str| tree.path(name).display().to_string();
    let mut spellings = vec![
        "/".to_owned(),
        "/proc".to_owned(),
        "/proc/../proc".to_owned(),
        "/./proc".to_owned(),
        "/proc/self".to_owned(),
        "/proc/self/root".to_owned(),
        "/sys".to_owned(),
        "/sys/kernel".to_owned(),
        "/dev".to_owned(),
        link("to-proc"),
        link("to-proc/self"),
        link("to-root"),
        link("data/up"),
        link("data/up/proc"),
    ];
    if Path::new("/dev/shm").is_dir() {
        spellings.push("/dev/shm".to_owned());
    }
    let tools = ToolsDir::with(&["hostile"]);
    let component = tools.path().join("hostile.wasm");
    for spelling in &spellings {
        tools.add_bytes(
            "hostile.toml",
            dirs(&[(Path::new(spelling), "/g", "read-only")]).as_bytes(),
        );
        let (status, out, err) = run_airlock(&["inspect", component.to_str().unwrap()]);
        assert!(
            !status.success(),
            "a grant of {spelling} must be refused; inspect said:\n{out}"
        );
        assert!(
            err.contains("would not be loaded")
                && err.contains("[[dirs]] #1")
                && err.contains("cannot be granted")
                && err.contains("expose"),
            "{spelling}: the refusal should name the grant and why:\n{err}"
        );
    }
}

/// Inside a granted directory, a link to `/proc` or to the root leads
/// nowhere: the guest's paths are resolved beneath the granted directory
/// (wasmtime-wasi refuses absolute links and `..` past it).
#[test]
fn a_link_to_the_host_inside_a_grant_leads_nowhere() {
    let tree = Tree::new();
    std::os::unix::fs::symlink("/proc", tree.path("data/p")).unwrap();
    std::os::unix::fs::symlink(up_to_root(&tree.path("data")), tree.path("data/up")).unwrap();
    let tools = tools_with(Some(&dirs(&[(&tree.path("data"), "/data", "read-only")])));
    let server = serve(&tools, &[]);
    let client = server.client();
    assert_ok(
        &call(&client, "read_file", json!({"path": "/data/allowed.txt"})),
        ALLOWED,
    );
    for path in [
        "/data/p/self/environ",
        "/data/p/self/status",
        "/data/up/proc/self/environ",
        "/data/up/etc/passwd",
    ] {
        assert_refused(
            &call(&client, "read_file", json!({ "path": path })),
            &format!("reading {path} through a link inside the grant"),
        );
    }
    assert_refused(
        &call(&client, "list_dir", json!({"path": "/data/p"})),
        "listing a link to /proc inside the grant",
    );
    assert_sha256_works(&client);
}
