//! `fuseraft check --format sarif`: SARIF 2.1.0, one run, every rule in
//! `tool.driver.rules` (not only those that fired), suppressed findings kept with an
//! `inSource` suppression and their reason. Files are named relative to the repository
//! root (`%SRCROOT%` in `originalUriBaseIds`), every result has a location (the input
//! itself when the finding has no span, e.g. a missing file) and a stable fingerprint, as
//! GitHub code scanning requires (checked by the SARIF Multitool's `Gh` rules).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{position, Checked, Position};
use fuseraft_compiler::check::all_docs;
use fuseraft_compiler::{Code, Diagnostic, Severity, SourceMap};

const DOCS: &str = "https://github.com/fuseraft/fuseraft/blob/main/docs/diagnostics.md";

/// The repository root that file URIs are relative to.
pub struct Root {
    /// Absolute.
    dir: PathBuf,
    /// Where relative input names are relative to (absolute).
    cwd: PathBuf,
}

impl Root {
    /// The nearest directory at or above `cwd` holding `.git` (a directory, or a file in a
    /// worktree), else `cwd` itself.
    pub fn discover(cwd: &Path) -> Root {
        let dir = cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(cwd)
            .to_path_buf();
        Root {
            dir,
            cwd: cwd.to_path_buf(),
        }
    }

    /// `file` as a URI relative to the root (`uriBaseId` `%SRCROOT%`), or an absolute
    /// `file:` URI when it lies outside.
    fn artifact(&self, file: &str) -> Value {
        let normal = self.absolute(file);
        match normal.strip_prefix(&self.dir) {
            Ok(relative) => json!({
                "uri": uri_path(&relative.to_string_lossy()),
                "uriBaseId": "%SRCROOT%",
            }),
            Err(_) => json!({ "uri": format!("file://{}", uri_path(&normal.to_string_lossy())) }),
        }
    }

    /// `file` made absolute against the working directory, `.` and `..` resolved lexically.
    fn absolute(&self, file: &str) -> PathBuf {
        let path = self.cwd.join(file);
        path.components().fold(PathBuf::new(), |mut out, part| {
            match part {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other),
            }
            out
        })
    }

    /// `file` relative to the root with `/` separators (`.` for the root itself), or
    /// absolute when it lies outside.
    fn relative(&self, file: &str) -> String {
        let normal = self.absolute(file);
        let shown = match normal.strip_prefix(&self.dir) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
            Ok(relative) => relative.to_string_lossy().into_owned(),
            Err(_) => normal.to_string_lossy().into_owned(),
        };
        shown.replace('\\', "/")
    }

    fn base_uri(&self) -> String {
        let mut uri = format!("file://{}", uri_path(&self.dir.to_string_lossy()));
        if !uri.ends_with('/') {
            uri.push('/');
        }
        uri
    }
}

/// A path with `/` separators and the characters a URI cannot hold percent-encoded.
fn uri_path(path: &str) -> String {
    let mut out = String::new();
    for byte in path.replace('\\', "/").bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// The run's `automationDetails.id`: `fuseraft/check/<inputs>/`, the checked files relative
/// to the repository root (sorted, comma-separated). The trailing `/` makes the whole id the
/// analysis category, so GitHub and Azure DevOps keep one result set per set of configs and
/// a later run of the same command replaces it.
fn automation_id(checked: &[Checked<'_>], root: &Root) -> String {
    let mut inputs: Vec<String> = checked
        .iter()
        .map(|input| root.relative(&input.input.to_string_lossy()))
        .collect();
    inputs.sort();
    inputs.dedup();
    format!("fuseraft/check/{}/", inputs.join(","))
}

pub fn render(checked: &[Checked<'_>], root: &Root) -> String {
    let docs = all_docs();
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|code| {
            let text = docs
                .iter()
                .find(|(documented, _)| documented == code)
                .map(|(_, text)| text.as_str())
                .unwrap_or_default();
            rule(*code, text)
        })
        .collect();
    let mut results = Vec::new();
    let findings = checked.iter().flat_map(|input| {
        let found = input.findings.diagnostics.iter().map(|diag| (diag, None));
        let suppressed = input
            .findings
            .suppressed
            .iter()
            .map(|s| (&s.diagnostic, Some(s.reason.as_str())));
        found
            .chain(suppressed)
            .map(move |(diag, reason)| (diag, reason, input))
    });
    for (diag, reason, input) in findings {
        let mut result = result(diag, input, root);
        if let (Some(reason), Value::Object(map)) = (reason, &mut result) {
            map.insert(
                "suppressions".into(),
                json!([{ "kind": "inSource", "justification": reason }]),
            );
        }
        results.push(result);
    }
    let report = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "fuseraft",
                "fullName": concat!("fuseraft workflow linter ", env!("CARGO_PKG_VERSION")),
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": DOCS,
                "rules": rules,
            }},
            "automationDetails": { "id": automation_id(checked, root) },
            "originalUriBaseIds": { "%SRCROOT%": { "uri": root.base_uri() } },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
}

