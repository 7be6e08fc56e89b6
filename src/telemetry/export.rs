//! The export side of `--otlp`: a bounded queue between the run and one background thread
//! that sends batches to the collector, so a slow or dead collector never slows the run.
//!
//! Spans enter the queue as they end ([`Queue`] is the tracer's span processor); a full
//! queue drops the span and counts it. The thread exports whatever the queue holds, one
//! batch at a time, on its own single-threaded runtime. At the end of the run
//! [`Exporter::finish`] waits a short, fixed deadline for the queue to drain and then
//! returns whatever happened: the process exits without joining the thread, so a collector
//! that never answers costs the run that deadline at most.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

/// Spans the queue holds at most; more are dropped (and counted) until the thread catches up.
pub const QUEUE: usize = 2048;
/// Spans per request to the collector.
const BATCH: usize = 512;
/// How long one request may take before the exporter gives up on it (the thread's time,
/// never the run's).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end of a run waits for the queue to drain. A collector on the same machine
/// or network answers well within it, even a busy one (Phoenix on a loaded 2-core machine
/// took over 200 ms); one that does not answer costs the run no more, and one that has
/// left a request unanswered for over [`STALLED`] costs it nothing.
pub const FLUSH_DEADLINE: Duration = Duration::from_millis(500);

/// The end-of-run deadline: `OTEL_BSP_EXPORT_TIMEOUT` (milliseconds, OpenTelemetry's
/// variable for how long an export may take) when it is a whole number, else
/// [`FLUSH_DEADLINE`]. For a collector known to be slow, or a machine known to be loaded.
pub fn flush_deadline(var: &dyn Fn(&str) -> Option<String>) -> Duration {
    var("OTEL_BSP_EXPORT_TIMEOUT")
        .and_then(|millis| millis.trim().parse::<u64>().ok())
        .map_or(FLUSH_DEADLINE, Duration::from_millis)
}

/// What goes to the export thread.
enum Item {
    Span(Box<SpanData>),
    Metrics(Box<ResourceMetrics>),
    /// Answered once everything queued before it was sent (or failed).
    Flush(SyncSender<()>),
}

/// A request in flight longer than this when the run ends means the collector is not
/// answering: the end of the run does not wait for it at all.
const STALLED: Duration = Duration::from_secs(1);

/// Counts shared by the run, the queue and the thread.
#[derive(Debug)]
struct Counts {
    /// When the export started: `busy_since` counts from it.
    epoch: Instant,
    ended: AtomicU64,
    dropped: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    /// The first export error, reported at the end.
    error: Mutex<Option<String>>,
    /// Why the metrics did not reach the collector, when they did not.
    metrics_error: Mutex<Option<String>>,
    /// A request is under way (the thread is waiting for the collector).
    busy: AtomicBool,
    /// When the request under way started, in milliseconds from `epoch`.
    busy_since: AtomicU64,
}

impl Counts {
    fn new() -> Counts {
        Counts {
            epoch: Instant::now(),
            ended: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            error: Mutex::new(None),
            metrics_error: Mutex::new(None),
            busy: AtomicBool::new(false),
            busy_since: AtomicU64::new(0),
        }
    }

    /// Marks a request under way (or done).
    fn busy(&self, busy: bool) {
        if busy {
            let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.busy_since.store(now, Ordering::Relaxed);
        }
        self.busy.store(busy, Ordering::Relaxed);
    }

    /// A request has been waiting for the collector longer than [`STALLED`].
    fn stalled(&self) -> bool {
        let since = Duration::from_millis(self.busy_since.load(Ordering::Relaxed));
        self.busy.load(Ordering::Relaxed) && self.epoch.elapsed().saturating_sub(since) > STALLED
    }

    fn fail(&self, spans: u64, error: String) {
        self.failed.fetch_add(spans, Ordering::Relaxed);
        if let Ok(mut first) = self.error.lock() {
            first.get_or_insert(error);
        }
    }
}

/// The tracer's span processor: hands each ended span to the export thread without waiting.
#[derive(Debug)]
pub struct Queue {
    sender: SyncSender<Item>,
    counts: Arc<Counts>,
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        self.counts.ended.fetch_add(1, Ordering::Relaxed);
        if self.sender.try_send(Item::Span(Box::new(span))).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The run's end of the export thread.
pub struct Exporter {
    sender: SyncSender<Item>,
    counts: Arc<Counts>,
    /// Where the spans go, for the report.
    traces: String,
}

/// The collector's URLs for spans and metrics.
pub struct Endpoints {
    pub traces: String,
    pub metrics: String,
}

/// Starts the export thread for `endpoints`, and returns the span processor that feeds it
/// with the handle that finishes it.
pub fn start(endpoints: &Endpoints, resource: &Resource) -> Result<(Queue, Exporter), String> {
    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoints.traces.clone())
        .with_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| format!("cannot set up the OTLP exporter: {error}"))?;
    spans.set_resource(resource);
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoints.metrics.clone())
        .with_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| format!("cannot set up the OTLP metrics exporter: {error}"))?;
    let (sender, receiver) = sync_channel(QUEUE);
    let counts = Arc::new(Counts::new());
    let thread_counts = Arc::clone(&counts);
    std::thread::Builder::new()
        .name("otlp-export".to_string())
        .spawn(move || export_loop(&receiver, &spans, &metrics, &thread_counts))
        .map_err(|error| format!("cannot start the OTLP export thread: {error}"))?;
    let queue = Queue {
        sender: sender.clone(),
        counts: Arc::clone(&counts),
    };
    let exporter = Exporter {
        sender,
        counts,
        traces: endpoints.traces.clone(),
    };
    Ok((queue, exporter))
}

