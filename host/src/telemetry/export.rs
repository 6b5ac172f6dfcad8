//! Sending spans to an OpenTelemetry collector: OTLP over HTTP/protobuf,
//! batched on tokio, under the resource that names this process. Every
//! export, the last one at shutdown included, is bounded by the export
//! timeout, so a collector that never answers cannot hold the process.
//! Failed exports are told by bursts ([`super::export_failures`]).

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

use super::export_failures::{Failures, REPORT_EVERY, Reporting};

/// The path of the traces signal under an OTLP/HTTP endpoint.
const TRACES_PATH: &str = "/v1/traces";

/// The service name spans carry unless `OTEL_SERVICE_NAME` says another.
const SERVICE_NAME: &str = "airlock";

/// Where spans go, and how many.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSettings {
    /// The collector's OTLP/HTTP base URL (`http://HOST:4318`); spans are
    /// posted to `{endpoint}/v1/traces`.
    pub endpoint: String,
    /// The fraction of new traces recorded, from 0 to 1. A request whose
    /// caller sent a trace context follows the caller's sampled flag.
    pub sample_ratio: f64,
    /// How long one export may wait for the collector, retries included;
    /// also how long the last export may take at shutdown.
    pub export_timeout: Duration,
}

impl TraceSettings {
    /// The URL spans are posted to.
    pub fn traces_url(&self) -> String {
        format!("{}{TRACES_PATH}", self.endpoint.trim_end_matches('/'))
    }
}

/// The exporter of this process's spans, once installed: flush it with
/// [`Exporting::shut_down`] before the process ends.
#[derive(Debug)]
pub struct Exporting {
    provider: SdkTracerProvider,
    export_timeout: Duration,
    failures: Arc<Failures>,
}

impl Exporting {
    /// Exports the spans still queued, then stops exporting. Waits at most
    /// the export timeout, once, for all of it: past it, the spans not yet
    /// sent are dropped (one line in the log says so) and this returns, so
    /// that a collector that never answers cannot delay the exit.
    pub async fn shut_down(self) {
        let Exporting {
            provider,
            export_timeout,
            failures,
        } = self;
        // The provider's shutdown blocks its thread until the batch
        // processor has worked through its queue, one export after another.
        // It runs on a thread of its own, not on a runtime's blocking pool:
        // a shutdown left behind must not hold up the runtime's own, and
        // the process does not wait for a detached thread.
        let (done, finished) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("airlock-traces-shutdown".to_owned())
            .spawn(move || {
                let _ = done.send(provider.shutdown());
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not flush the last traces");
            return;
        }
        match tokio::time::timeout(export_timeout, finished).await {
            Ok(Ok(Ok(()))) => tracing::debug!("traces flushed"),
            Ok(Ok(Err(error))) => tracing::warn!(%error, "could not flush the last traces"),
            Ok(Err(error)) => tracing::warn!(%error, "could not flush the last traces"),
            Err(_) => tracing::warn!(
                timeout_ms = export_timeout.as_millis(),
                "final export of traces abandoned: the collector did not take them within the \
                 export timeout (--otlp-timeout); the spans not yet sent are dropped"
            ),
        }
        let untold = failures.untold();
        if untold > 0 {
            tracing::warn!(
                failed = untold,
                "{untold} more exports of traces failed; their spans are dropped"
            );
        }
    }
}

/// Starts exporting spans as `settings` say, and makes request spans
/// (see [`serve`](super::serve)) from now on. Call it once, on the tokio
/// runtime that serves requests.
pub fn install(settings: &TraceSettings) -> anyhow::Result<Exporting> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.traces_url())
        .with_timeout(settings.export_timeout)
        .build()?;
    let failures = Arc::new(Failures::new(REPORT_EVERY));
    let exporter = Reporting::new(exporter, failures.clone());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter, Tokio).build())
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sample_ratio,
        ))))
        .with_resource(resource())
        .build();
    let scope = InstrumentationScope::builder(SERVICE_NAME)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    super::TRACER
        .set(provider.tracer_with_scope(scope))
        .map_err(|_| anyhow::anyhow!("traces are exported already"))?;
    tracing::info!(
        url = settings.traces_url(),
        sample_ratio = settings.sample_ratio,
        "exporting traces over OTLP"
    );
    Ok(Exporting {
        provider,
        export_timeout: settings.export_timeout,
        failures,
    })
}

/// What names this process: `service.name` (`OTEL_SERVICE_NAME`, else
/// `airlock`), `service.version`, a random `service.instance.id`, and
/// `host.name`; `OTEL_RESOURCE_ATTRIBUTES` adds to them or overrides them.
fn resource() -> Resource {
    let mut resource = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", SERVICE_NAME),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", instance_id()),
            KeyValue::new(
                "host.name",
                rustix::system::uname()
                    .nodename()
                    .to_string_lossy()
                    .into_owned(),
            ),
        ])
        .with_detectors(&[
            Box::new(TelemetryResourceDetector),
            Box::new(EnvResourceDetector::new()),
        ]);
    if let Ok(name) = std::env::var("OTEL_SERVICE_NAME")
        && !name.is_empty()
    {
        resource = resource.with_service_name(name);
    }
    resource.build()
}

/// A random UUID (version 4) naming this process among its fleet.
fn instance_id() -> String {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut bytes = [0u8; 16];
    if SystemRandom::new().fill(&mut bytes).is_err() {
        // Without randomness, the process id still tells processes apart
        // on one host.
        bytes[..4].copy_from_slice(&std::process::id().to_be_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
