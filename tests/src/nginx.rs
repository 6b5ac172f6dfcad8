//! nginx of a test's own, in front of Airlock hosts: Debian's `nginx`, run
//! in the foreground (`daemon off`) with a temporary prefix, logging to
//! stderr, on a free port of 127.0.0.1, and killed when dropped.
//! `scripts/test` installs `nginx`.
//!
//! It serves the plain-hosts example, `deploy/nginx/airlock.conf`, as
//! written: only its `listen` line and the host list it includes are the
//! test's own. [`DebianLayout`] installs the example into a copy of Debian's
//! `/etc/nginx` by the commands of `deploy/nginx/README.md`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::daemon::{Daemon, free_port};
use crate::paths::workspace_root;

/// The line of the example that the test replaces by its own address.
const EXAMPLE_LISTEN: &str = "listen 80 default_server;";

/// A running nginx.
pub struct Nginx {
    _daemon: Daemon,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Serves `deploy/nginx/airlock.conf` in front of `hosts`
    /// (`127.0.0.1:PORT` each), with the server options of the example's
    /// `airlock-hosts.conf`.
    pub fn example(hosts: &[String]) -> Nginx {
        let example = workspace_root().join("deploy").join("nginx");
        let site = fs::read_to_string(example.join("airlock.conf")).expect("read airlock.conf");
        assert_eq!(
            site.matches(EXAMPLE_LISTEN).count(),
            1,
            "airlock.conf should have one `{EXAMPLE_LISTEN}` for the test to replace"
        );
        let listed = fs::read_to_string(example.join("airlock-hosts.conf"))
            .expect("read airlock-hosts.conf");
        let servers = Nginx::host_lines(&listed, hosts);

        let port = free_port();
        let site = site.replace(EXAMPLE_LISTEN, &format!("listen 127.0.0.1:{port};"));
        Nginx::start(port, &site, &[("airlock-hosts.conf", &servers)])
    }

    /// The server options of the example's `airlock-hosts.conf`, and its
    /// `server` lines for `hosts` with them.
    fn host_lines(listed: &str, hosts: &[String]) -> String {
        let options = listed
            .lines()
            .find_map(|line| line.trim().strip_prefix("server "))
            .and_then(|server| server.trim_end_matches(';').split_once(' '))
            .map(|(_, options)| options.to_owned())
            .unwrap_or_default();
        hosts
            .iter()
            .map(|host| format!("server {host} {options};\n"))
            .collect()
    }

    /// Starts nginx on `port` with `site` in its `http` block and `files`
    /// beside its configuration (for the site's `include`s).
    pub fn start(port: u16, site: &str, files: &[(&str, &str)]) -> Nginx {
        let dir = tempfile::Builder::new()
            .prefix("airlock-nginx-")
            .tempdir()
            .expect("create a directory for nginx");
        let prefix = dir.path();
        // Workers run as an unprivileged user when the test is root: they
        // need to reach their temporary directories.
        set_mode(prefix, 0o755);
        for (name, text) in files {
            fs::write(prefix.join(name), text).expect("write an nginx file");
        }
        fs::write(prefix.join("site.conf"), site).expect("write the site");
        let config = format!(
            "daemon off;\n\
             worker_processes 2;\n\
             pid {prefix}/nginx.pid;\n\
             error_log stderr warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n\
             access_log off;\n\
             client_body_temp_path {prefix}/client_body;\n\
             proxy_temp_path {prefix}/proxy;\n\
             fastcgi_temp_path {prefix}/fastcgi;\n\
             uwsgi_temp_path {prefix}/uwsgi;\n\
             scgi_temp_path {prefix}/scgi;\n\
             include site.conf;\n\
             }}\n",
            prefix = prefix.display()
        );
        fs::write(prefix.join("nginx.conf"), config).expect("write nginx.conf");
        let mut command = Command::new("nginx");
        command
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            // Before the configuration is read, nginx logs to its built-in
            // path; send that to stderr too.
            .args(["-e", "stderr"]);
        let mut daemon = Daemon::spawn(command, "apt-get install -y nginx; scripts/test does");
        daemon.wait_for_port(port);
        Nginx {
            _daemon: daemon,
            port,
            _dir: dir,
        }
    }

    /// The MCP endpoint through nginx: `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("set permissions");
}

/// Where Debian's nginx keeps its configuration.
const DEBIAN_CONF: &str = "/etc/nginx/";

/// `deploy/nginx` installed into a copy of Debian's `/etc/nginx` (its own
/// `nginx.conf`, `conf.d/`, default site) by the commands of the README's
/// install block, run as written with `/etc/nginx/` standing for the copy.
/// Only what a test cannot share with the machine is the test's own: the
/// port (80 becomes a free port of 127.0.0.1; IPv6 listens are dropped), the
/// pid and log files, and the host list.
pub struct DebianLayout {
    dir: tempfile::TempDir,
    port: u16,
}

