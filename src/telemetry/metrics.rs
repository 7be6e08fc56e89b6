//! The GenAI client metrics of a run: `gen_ai.client.token.usage` (tokens per model call, by
//! `gen_ai.token.type`) and `gen_ai.client.operation.duration` (seconds per call), recorded
//! as the turns end and collected once, at the end of the run, for the export thread.

use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};
use opentelemetry_sdk::Resource;

use super::trace::Call;

/// The reader the run's meter provider reports to, shared with [`Metrics::collect`].
#[derive(Debug, Clone)]
struct Shared(Arc<ManualReader>);

impl MetricReader for Shared {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

pub struct Metrics {
    reader: Shared,
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
    recorded: bool,
    _provider: SdkMeterProvider,
}

impl Metrics {
    pub fn new(resource: Resource) -> Metrics {
        let reader = Shared(Arc::new(ManualReader::builder().build()));
        let provider = SdkMeterProvider::builder()
            .with_reader(reader.clone())
            .with_resource(resource)
            .build();
        let meter = provider.meter("fuseraft");
        let tokens = meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Measures number of input and output tokens used")
            .build();
        let duration = meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("GenAI operation duration")
            .build();
        Metrics {
            reader,
            tokens,
            duration,
            recorded: false,
            _provider: provider,
        }
    }

    /// One turn's model calls, as one operation.
    pub fn record(&mut self, call: &Call) {
        let attrs = [
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", call.model.provider.clone()),
            KeyValue::new("gen_ai.request.model", call.model.id.clone()),
        ];
        let typed = |kind: &'static str| {
            let mut attrs = attrs.to_vec();
            attrs.push(KeyValue::new("gen_ai.token.type", kind));
            attrs
        };
        self.tokens.record(call.input_tokens, &typed("input"));
        self.tokens.record(call.output_tokens, &typed("output"));
        self.duration.record(call.seconds, &attrs);
        self.recorded = true;
    }

    /// Everything recorded, when anything was.
    pub fn collect(&self) -> Option<ResourceMetrics> {
        if !self.recorded {
            return None;
        }
        let mut data = ResourceMetrics::default();
        self.reader.collect(&mut data).ok()?;
        Some(data)
    }
}
