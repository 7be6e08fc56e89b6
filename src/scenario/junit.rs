//! JUnit XML for CI systems: one `testsuite`, one `testcase` per scenario; a changed or
//! missing snapshot is a `failure` carrying the diff, a scenario that cannot run an `error`.

use std::time::Duration;

use super::{Report, Verdict};

/// Text safe inside XML content and attribute values (XML 1.0: characters it cannot carry
/// at all are dropped).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            ch if (ch as u32) < 0x20 || ch == '\u{FFFE}' || ch == '\u{FFFF}' => {}
            ch => out.push(ch),
        }
    }
    out
}

fn seconds(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64())
}

/// The JUnit document for these reports.
pub fn render(reports: &[Report], total: Duration) -> String {
    let failures = reports.iter().filter(|r| r.verdict.is_failure()).count();
    let errors = reports.iter().filter(|r| r.verdict.is_error()).count();
    let tests = reports.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"fuseraft test\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">\n",
        seconds(total)
    ));
    out.push_str(&format!(
        "  <testsuite name=\"scenarios\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{}\">\n",
        seconds(total)
    ));
    for report in reports {
        let name = escape(&report.path.display().to_string());
        let time = seconds(report.elapsed);
        let open = format!(
            "    <testcase name=\"{name}\" classname=\"fuseraft.scenario\" time=\"{time}\""
        );
        let body = match &report.verdict {
            Verdict::Passed | Verdict::Accepted { .. } => None,
            Verdict::Changed { diff, pending } => Some(format!(
                "      <failure type=\"snapshot-changed\" message=\"{}\">{}</failure>\n",
                escape(&format!(
                    "the routing trace differs from the snapshot; the new trace is in {}",
                    pending.display()
                )),
                escape(diff)
            )),
            Verdict::Missing { pending } => Some(format!(
                "      <failure type=\"snapshot-missing\" message=\"{}\">{}</failure>\n",
                escape(&format!(
                    "no snapshot yet; review {} and accept it with `fuseraft test --accept`",
                    pending.display()
                )),
                escape(&report.trace)
            )),
            Verdict::Error { message, short } => Some(format!(
                "      <error type=\"scenario-error\" message=\"{}\">{}</error>\n",
                escape(short),
                escape(message)
            )),
        };
        match body {
            None => out.push_str(&format!("{open}/>\n")),
            Some(body) => {
                out.push_str(&format!("{open}>\n{body}    </testcase>\n"));
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\n"
        );
    }
}
