//! The trace options of `airlock serve`.

use std::time::Duration;

use super::values;
use crate::telemetry::TraceSettings;

/// Trace options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Traces")]
pub struct TraceOptions {
    /// OpenTelemetry collector to send traces to, over OTLP/HTTP (protobuf): its base URL, e.g.
    /// `http://127.0.0.1:4318` (spans are posted to `/v1/traces` under it). Plain HTTP only: run
    /// the collector beside Airlock. One span per MCP request, with its steps as children. Off by
    /// default: without it no span is made. OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*
    /// and OTEL_RESOURCE_ATTRIBUTES variables apply (the export timeout is --otlp-timeout).
    #[arg(long, value_name = "URL", value_parser = otlp_endpoint)]
    pub otlp_endpoint: Option<String>,
    /// Fraction of new traces recorded, from 0 to 1. A request that carries its caller's trace
    /// context follows the caller's decision instead.
    #[arg(long, value_name = "RATIO", default_value_t = 1.0, requires = "otlp_endpoint",
          value_parser = sample_ratio)]
    pub otlp_sample_ratio: f64,
    /// How long one export of spans may wait for the collector (retries included), and how long
    /// the last export may take when the server shuts down: past it the spans still queued are
    /// dropped and the server exits. Replaces OTEL_EXPORTER_OTLP_TIMEOUT.
    #[arg(long, value_name = "DURATION", default_value = "10s", requires = "otlp_endpoint",
          value_parser = values::duration(Duration::from_millis(1)))]
    pub otlp_timeout: Duration,
}

impl TraceOptions {
    /// Where spans go, if anywhere.
    pub fn settings(&self) -> Option<TraceSettings> {
        self.otlp_endpoint.clone().map(|endpoint| TraceSettings {
            endpoint,
            sample_ratio: self.otlp_sample_ratio,
            export_timeout: self.otlp_timeout,
        })
    }
}

/// An `http://` URL with a host (the exporter has no TLS).
fn otlp_endpoint(text: &str) -> Result<String, String> {
    let uri: axum::http::Uri = text
        .parse()
        .map_err(|error| format!("not a URL ({error})"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(text.to_owned()),
        Some("https") => Err(
            "https is not supported: send spans to a collector on a private address over http://"
                .to_owned(),
        ),
        _ => {
            Err("give the collector's http://HOST:PORT URL, e.g. http://127.0.0.1:4318".to_owned())
        }
    }
}

/// A fraction from 0 to 1.
fn sample_ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
        _ => Err("must be a number from 0 to 1, e.g. 0.1".to_owned()),
    }
}
