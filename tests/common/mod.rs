//! Shared by the integration tests: a loopback model server, the corpus reader that
//! supplies the tama variant's sibling agents, a sorted file walk, and run cases' settings.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use fuseraft::disk::Disk;
use fuseraft_compiler::FileReader;

/// Answers one HTTP request per reply body, in order, with `200` and the body as JSON
/// (`"STATUS CODE"` bodies starting with `!` answer with that status instead, e.g.
/// `"!400 {...}"`); returns the requests it saw: each one's head, a blank line and its body.
pub fn serve(listener: TcpListener, replies: Vec<String>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut headers_seen = Vec::new();
        for body in replies {
            let Ok((stream, _)) = listener.accept() else {
                break;
            };
            let (head, request) = read_request(&stream);
            headers_seen.push(format!("{head}\r\n{}", String::from_utf8_lossy(&request)));
            let (status, body) = match body.strip_prefix('!') {
                Some(rest) => rest
                    .split_once(' ')
                    .map_or(("500", rest.to_string()), |(code, body)| {
                        (code, body.to_string())
                    }),
                None => ("200", body),
            };
            answer_json(stream, status, &body);
        }
        headers_seen
    })
}

/// One HTTP/1.1 request read from `stream`: its head (request line and headers) and its
/// body, by `content-length`.
pub fn read_request(stream: &std::net::TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (head, body)
}

/// Answers with `status` and the JSON `body`, closing the connection.
pub fn answer_json(mut stream: std::net::TcpStream, status: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status} STATUS\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The tama variant copies only its own AGENT.md; its sibling agents are those of the
/// same example at HEAD, which this reader supplies when the variant folder lacks them.
pub struct VariantOverlay;

impl VariantOverlay {
    pub fn map(path: &Path) -> PathBuf {
        let text = path.to_string_lossy().replace('\\', "/");
        if let Some((_, rest)) = text.split_once("/tama/variants/") {
            if !path.exists() {
                if let Some((_, tail)) = rest.split_once('/') {
                    return PathBuf::from(text.split("/tama/variants/").next().unwrap_or(""))
                        .join("tama")
                        .join(tail);
                }
            }
        }
        path.to_path_buf()
    }
}

impl FileReader for VariantOverlay {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        Disk.read(&VariantOverlay::map(path))
    }
    fn is_dir(&self, path: &Path) -> bool {
        VariantOverlay::map(path).is_dir()
    }
    fn exists(&self, path: &Path) -> bool {
        VariantOverlay::map(path).exists()
    }
}

pub fn corpus_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if root.is_dir() {
        Some(root)
    } else {
        eprintln!(
            "skipped: ../shared/corpus is absent (it exists on developer machines and in CI)"
        );
        None
    }
}

pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Inputs of the corpus: orchestration configs and fsm agents.
pub fn corpus_inputs(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files
        .into_iter()
        .filter(|path| {
            let Ok(text) = std::fs::read_to_string(path) else {
                return false;
            };
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let is_config = (name.ends_with(".yaml") || name.ends_with(".json"))
                && (text.starts_with("Orchestration:")
                    || text.contains("\nOrchestration:")
                    || text.trim_start().starts_with("{\n  \"Orchestration\""));
            let is_fsm = name == "AGENT.md" && text.contains("\npattern: fsm");
            is_config || is_fsm
        })
        .collect()
}

/// A run case's `case.yaml` (under `fixtures/run/<case>/`) as JSON.
pub fn case_settings(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("case.yaml")).expect("case.yaml is readable");
    let node = fuseraft_compiler::syntax::parse_yaml(
        fuseraft_compiler::FileId(0),
        &text,
        &fuseraft_compiler::syntax::Budget::default(),
    )
    .expect("case.yaml parses");
    fuseraft::replay_file::to_json(&node)
}
