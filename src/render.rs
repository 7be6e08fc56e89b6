//! Rendering diagnostics for people: miette's graphical report with source snippets, and a
//! one-line `file:line:col` form. Deterministic (no colour, fixed width) when asked, so
//! snapshots and CI logs stay stable.

use std::fmt;

use fuseraft_compiler::diagnostic::Label;
use fuseraft_compiler::{Diagnostic, Severity, SourceMap};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};

/// How to draw reports.
#[derive(Copy, Clone, Debug)]
pub struct Style {
    /// Colour on standard error (where reports go).
    pub color: bool,
    pub width: usize,
    /// `--color always|never`; `None` for `auto`.
    pub forced: Option<bool>,
}

impl Style {
    /// No colour, 80 columns: for snapshots and pipes.
    pub fn plain() -> Style {
        Style {
            color: false,
            width: 80,
            forced: Some(false),
        }
    }

    /// Whether output to a stream that is (`tty`) or is not a terminal is coloured: as
    /// `--color` says, else by [`auto_colour`] and the environment.
    pub fn colour_for(&self, tty: bool) -> bool {
        self.forced.unwrap_or_else(|| {
            auto_colour(
                tty,
                std::env::var_os("NO_COLOR").as_deref(),
                std::env::var_os("CLICOLOR_FORCE").as_deref(),
                std::env::var_os("TERM").as_deref(),
            )
        })
    }
}

/// `--color auto`: `NO_COLOR` (set and not empty) turns colour off, `CLICOLOR_FORCE` (set,
/// not empty and not `0`) turns it on even into a pipe, `TERM=dumb` turns it off; otherwise
/// a terminal is coloured and anything else is not.
pub fn auto_colour(
    tty: bool,
    no_color: Option<&std::ffi::OsStr>,
    clicolor_force: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    let set = |value: Option<&std::ffi::OsStr>| value.is_some_and(|value| !value.is_empty());
    if set(no_color) {
        return false;
    }
    if set(clicolor_force) && clicolor_force != Some(std::ffi::OsStr::new("0")) {
        return true;
    }
    if term == Some(std::ffi::OsStr::new("dumb")) {
        return false;
    }
    tty
}

/// A [`Diagnostic`] with its source attached, in the shape miette draws.
#[derive(Debug)]
struct Report {
    code: String,
    message: String,
    severity: miette::Severity,
    help: Option<String>,
    labels: Vec<LabeledSpan>,
    source: Option<NamedSource<String>>,
    related: Vec<Report>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source
            .as_ref()
            .map(|source| source as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(
                self.related.iter().map(|r| r as &dyn miette::Diagnostic),
            ))
        }
    }
}

fn severity(severity: Severity) -> miette::Severity {
    match severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
        Severity::Advice => miette::Severity::Advice,
    }
}

/// `file:line:col` of a label.
pub fn position(sources: &SourceMap, label: &Label) -> String {
    let file = sources.get(label.span.file);
    let at = file.line_col(label.span.start);
    format!("{}:{}:{}", file.name, at.line, at.column)
}

fn report(diag: &Diagnostic, sources: &SourceMap) -> Report {
    let primary_file = diag.span().map(|span| span.file);
    let mut labels = Vec::new();
    let mut elsewhere = Vec::new();
    for label in &diag.labels {
        if Some(label.span.file) == primary_file && (label.span.file.0 as usize) < sources.len() {
            let span = SourceSpan::new((label.span.start as usize).into(), label.span.len());
            let text = Some(label.message.clone()).filter(|text| !text.is_empty());
            labels.push(if label.primary {
                LabeledSpan::new_primary_with_span(text, span)
            } else {
                LabeledSpan::new_with_span(text, span)
            });
        } else if (label.span.file.0 as usize) < sources.len() {
            elsewhere.push(format!("{}: {}", position(sources, label), label.message));
        }
    }
    let mut help = diag.help.clone();
    if !elsewhere.is_empty() {
        let note = format!("see also {}", elsewhere.join("; "));
        help = Some(match help {
            Some(help) => format!("{help}\n{note}"),
            None => note,
        });
    }
    let source = primary_file
        .filter(|file| (file.0 as usize) < sources.len())
        .map(|file| {
            let file = sources.get(file);
            NamedSource::new(file.name.clone(), file.text.clone()).with_language("yaml")
        });
    Report {
        code: format!("{}({})", diag.code.as_str(), diag.code.name()),
        message: diag.message.clone(),
        severity: severity(diag.severity),
        help,
        labels,
        source,
        related: diag.related.iter().map(|r| report(r, sources)).collect(),
    }
}

