//! nginx of a test's own, in front of Airlock hosts: Debian's `nginx`, run
//! in the foreground (`daemon off`) with a temporary prefix, logging to
//! stderr, on a free port of 127.0.0.1, and killed when dropped.
//! `scripts/test` installs `nginx`.
//!
//! It serves the plain-hosts example, `deploy/nginx/airlock.conf`, as
//! written: only its `listen` line and the host list it includes are the
//! test's own.

use std::fs;
use std::process::Command;

use crate::daemon::{Daemon, free_port};
use crate::paths::workspace_root;

/// The line of the example that the test replaces by its own address.
const EXAMPLE_LISTEN: &str = "listen 80;";

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
        let options = listed
            .lines()
            .find_map(|line| line.trim().strip_prefix("server "))
            .and_then(|server| server.trim_end_matches(';').split_once(' '))
            .map(|(_, options)| options.to_owned())
            .unwrap_or_default();
        let servers: String = hosts
            .iter()
            .map(|host| format!("server {host} {options};\n"))
            .collect();

        let port = free_port();
        let site = site.replace(EXAMPLE_LISTEN, &format!("listen 127.0.0.1:{port};"));
        Nginx::start(port, &site, &[("airlock-hosts.conf", &servers)])
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