/// The thread: takes what is queued, sends it, and answers flushes, until the run is gone.
fn export_loop(
    receiver: &Receiver<Item>,
    spans: &opentelemetry_otlp::SpanExporter,
    metrics: &opentelemetry_otlp::MetricExporter,
    counts: &Counts,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return counts.fail(0, format!("cannot start the export runtime: {error}")),
    };
    while let Ok(first) = receiver.recv() {
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Item::Span(span) => batch.push(*span),
                Item::Metrics(data) => {
                    counts.busy(true);
                    if let Err(error) = runtime.block_on(metrics.export(&data)) {
                        metrics_failed(counts, &error.to_string());
                    }
                    counts.busy(false);
                }
                Item::Flush(done) => flushes.push(done),
            }
            if batch.len() < BATCH {
                next = receiver.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            let size = batch.len() as u64;
            counts.busy(true);
            match runtime.block_on(spans.export(batch)) {
                Ok(()) => {
                    counts.exported.fetch_add(size, Ordering::Relaxed);
                }
                Err(error) => counts.fail(size, error.to_string()),
            }
            counts.busy(false);
        }
        for done in flushes {
            let _ = done.try_send(());
        }
    }
}

/// Notes a failed metrics export, unless the collector has no metrics endpoint at all
/// (404 or 405: a traces-only backend such as Phoenix), which is no fault to report.
fn metrics_failed(counts: &Counts, error: &str) {
    let absent = ["Status(404", "Status(405"]
        .iter()
        .any(|status| error.contains(status));
    if !absent {
        if let Ok(mut first) = counts.metrics_error.lock() {
            first.get_or_insert_with(|| error.to_string());
        }
    }
}

impl Exporter {
    /// Queues the run's metrics; dropped, like a span, when the queue is full.
    pub fn metrics(&self, data: ResourceMetrics) {
        if let Err(TrySendError::Full(_)) = self.sender.try_send(Item::Metrics(Box::new(data))) {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits at most `deadline` for the queue to drain (not at all when the collector has
    /// left a request unanswered for over a second), and returns the one line to print
    /// when some spans did not reach the collector.
    pub fn finish(self, deadline: Duration) -> Option<String> {
        let deadline = if self.counts.stalled() {
            Duration::ZERO
        } else {
            deadline
        };
        let (done, wait) = sync_channel(1);
        let flushed = match self.sender.try_send(Item::Flush(done)) {
            Ok(()) => !matches!(
                wait.recv_timeout(deadline),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected)
            ),
            Err(_) => false,
        };
        self.report(flushed, deadline)
    }

    fn report(&self, flushed: bool, deadline: Duration) -> Option<String> {
        let counts = &self.counts;
        let ended = counts.ended.load(Ordering::Relaxed);
        let dropped = counts.dropped.load(Ordering::Relaxed);
        let exported = counts.exported.load(Ordering::Relaxed);
        let failed = counts.failed.load(Ordering::Relaxed);
        let error = counts.error.lock().ok().and_then(|error| error.clone());
        let metrics = counts
            .metrics_error
            .lock()
            .ok()
            .and_then(|error| error.clone())
            .map(|error| format!("warning: telemetry: the run's metrics were not taken: {error}"));
        if flushed && dropped == 0 && failed == 0 && error.is_none() {
            return metrics;
        }
        let unsent = ended.saturating_sub(exported + failed + dropped.min(ended));
        let mut line = format!(
            "warning: telemetry: {} of {ended} span(s) did not reach {}",
            ended.saturating_sub(exported),
            self.traces
        );
        let mut why = Vec::new();
        if dropped > 0 {
            why.push(format!("{dropped} dropped: the export queue was full"));
        }
        if failed > 0 {
            why.push(format!("{failed} failed"));
        }
        if !flushed && unsent > 0 {
            let waiting = if counts.stalled() {
                " (the collector had not answered for over a second)".to_string()
            } else {
                format!(" ({} ms were given)", deadline.as_millis())
            };
            why.push(format!("{unsent} still queued when the run ended{waiting}"));
        }
        if !why.is_empty() {
            let _ = write!(line, " ({})", why.join("; "));
        }
        if let Some(error) = error {
            let _ = write!(line, "; first error: {error}");
        }
        // The metrics went the same way: the line above says why, once.
        Some(line)
    }
}