/// Lines longer than this are not drawn as snippets (miette cannot draw a label past
/// column 65,535, and such a snippet would not help anyone read it).
const MAX_SNIPPET_LINE: usize = 10_000;

/// Does any label of the diagnostic (or of its related ones) sit on a very long line?
fn on_long_line(diag: &Diagnostic, sources: &SourceMap) -> bool {
    diag.labels.iter().any(|label| {
        if label.span.file.0 as usize >= sources.len() {
            return false;
        }
        let text = &sources.get(label.span.file).text;
        let at = (label.span.start as usize).min(text.len());
        let start = text[..at].rfind('\n').map_or(0, |idx| idx + 1);
        let end = text[at..].find('\n').map_or(text.len(), |idx| at + idx);
        end - start > MAX_SNIPPET_LINE
    }) || diag
        .related
        .iter()
        .any(|related| on_long_line(related, sources))
}

/// miette's graphical report of one diagnostic.
pub fn human(diag: &Diagnostic, sources: &SourceMap, style: Style) -> String {
    if on_long_line(diag, sources) {
        let mut out = short(diag, sources);
        out.push('\n');
        if let Some(help) = &diag.help {
            out.push_str(&format!("  help: {help}\n"));
        }
        return out;
    }
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_links(false);
    let mut out = String::new();
    if handler
        .render_report(&mut out, &report(diag, sources))
        .is_err()
    {
        out = short(diag, sources);
    }
    out
}

/// `file:line:col: severity[CODE]: message`.
pub fn short(diag: &Diagnostic, sources: &SourceMap) -> String {
    let at = diag
        .labels
        .iter()
        .find(|label| label.primary)
        .filter(|label| (label.span.file.0 as usize) < sources.len())
        .map(|label| format!("{}: ", position(sources, label)))
        .unwrap_or_default();
    format!(
        "{at}{}[{}]: {}",
        diag.severity.as_str(),
        diag.code.as_str(),
        diag.message
    )
}

/// Every diagnostic, rendered, followed by a one-line count.
pub fn all(diags: &[Diagnostic], sources: &SourceMap, style: Style) -> String {
    let mut out = String::new();
    for diag in diags {
        out.push_str(&human(diag, sources, style));
    }
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    if errors + warnings > 0 {
        out.push_str(&format!("{errors} error(s), {warnings} warning(s)\n"));
    }
    out
}

#[cfg(test)]
mod colour_tests {
    use super::auto_colour;
    use std::ffi::OsStr;

    #[test]
    fn no_color_clicolor_force_and_dumb_terminals_decide_before_the_tty() {
        let os = |text: &'static str| Some(OsStr::new(text));
        assert!(auto_colour(true, None, None, os("xterm-256color")));
        assert!(!auto_colour(false, None, None, os("xterm-256color")));
        assert!(!auto_colour(true, os("1"), None, None), "NO_COLOR");
        assert!(
            auto_colour(true, os(""), None, None),
            "an empty NO_COLOR is unset"
        );
        assert!(!auto_colour(true, os("1"), os("1"), None), "NO_COLOR wins");
        assert!(
            auto_colour(false, None, os("1"), None),
            "CLICOLOR_FORCE into a pipe"
        );
        assert!(!auto_colour(false, None, os("0"), None));
        assert!(!auto_colour(true, None, None, os("dumb")));
        assert!(
            auto_colour(false, None, os("1"), os("dumb")),
            "forced beats dumb"
        );
    }
}
