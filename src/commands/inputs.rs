//! What `fuseraft check INPUT...` checks: files as named, directories searched for fuseraft
//! configs and tama projects (honouring `.gitignore`, `.ignore` and hidden files), globs
//! expanded by fuseraft, and `-` for standard input.

use std::path::{Path, PathBuf};

use fuseraft_compiler::syntax::load::project_of;
use fuseraft_compiler::FileReader;

use crate::disk::Project;

/// One workflow to check.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A file or tama project on disk.
    Path(PathBuf),
    /// Standard input, standing for the file `name`.
    Stdin { name: PathBuf, text: String },
}

impl Input {
    /// The name diagnostics use.
    pub fn name(&self) -> &Path {
        match self {
            Input::Path(path) => path,
            Input::Stdin { name, .. } => name,
        }
    }
}

/// The file name standard input stands for without `--stdin-filename`.
pub const STDIN_NAME: &str = "<stdin>";

/// Resolves the command line's inputs, in order; a directory's and a glob's in path order.
/// `stdin` reads standard input (once, for `-`). An error is a usage error: a glob or
/// directory that holds no workflow, a second `-`, unreadable standard input.
/// The config names a directory given as a workflow is searched for, in order (the last is
/// where upstream's `run` looks by default).
pub const CONFIG_NAMES: &[&str] = &[
    "fuseraft.yaml",
    "fuseraft.yml",
    "fuseraft.json",
    ".fuseraft/config/orchestration.yaml",
];

/// The workflow a path names for `exec` and `compile`: a directory that is not a tama
/// project (no `tama.toml`) stands for the first of [`CONFIG_NAMES`] in it; anything else
/// is itself.
pub fn workflow_in(path: &Path) -> PathBuf {
    if !path.is_dir() || path.join("tama.toml").is_file() {
        return path.to_path_buf();
    }
    CONFIG_NAMES
        .iter()
        .map(|name| path.join(name))
        .find(|config| config.is_file())
        .unwrap_or_else(|| path.to_path_buf())
}

pub fn resolve(
    given: &[PathBuf],
    stdin_name: Option<&Path>,
    stdin: &mut dyn FnMut() -> std::io::Result<String>,
) -> Result<Vec<Input>, String> {
    let default = [PathBuf::from(".")];
    let given = if given.is_empty() {
        &default[..]
    } else {
        given
    };
    let mut inputs = Vec::new();
    let mut read_stdin = false;
    for arg in given {
        if arg.as_os_str() == "-" {
            if read_stdin {
                return Err("`-` (standard input) can be given once".to_string());
            }
            read_stdin = true;
            let text = stdin().map_err(|error| format!("cannot read standard input: {error}"))?;
            let name = stdin_name.map_or_else(|| PathBuf::from(STDIN_NAME), Path::to_path_buf);
            inputs.push(Input::Stdin { name, text });
        } else if arg.is_dir() && !arg.join("tama.toml").is_file() {
            let found = walk(arg, None);
            if found.is_empty() {
                return Err(format!(
                    "no fuseraft config (a file with an `Orchestration:` root) or tama project under `{}`",
                    arg.display()
                ));
            }
            inputs.extend(found.into_iter().map(Input::Path));
        } else if !arg.exists() && is_glob(arg) {
            inputs.extend(glob(arg)?.into_iter().map(Input::Path));
        } else {
            // A file, a tama project, or a path that does not exist: the compiler reports
            // what is wrong with it.
            inputs.push(Input::Path(arg.clone()));
        }
    }
    if stdin_name.is_some() && !read_stdin {
        return Err("`--stdin-filename` names standard input, which is read for `-` only".into());
    }
    Ok(inputs)
}

fn is_glob(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '[', '{'])
}

/// The workflows matched by a glob (`teams/**/*.yaml`): configs, tama `AGENT.md` files,
/// `.fir` files and tama project directories; a `*` does not cross a `/`.
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let text = pattern.to_string_lossy().replace('\\', "/");
    let text = text.strip_prefix("./").unwrap_or(&text).to_string();
    let matcher = globset::GlobBuilder::new(&text)
        .literal_separator(true)
        .build()
        .map_err(|error| format!("`{}` is not a valid glob: {error}", pattern.display()))?
        .compile_matcher();
    // Walk from the longest leading part without a wildcard.
    let base: PathBuf = Path::new(&text)
        .components()
        .take_while(|part| !is_glob(Path::new(part.as_os_str())))
        .collect();
    let base = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    };
    let found = walk(&base, Some(&|path: &Path| matcher.is_match(path)));
    if found.is_empty() {
        return Err(format!(
            "`{}` matches no fuseraft config, tama project, AGENT.md or .fir file",
            pattern.display()
        ));
    }
    Ok(found)
}

