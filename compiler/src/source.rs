//! Source files and byte spans: where every config value came from.
//!
//! The compiler reads nothing itself: the caller hands it text through [`SourceMap`] and a
//! [`FileReader`] for includes (`AgentFile`, tama agents), so the pipeline stays pure.

use std::path::{Path, PathBuf};

/// Index of a file in a [`SourceMap`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end.max(start) as u32,
        }
    }

    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The sub-span `start..end` (byte offsets relative to this span's start).
    pub fn sub(&self, start: usize, end: usize) -> Span {
        Span::new(
            self.file,
            self.start as usize + start,
            self.start as usize + end,
        )
    }
}

/// One loaded source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path as the user should see it in messages.
    pub name: String,
    /// The path used to resolve relative includes.
    pub path: PathBuf,
    pub text: String,
    line_starts: Vec<u32>,
}

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

impl SourceFile {
    pub fn new(
        name: impl Into<String>,
        path: impl Into<PathBuf>,
        text: impl Into<String>,
    ) -> SourceFile {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|idx| idx as u32 + 1))
            .collect();
        SourceFile {
            name: name.into(),
            path: path.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(idx) => idx,
            Err(idx) => idx - 1,
        };
        let line_start = self.line_starts[line_idx] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.text[line_start..end].chars().count() as u32 + 1;
        LineCol {
            line: line_idx as u32 + 1,
            column,
        }
    }

    /// Byte offset of a 1-based line and 0-based character column.
    pub fn offset_of(&self, line: usize, char_col: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = &self.text[start as usize..];
        let mut offset = start as usize;
        for (taken, ch) in rest.chars().enumerate() {
            if taken == char_col || ch == '\n' {
                return offset;
            }
            offset += ch.len_utf8();
        }
        offset
    }

    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or_else(|| Path::new(""))
    }
}

/// Every file that took part in one compilation, indexed by [`FileId`].
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(idx, file)| (FileId(idx as u32), file))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn line_col(&self, span: Span) -> LineCol {
        self.get(span.file).line_col(span.start)
    }
}

/// The one door to the file system the compiler is given (implemented by the CLI and by tests).
pub trait FileReader {
    fn read(&self, path: &Path) -> std::io::Result<String>;
    fn is_dir(&self, path: &Path) -> bool;
    fn exists(&self, path: &Path) -> bool;

    /// Where `path` (an existing path under the project directory) physically leads when
    /// a symlink on it takes it out of the project; `None` when it stays inside, does not
    /// exist, or the reader does not know (in-memory files have no symlinks).
    fn leaves_project(&self, _path: &Path) -> Option<String> {
        None
    }
}

/// Files held in memory: a [`FileReader`] for tests, benchmarks, fuzzing and tools that
/// compile text they already have. Directories are implied by the files under them.
#[derive(Clone, Debug, Default)]
pub struct MemoryFiles(pub std::collections::BTreeMap<PathBuf, String>);

impl MemoryFiles {
    pub fn new() -> MemoryFiles {
        MemoryFiles::default()
    }

    /// Adds (or replaces) a file.
    pub fn with(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> MemoryFiles {
        self.0.insert(path.into(), text.into());
        self
    }

    pub fn insert(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) {
        self.0.insert(path.into(), text.into());
    }
}

impl FileReader for MemoryFiles {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.0.get(path).cloned().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not among the files in memory",
            )
        })
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.0
            .keys()
            .any(|key| key.starts_with(path) && key != path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path) || self.is_dir(path)
    }
}
