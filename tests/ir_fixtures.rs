//! The `.fir` fixtures (`fixtures/ir/*.fir`): each parses and prints back byte for byte, and
//! its JSON view and diagrams are drawn without a panic. A new case is a new file.

use std::path::PathBuf;

use fuseraft_compiler::ir::{self, PrintOptions};

#[test]
fn every_ir_fixture_prints_back_the_same() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/ir");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "fir"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "no fixtures in {}", dir.display());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let program =
            ir::parse(&text).unwrap_or_else(|error| panic!("{}: {error:?}", path.display()));
        assert_eq!(
            ir::print(&program, &PrintOptions::default()),
            text,
            "{} prints back differently",
            path.display()
        );
        let _ = ir::to_json(&program);
        let _ = ir::to_dot(&program);
        let _ = ir::to_mermaid(&program);
    }
}
