//! OpenTelemetry export of a run (`exec --otlp URL`, the config's `Telemetry` section, the
//! `OTEL_EXPORTER_OTLP_*` variables): the run's events become one trace per session, sent
//! over OTLP/HTTP with protobuf by a background thread (`docs/observability.md`).
//!
//! [`settings`] decides whether and where to export; [`Telemetry`] turns each event into
//! spans ([`trace`]) and hands them to the export thread ([`export`]).

mod attributes;
pub mod export;
mod metrics;
mod trace;

use std::time::Duration;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::event::Event;
use fuseraft_vm::history::Message;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

pub use trace::{root_span_id, trace_id};

/// The config key with the collector's base URL (upstream's key).
pub const ENDPOINT_KEY: &str = "Telemetry.OtlpEndpoint";
/// The config key that lets prompt and completion text into the spans.
pub const CAPTURE_KEY: &str = "Telemetry.CaptureContent";

/// Where the spans go and what they may carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub endpoints: Endpoints,
    /// `Telemetry.CaptureContent: true`: prompts, replies and tool arguments in the spans.
    pub capture_content: bool,
}

/// The collector's URLs, and what named them (for messages).
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoints {
    pub traces: String,
    pub metrics: String,
    pub from: String,
}

/// Whether and where this run exports: `--otlp` first, then the config's
/// `Telemetry.OtlpEndpoint`, then `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the spans' URL as
/// it is) and `OTEL_EXPORTER_OTLP_ENDPOINT`; none of them, no export. A base URL gets
/// `/v1/traces` and `/v1/metrics`. A malformed URL is an error naming where it came from.
pub fn settings(
    flag: Option<&str>,
    config: &[(String, String)],
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Settings>, String> {
    let setting = |key: &str| {
        config
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.trim().to_string())
    };
    let capture = setting(CAPTURE_KEY).map(|value| value.to_ascii_lowercase());
    let capture_content = match capture.as_deref() {
        None | Some("false" | "") => false,
        Some("true") => true,
        Some(_) => {
            let other = setting(CAPTURE_KEY).unwrap_or_default();
            return Err(format!(
                "`{CAPTURE_KEY}` is `{other}`: it takes `true` or `false`"
            ));
        }
    };
    let given = |value: Option<String>| value.filter(|value| !value.trim().is_empty());
    let endpoints = if let Some(url) = given(flag.map(str::to_string)) {
        base(&url, "`--otlp`")?
    } else if let Some(url) = given(setting(ENDPOINT_KEY)) {
        base(&url, &format!("`{ENDPOINT_KEY}`"))?
    } else if let Some(url) = given(var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
        let traces = checked(&url, "`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`")?;
        let metrics = match given(var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            Some(url) => base(&url, "`OTEL_EXPORTER_OTLP_ENDPOINT`")?.metrics,
            None => joined(&traces, "v1/metrics"),
        };
        Endpoints {
            traces,
            metrics,
            from: "`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`".to_string(),
        }
    } else if let Some(url) = given(var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
        base(&url, "`OTEL_EXPORTER_OTLP_ENDPOINT`")?
    } else {
        return Ok(None);
    };
    Ok(Some(Settings {
        endpoints,
        capture_content,
    }))
}

/// `URL/v1/traces` and `URL/v1/metrics` for the base URL `text`.
fn base(text: &str, from: &str) -> Result<Endpoints, String> {
    let url = checked(text, from)?;
    Ok(Endpoints {
        traces: joined(&url, "v1/traces"),
        metrics: joined(&url, "v1/metrics"),
        from: from.to_string(),
    })
}

fn joined(base: &str, path: &str) -> String {
    // A traces URL given as such keeps its origin: its metrics go beside it.
    let base = base.strip_suffix("/v1/traces").unwrap_or(base);
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// `text` as an http(s) URL with a host, or an error that names `from`.
fn checked(text: &str, from: &str) -> Result<String, String> {
    let text = text.trim();
    let url = url::Url::parse(text)
        .map_err(|error| format!("{from} is not a URL (`{text}`: {error})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "{from} must be an http:// or https:// URL of an OTLP collector, not `{text}`"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{from} carries credentials in the URL; fuseraft sends none to a collector"
        ));
    }
    Ok(text.to_string())
}

/// A run's export: the tracer that the events drive and the thread that sends the spans.
pub struct Telemetry {
    trace: trace::Trace,
    metrics: metrics::Metrics,
    exporter: export::Exporter,
    provider: SdkTracerProvider,
}

/// What the spans say about the run besides its events.
pub struct RunInfo<'a> {
    pub session: &'a str,
    pub program: &'a Program,
    /// `--model`, which overrides every agent's model.
    pub model_flag: Option<&'a str>,
    /// The run answers its model calls from a replay file.
    pub replay: bool,
    /// The run continues a session (`--resume`).
    pub resumed: bool,
}

impl Telemetry {
    /// Starts exporting to `settings`' collector.
    pub fn start(settings: &Settings, info: &RunInfo<'_>) -> Result<Telemetry, String> {
        let resource = Resource::builder_empty()
            .with_service_name("fuseraft")
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let endpoints = export::Endpoints {
            traces: settings.endpoints.traces.clone(),
            metrics: settings.endpoints.metrics.clone(),
        };
        let (queue, exporter) = export::start(&endpoints, &resource)?;
        let provider = SdkTracerProvider::builder()
            .with_span_processor(queue)
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer("fuseraft");
        Ok(Telemetry {
            trace: trace::Trace::new(tracer, settings.capture_content, info),
            metrics: metrics::Metrics::new(resource),
            exporter,
            provider,
        })
    }

    /// Turns one run event into spans, span events and measurements.
    /// `history` is the run's (`Run::history`), where a turn's tool calls are.
    pub fn event(&mut self, event: &Event, history: &[Message]) {
        if let Some(call) = self.trace.event(event, history) {
            self.metrics.record(&call);
        }
    }

    /// Ends what is still open, queues the metrics, waits at most `deadline` for the queue
    /// to drain, and returns the line to print when something did not reach the collector.
    pub fn finish(mut self, deadline: Duration) -> Option<String> {
        self.trace.close();
        if let Some(data) = self.metrics.collect() {
            self.exporter.metrics(data);
        }
        let report = self.exporter.finish(deadline);
        // The processor only queues: nothing here waits for the collector.
        drop(self.provider);
        report
    }
}

#[cfg(test)]
mod tests;
