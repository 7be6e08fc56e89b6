//! The loader: reads root files and includes through the caller's [`FileReader`], parses
//! them into node trees, and collects the sources and diagnostics of one compilation.

use std::path::Path;

use super::node::{Budget, Node};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, FileReader, SourceFile, SourceMap, Span};

pub struct Loader<'r> {
    pub reader: &'r dyn FileReader,
    pub sources: SourceMap,
    pub diags: Vec<Diagnostic>,
    pub budget: Budget,
    /// How many include files were loaded (bounded to stop runaway includes).
    includes: usize,
}

const MAX_INCLUDES: usize = 1000;

impl<'r> Loader<'r> {
    pub fn new(reader: &'r dyn FileReader) -> Loader<'r> {
        Loader {
            reader,
            sources: SourceMap::new(),
            diags: Vec::new(),
            budget: Budget::default(),
            includes: 0,
        }
    }

    /// Reads a file as text and registers it; an unreadable file is a diagnostic.
    pub fn read(&mut self, path: &Path, from: Option<Span>, what: &str) -> Option<FileId> {
        if let Some((id, _)) = self.sources.files().find(|(_, file)| file.path == path) {
            return Some(id);
        }
        match self.reader.read(path) {
            Ok(text) => Some(self.add(path, text)),
            Err(error) => {
                let message = match error.kind() {
                    std::io::ErrorKind::NotFound => {
                        format!("{what} `{}` does not exist", path.display())
                    }
                    _ => format!("cannot read {what} `{}`: {error}", path.display()),
                };
                let mut diag = Diagnostic::error(Code::MissingFile, message);
                if let Some(span) = from {
                    diag = diag.with_label(span, "referenced here");
                }
                if from.is_some() {
                    diag = diag.with_help(
                        "paths are relative to the directory of the file that names them",
                    );
                }
                self.diags.push(diag);
                None
            }
        }
    }

    pub fn add(&mut self, path: &Path, text: String) -> FileId {
        let name = path.display().to_string();
        self.sources.add(SourceFile::new(name, path, text))
    }

    /// Parses a registered file as YAML or JSON (by extension).
    pub fn parse(&mut self, file: FileId) -> Option<Node> {
        let source = self.sources.get(file);
        let is_json = source
            .path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        let result = if is_json {
            super::json::parse(file, &source.text, &self.budget)
        } else {
            super::yaml::parse(file, &source.text, &self.budget)
        };
        match result {
            Ok(node) => Some(node),
            Err(diag) => {
                self.diags.push(diag);
                None
            }
        }
    }

    /// Reads and parses an included file (`AgentFile`).
    pub fn load_include(&mut self, path: &Path, from: Span, what: &str) -> Option<(FileId, Node)> {
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            self.diags.push(
                Diagnostic::error(
                    Code::ResourceLimit,
                    format!("more than {MAX_INCLUDES} included files"),
                )
                .with_label(from, "while loading this include"),
            );
            return None;
        }
        let file = self.read(path, Some(from), what)?;
        let node = self.parse(file)?;
        Some((file, node))
    }
}
