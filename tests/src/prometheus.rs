//! A Prometheus server of a test's own: Debian's `prometheus`, scraping the
//! given targets every second into a temporary storage directory, on a free
//! port of 127.0.0.1, and killed when dropped. `scripts/test` installs
//! `prometheus`. [`Prometheus::query`] reads numbers back through its HTTP
//! query API, as a dashboard or an alert rule would.

use std::fs;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::daemon::{Daemon, free_port};

/// How often every target is scraped.
pub const SCRAPE_INTERVAL: Duration = Duration::from_secs(1);

/// A running Prometheus.
pub struct Prometheus {
    _daemon: Daemon,
    port: u16,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts one scraping `targets` (`HOST:PORT` each, path `/metrics`)
    /// as job `job`, and waits until it answers queries.
    pub fn scraping(job: &str, targets: &[String]) -> Prometheus {
        let dir = tempfile::Builder::new()
            .prefix("airlock-prometheus-")
            .tempdir()
            .expect("create a directory for prometheus");
        let targets: Vec<String> = targets
            .iter()
            .map(|target| format!("\"{target}\""))
            .collect();
        let interval = format!("{}s", SCRAPE_INTERVAL.as_secs());
        let config = format!(
            "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n\
             scrape_configs:\n  - job_name: {job}\n    static_configs:\n      \
             - targets: [{}]\n",
            targets.join(", ")
        );
        let config_file = dir.path().join("prometheus.yml");
        fs::write(&config_file, config).expect("write prometheus.yml");
        let port = free_port();
        let mut command = Command::new("prometheus");
        command
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn");
        let mut daemon = Daemon::spawn(command, "apt-get install -y prometheus; scripts/test does");
        daemon.wait_for_port(port);
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into();
        Prometheus {
            _daemon: daemon,
            port,
            agent,
            _dir: dir,
        }
    }

    /// Runs the instant query `promql` (`GET /api/v1/query`) and returns
    /// the value of each series of the resulting vector, with its labels;
    /// `Err` when Prometheus is not ready or the query fails.
    pub fn query(&self, promql: &str) -> Result<Vec<(Value, f64)>, String> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let mut response = self
            .agent
            .get(&url)
            .query("query", promql)
            .call()
            .map_err(|e| format!("GET {url}: {e}"))?;
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("read the answer of {url}: {e}"))?;
        let answer: Value =
            serde_json::from_str(&body).map_err(|e| format!("not JSON ({e}): {body}"))?;
        if answer["status"] != "success" || answer["data"]["resultType"] != "vector" {
            return Err(format!("query {promql:?} failed: {answer}"));
        }
        answer["data"]["result"]
            .as_array()
            .ok_or_else(|| format!("no result in {answer}"))?
            .iter()
            .map(|series| {
                let value = series["value"][1]
                    .as_str()
                    .and_then(|text| text.parse().ok())
                    .ok_or_else(|| format!("no value in {series}"))?;
                Ok((series["metric"].clone(), value))
            })
            .collect()
    }

    /// The one value of `promql` (an aggregate such as `sum(...)`); `Err`
    /// while the query has no series yet.
    pub fn value(&self, promql: &str) -> Result<f64, String> {
        match self.query(promql)?.as_slice() {
            [(_, value)] => Ok(*value),
            other => Err(format!("{promql} gave {other:?}, not one value")),
        }
    }
}