impl DebianLayout {
    /// Installs the example in front of `hosts` (`127.0.0.1:PORT` each).
    pub fn install(hosts: &[String]) -> DebianLayout {
        let dir = tempfile::Builder::new()
            .prefix("airlock-nginx-debian-")
            .tempdir()
            .expect("create a directory for nginx");
        let root = dir.path();
        set_mode(root, 0o755);
        copy_tree(Path::new(DEBIAN_CONF), root);
        fs::create_dir_all(root.join("log")).expect("create the log directory");
        let prefix = format!("{}/", root.display());
        let main = root.join("nginx.conf");
        let text = fs::read_to_string(&main).expect("Debian's nginx.conf (apt-get install nginx)");
        let text = text
            .replace(DEBIAN_CONF, &prefix)
            .replace("/run/nginx.pid", &format!("{prefix}nginx.pid"))
            .replace("/var/log/nginx/", &format!("{prefix}log/"));
        fs::write(&main, text).expect("write nginx.conf");

        let example = workspace_root().join("deploy").join("nginx");
        let mut hosts_file = None;
        for command in readme_install_commands(&example.join("README.md")) {
            let words: Vec<&str> = command.split_whitespace().collect();
            let here = |path: &str| -> PathBuf {
                match path.strip_prefix(DEBIAN_CONF) {
                    Some(inside) => root.join(inside),
                    None => example.join(path),
                }
            };
            match words.as_slice() {
                ["cp", from, to] => {
                    fs::copy(here(from), here(to))
                        .unwrap_or_else(|e| panic!("README: `{command}` failed: {e}"));
                    if *from == "airlock-hosts.conf" {
                        hosts_file = Some(here(to));
                    }
                }
                ["rm", path] => fs::remove_file(here(path))
                    .unwrap_or_else(|e| panic!("README: `{command}` failed: {e}")),
                // Checking and reloading: the test's own steps.
                ["nginx", "-t", ..] => {}
                _ => panic!("README: a step the test does not know: `{command}`"),
            }
        }

        let hosts_file = hosts_file.expect("README: no step installs airlock-hosts.conf");
        let listed = fs::read_to_string(&hosts_file).expect("read the installed host list");
        fs::write(&hosts_file, Nginx::host_lines(&listed, hosts)).expect("list the hosts");
        let port = free_port();
        for file in files_under(root) {
            let text = fs::read_to_string(&file).unwrap_or_default();
            if !text.contains("listen ") {
                continue;
            }
            let moved: String = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("listen [::]:80"))
                .map(|line| {
                    line.replacen("listen 80", &format!("listen 127.0.0.1:{port}"), 1) + "\n"
                })
                .collect();
            fs::write(&file, moved).expect("move a listen to the test's port");
        }
        DebianLayout { dir, port }
    }

    /// The layout's directory (what stands for `/etc/nginx`).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self) -> Command {
        let mut command = Command::new("nginx");
        command
            .arg("-p")
            .arg(self.path())
            .arg("-c")
            .arg(self.path().join("nginx.conf"))
            .args(["-e", "stderr"]);
        command
    }

    /// `nginx -t`: its report, `Ok` when the configuration is valid.
    pub fn check(&self) -> Result<String, String> {
        let output = self
            .command()
            .arg("-t")
            .output()
            .expect("run nginx -t (apt-get install -y nginx; scripts/test does)");
        let report = String::from_utf8_lossy(&output.stderr).into_owned();
        if output.status.success() {
            Ok(report)
        } else {
            Err(report)
        }
    }

    /// Starts nginx on the layout, in the foreground.
    pub fn start(self) -> Nginx {
        let mut command = self.command();
        command.args(["-g", "daemon off;"]);
        let mut daemon = Daemon::spawn(command, "apt-get install -y nginx; scripts/test does");
        daemon.wait_for_port(self.port);
        Nginx {
            _daemon: daemon,
            port: self.port,
            _dir: self.dir,
        }
    }
}

/// The commands of the README's install block: the `sh` block that copies
/// into `/etc/nginx/conf.d/`.
fn readme_install_commands(readme: &Path) -> Vec<String> {
    let text = fs::read_to_string(readme).expect("read deploy/nginx/README.md");
    let blocks: Vec<&str> = text.split("```").skip(1).step_by(2).collect();
    let block = blocks
        .iter()
        .find(|block| block.starts_with("sh\n") && block.contains("/etc/nginx/conf.d/"))
        .expect("README.md: no sh block installing into /etc/nginx/conf.d/");
    block
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Copies the directory `from` into `to`, following symbolic links (a
/// Debian site is enabled by a link to `sites-available/`).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create a directory");
    for entry in fs::read_dir(from).expect("read Debian's nginx configuration") {
        let path = entry.expect("a directory entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else if path.exists() {
            fs::copy(&path, &target).expect("copy a file of the configuration");
        }
    }
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("read a directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}
