//! Where `--otlp`, the `Telemetry` keys and the OTLP variables send a run's spans, and the
//! errors that name a malformed one.

use super::settings;

fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    }
}

#[test]
fn off_unless_something_names_a_collector() {
    assert_eq!(settings(None, &[], &vars(&[])), Ok(None));
}

#[test]
fn the_flag_beats_the_config_which_beats_the_variables() {
    let env = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]);
    let keyed = config(&[("Telemetry.OtlpEndpoint", "http://config:4318/")]);
    let flag = settings(Some("http://flag:4318"), &keyed, &env)
        .unwrap()
        .unwrap();
    assert_eq!(flag.endpoints.traces, "http://flag:4318/v1/traces");
    assert_eq!(flag.endpoints.metrics, "http://flag:4318/v1/metrics");
    let from_config = settings(None, &keyed, &env).unwrap().unwrap();
    assert_eq!(from_config.endpoints.traces, "http://config:4318/v1/traces");
    let from_env = settings(None, &[], &env).unwrap().unwrap();
    assert_eq!(from_env.endpoints.traces, "http://env:4318/v1/traces");
    assert!(!from_env.capture_content);
}

#[test]
fn the_traces_variable_is_the_spans_url_as_it_is() {
    let env = vars(&[(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "http://collector:4318/custom/traces",
    )]);
    let found = settings(None, &[], &env).unwrap().unwrap();
    assert_eq!(
        found.endpoints.traces,
        "http://collector:4318/custom/traces"
    );
}

#[test]
fn content_is_captured_only_when_asked() {
    let keyed = config(&[("Telemetry.CaptureContent", "true")]);
    let found = settings(Some("http://h:1"), &keyed, &vars(&[]))
        .unwrap()
        .unwrap();
    assert!(found.capture_content);
    let bad = config(&[("Telemetry.CaptureContent", "yes")]);
    let error = settings(Some("http://h:1"), &bad, &vars(&[])).unwrap_err();
    assert!(error.contains("Telemetry.CaptureContent"), "{error}");
}

#[test]
fn a_malformed_url_names_where_it_came_from() {
    let error = settings(Some("localhost:4318"), &[], &vars(&[])).unwrap_err();
    assert!(error.contains("`--otlp`"), "{error}");
    let keyed = config(&[("Telemetry.OtlpEndpoint", "not a url")]);
    let error = settings(None, &keyed, &vars(&[])).unwrap_err();
    assert!(error.contains("Telemetry.OtlpEndpoint"), "{error}");
    let env = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")]);
    let error = settings(None, &[], &env).unwrap_err();
    assert!(error.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{error}");
    let error = settings(Some("http://user:secret@h:1"), &[], &vars(&[])).unwrap_err();
    assert!(!error.contains("secret"), "{error}");
}

#[test]
fn a_session_keeps_its_trace_id() {
    assert_eq!(super::trace_id("abc"), super::trace_id("abc"));
    assert_ne!(super::trace_id("abc"), super::trace_id("abd"));
    assert_ne!(super::root_span_id("abc"), super::root_span_id("abd"));
}