fn rule(code: Code, docs: &str) -> Value {
    let full = section(docs, "## What it does");
    let short = first_sentence(&full);
    let short = if short.is_empty() { code.name() } else { short };
    json!({
        "id": code.as_str(),
        "name": code.name(),
        "shortDescription": { "text": short },
        "fullDescription": { "text": full },
        "help": { "text": docs, "markdown": docs },
        // The anchor GitHub gives the heading "## FR001 `unknown-key`".
        "helpUri": format!("{DOCS}#{}-{}", code.as_str().to_ascii_lowercase(), code.name()),
        "defaultConfiguration": { "enabled": true },
    })
}

/// The text up to and including the first full stop that ends a sentence (followed by a
/// blank or the end, outside backticks); the whole text when there is none.
fn first_sentence(text: &str) -> &str {
    let mut in_code = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '`' => in_code = !in_code,
            '.' if !in_code => match chars.peek() {
                None => return text,
                Some((_, next)) if next.is_whitespace() => return &text[..=at],
                _ => {}
            },
            _ => {}
        }
    }
    text
}

/// The text under a `##` heading, up to the next heading.
fn section(docs: &str, heading: &str) -> String {
    let Some(start) = docs.find(heading) else {
        return String::new();
    };
    let rest = &docs[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].trim().to_string()
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "note",
    }
}

fn location(at: &Position, root: &Root, message: Option<&str>, id: Option<usize>) -> Value {
    let mut value = json!({
        "physicalLocation": {
            "artifactLocation": root.artifact(&at.file),
            "region": {
                "startLine": at.line,
                "startColumn": at.column,
                "endLine": at.end_line,
                "endColumn": at.end_column,
            },
        },
    });
    if let Value::Object(map) = &mut value {
        if let Some(message) = message {
            map.insert("message".into(), json!({ "text": message }));
        }
        if let Some(id) = id {
            map.insert("id".into(), json!(id));
        }
    }
    value
}

fn result(diag: &Diagnostic, input: &Checked<'_>, root: &Root) -> Value {
    let sources: &SourceMap = input.sources;
    let rule_index = Code::ALL.iter().position(|code| *code == diag.code);
    let mut text = diag.message.clone();
    if let Some(help) = &diag.help {
        text.push_str(&format!("\nhelp: {help}"));
    }
    let primary = diag.span().and_then(|span| position(sources, span));
    // Without a span (an input that cannot be read), the input itself is the location.
    let locations = match &primary {
        Some(at) => vec![location(at, root, None, None)],
        None => vec![json!({
            "physicalLocation": {
                "artifactLocation": root.artifact(&input.input.to_string_lossy()),
                "region": { "startLine": 1 },
            },
        })],
    };
    let file = primary.as_ref().map_or_else(
        || input.input.to_string_lossy().into_owned(),
        |at| at.file.clone(),
    );
    let mut related = Vec::new();
    for label in diag.labels.iter().filter(|label| !label.primary) {
        if let Some(at) = position(sources, label.span) {
            related.push(location(
                &at,
                root,
                Some(&label.message),
                Some(related.len()),
            ));
        }
    }
    for consequence in &diag.related {
        if let Some(at) = consequence.span().and_then(|span| position(sources, span)) {
            let message = format!(
                "{}[{}]: {}",
                consequence.severity.as_str(),
                consequence.code.as_str(),
                consequence.message
            );
            related.push(location(&at, root, Some(&message), Some(related.len())));
        }
    }
    json!({
        "ruleId": diag.code.as_str(),
        "ruleIndex": rule_index,
        "level": level(diag.severity),
        "message": { "text": text },
        "locations": locations,
        "relatedLocations": related,
        "partialFingerprints": { "fuseraftFinding/v1": fingerprint(diag, &file, root) },
    })
}

/// A fingerprint that stays the same while the finding does (its code, the file and the
/// message, not the line, which edits above it move): FNV-1a, 64 bits, in hex.
fn fingerprint(diag: &Diagnostic, file: &str, root: &Root) -> String {
    let uri = root.artifact(file)["uri"]
        .as_str()
        .unwrap_or(file)
        .to_string();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in [diag.code.as_str(), "\0", &uri, "\0", &diag.message]
        .iter()
        .flat_map(|part| part.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