/// Walks `root` in path order, honouring ignore files and skipping hidden entries. Without
/// a pattern it keeps configs and tama projects; with one, what the pattern matches among
/// configs, tama projects, `AGENT.md` and `.fir` files. A tama project's own files are not
/// searched: the project is checked as a whole.
fn walk(root: &Path, pattern: Option<&dyn Fn(&Path) -> bool>) -> Vec<PathBuf> {
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut found: Vec<PathBuf> = Vec::new();
    let mut projects: Vec<PathBuf> = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                eprintln!("warning: {error}");
                continue;
            }
        };
        let path = entry.path().strip_prefix("./").unwrap_or(entry.path());
        if path.as_os_str().is_empty() || projects.iter().any(|p| path.starts_with(p)) {
            continue;
        }
        let selected = pattern.is_none_or(|matches| matches(path));
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        if is_dir {
            if path.join("tama.toml").is_file() && path != root {
                projects.push(path.to_path_buf());
                if selected {
                    found.push(path.to_path_buf());
                }
            }
            continue;
        }
        if !selected {
            continue;
        }
        let explicit_kind = pattern.is_some()
            && (path.file_name().is_some_and(|name| name == "AGENT.md")
                || path.extension().is_some_and(|ext| ext == "fir"));
        if explicit_kind || is_config(path) {
            found.push(path.to_path_buf());
        }
    }
    found
}

/// Whether `path` is a fuseraft config: a `.yaml`, `.yml` or `.json` file whose root has an
/// `Orchestration` key. A file that cannot be read is skipped with a warning.
fn is_config(path: &Path) -> bool {
    let extension = path
        .extension()
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if !matches!(extension.as_str(), "yaml" | "yml" | "json") {
        return false;
    }
    match crate::disk::read(path) {
        Ok(text) => has_orchestration_root(&text),
        Err(error) => {
            eprintln!("warning: skipped `{}`: {error}", path.display());
            false
        }
    }
}

/// Whether a YAML or JSON text has an `Orchestration` key at its root: a line that starts
/// with the key (unquoted or quoted, any case) and a colon, or, for a text that opens with
/// `{`, the quoted key anywhere. Broken configs still count, so that check reports them.
pub fn has_orchestration_root(text: &str) -> bool {
    let text = text.trim_start_matches('\u{feff}');
    let is_key = |rest: &str| {
        let key = rest
            .strip_prefix('"')
            .or_else(|| rest.strip_prefix('\''))
            .unwrap_or(rest);
        key.get(..13)
            .is_some_and(|word| word.eq_ignore_ascii_case("orchestration"))
            && key[13..]
                .trim_start_matches(['"', '\''])
                .trim_start()
                .starts_with(':')
    };
    if text.trim_start().starts_with('{') {
        return json_root_keys(text).any(|key| key.eq_ignore_ascii_case("orchestration"));
    }
    text.lines().any(is_key)
}

/// The keys of a JSON text's root object (a string at depth 1 followed by a colon).
fn json_root_keys(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut keys = Vec::new();
    let (mut depth, mut at) = (0usize, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = at + 1;
                at = start;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                let end = at.min(bytes.len());
                let followed_by_colon = text
                    .get(end + 1..)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'));
                if depth == 1 && followed_by_colon {
                    keys.push(&text[start..end]);
                }
            }
            _ => {}
        }
        at += 1;
    }
    keys.into_iter()
}

/// The reader of a workflow read from standard input: the text under its name, every other
/// file (an include) as [`Project`] reads it, confined to the directory the name is in.
pub struct StdinReader<'a> {
    name: &'a Path,
    text: &'a str,
    disk: Project,
}

impl<'a> StdinReader<'a> {
    pub fn new(name: &'a Path, text: &'a str) -> StdinReader<'a> {
        let disk = Project::new();
        // The first file a `Project` reads fixes its directory. A path with a NUL byte has
        // the name's project directory and fails to open without touching the file system
        // (a file at the name itself, or a FIFO, is never read).
        let project = project_of(name);
        let tama_agent = name
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            == Some("agents".as_ref())
            && name.file_name() == Some("AGENT.md".as_ref());
        let probe = if tama_agent {
            project.join("agents").join("\0").join("AGENT.md")
        } else {
            project.join("\0")
        };
        let _ = disk.read(&probe);
        StdinReader { name, text, disk }
    }
}

impl FileReader for StdinReader<'_> {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        if path == self.name {
            Ok(self.text.to_string())
        } else {
            self.disk.read(path)
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        path != self.name && self.disk.is_dir(path)
    }

    fn exists(&self, path: &Path) -> bool {
        path == self.name || self.disk.exists(path)
    }
}

#[cfg(test)]
mod tests {
    use super::has_orchestration_root;

    #[test]
    fn an_orchestration_root_is_recognised_in_any_spelling() {
        for text in [
            "Orchestration:\n  Name: A\n",
            "# a comment\norchestration :\n",
            "\"Orchestration\": {}\n",
            "{\n  \"Orchestration\" : {\"Name\": \"A\"}\n}",
            "\u{feff}Orchestration:",
        ] {
            assert!(has_orchestration_root(text), "{text:?}");
        }
        for text in [
            "replies:\n  A: []\n",
            "task: x\nOrchestrationX: 1\n",
            "  Orchestration:\n",
            "{\"replies\": {\"Orchestration\": []}}",
            "Orch",
        ] {
            assert!(!has_orchestration_root(text), "{text:?}");
        }
    }
}
