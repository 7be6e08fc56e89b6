//! The Search tools on real trees in temporary directories: ripgrep's ignore and hidden
//! rules, `.git/` never listed, symlinks never followed out of the sandbox, credential and
//! binary files skipped, untrusted regexes refused, and every bound said in the result.

use serde_json::json;

use super::super::tests::Temp;
use super::super::ToolContext;
use crate::tools::testkit::{call, failed, ok};

/// A project: sources, an ignored build directory, hidden files, a `.git` directory, a
/// credential file, a binary file, and symlinks to a directory and a file outside.
fn project() -> (Temp, Temp, ToolContext) {
    let root = Temp::new("search");
    let outside = Temp::new("search-outside");
    outside.write("secret.rs", "fn needle_outside() {}\n");
    root.write(".gitignore", "target/\n*.log\n");
    root.write(
        "src/main.rs",
        "fn main() {\n    let needle = 1;\n    println!(\"{needle}\");\n}\n",
    );
    root.write("src/lib.rs", "// Needle in a comment\npub fn lib() {}\n");
    root.write("src/nested/deep.rs", "fn deep() { /* needle */ }\n");
    root.write("src/.gitignore", "generated.rs\n");
    root.write("src/generated.rs", "fn needle_generated() {}\n");
    root.write("docs/guide.md", "# Guide\nsearch for the needle here\n");
    root.write("target/debug/out.rs", "fn needle_built() {}\n");
    root.write("run.log", "needle in a log\n");
    root.write(".hidden/notes.rs", "fn needle_hidden() {}\n");
    root.write(".git/config", "needle = git internals\n");
    root.write(".env", "NEEDLE_TOKEN=hunter2\n");
    std::fs::write(root.path("src/blob.bin"), b"needle\0\x01\x02").unwrap();
    std::os::unix::fs::symlink(&outside.0, root.path("linked-dir")).unwrap();
    std::os::unix::fs::symlink(outside.path("secret.rs"), root.path("src/linked.rs")).unwrap();
    let ctx = ToolContext::new(&root.0, "s1", "Explorer", 1).unwrap();
    (root, outside, ctx)
}

#[tokio::test]
async fn search_files_finds_by_glob_like_rg_files() {
    let (root, _outside, ctx) = project();
    let all = call(&ctx, "search_files", json!({})).await;
    assert_eq!(
        ok(&all),
        "docs/guide.md\nsrc/blob.bin\nsrc/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs"
    );
    let rust = call(&ctx, "search_files", json!({"pattern": "*.rs"})).await;
    assert_eq!(ok(&rust), "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs");
    // A glob with `/` matches the path below `directory`; results stay relative to the work dir.
    let nested = call(
        &ctx,
        "Search-search_files",
        json!({"pattern": "nested/*.rs", "directory": "src"}),
    )
    .await;
    assert_eq!(ok(&nested), "src/nested/deep.rs");
    // `src/.gitignore` and the root's `.gitignore` both apply when searching a subdirectory.
    let scoped = call(
        &ctx,
        "search_files",
        json!({"directory": "./src/nested/.."}),
    )
    .await;
    assert_eq!(
        ok(&scoped),
        "src/blob.bin\nsrc/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs"
    );
    let capped = call(
        &ctx,
        "search_files",
        json!({"pattern": "*.rs", "maxResults": 2}),
    )
    .await;
    assert_eq!(
        ok(&capped),
        "src/lib.rs\nsrc/main.rs\n[truncated: showing the first 2 files; more exist; narrow `directory` or `pattern`]"
    );
    let none = call(&ctx, "search_files", json!({"pattern": "*.py"})).await;
    assert_eq!(ok(&none), "No files match `*.py` under .");
    // A file too large to search is still found by name (a sparse file: no disk used).
    let big = std::fs::File::create(root.path("docs/huge.md")).unwrap();
    big.set_len(super::MAX_FILE_BYTES + 1).unwrap();
    let md = call(&ctx, "search_files", json!({"pattern": "*.md"})).await;
    assert_eq!(ok(&md), "docs/guide.md\ndocs/huge.md");
    let content = call(
        &ctx,
        "search_content",
        json!({"query": "needle", "directory": "docs"}),
    )
    .await;
    assert_eq!(
        ok(&content),
        "[RESULTS] 1 match(es) in 1 file(s)\n\ndocs/guide.md\n  L2: search for the needle here"
    );
    // An explicitly named ignored directory is searched, as ripgrep searches a named path.
    let built = call(&ctx, "search_files", json!({"directory": "target"})).await;
    assert_eq!(ok(&built), "target/debug/out.rs");
}

#[tokio::test]
async fn search_content_reports_lines_relative_to_the_work_dir() {
    let (_root, _outside, ctx) = project();
    let found = call(&ctx, "search_content", json!({"query": "needle"})).await;
    insta::assert_snapshot!("search_content_default", ok(&found));
    let exact = call(
        &ctx,
        "search_content",
        json!({"query": "Needle", "caseSensitive": true}),
    )
    .await;
    assert_eq!(
        ok(&exact),
        "[RESULTS] 1 match(es) in 1 file(s) (1 binary file(s) skipped)\n\nsrc/lib.rs\n  L1: // Needle in a comment"
    );
    let context = call(
        &ctx,
        "search_content",
        json!({"query": "let needle", "directory": "src", "filePattern": "main.*", "context_lines": 1}),
    )
    .await;
    insta::assert_snapshot!("search_content_context", ok(&context));
    let limited = call(
        &ctx,
        "search_content",
        json!({"query": "needle", "maxResults": "2"}),
    )
    .await;
    let limited = ok(&limited);
    assert!(
        limited.starts_with("[RESULTS] 2 match(es) in 2 file(s) (limit reached"),
        "{limited}"
    );
    let none = call(&ctx, "search_content", json!({"query": "haystack"})).await;
    assert!(
        ok(&none).starts_with("No matches for `haystack` under ."),
        "{none:?}"
    );
}

#[tokio::test]
async fn nothing_outside_the_sandbox_or_in_git_credentials_or_ignored_files_is_searched() {
    let (_root, _outside, ctx) = project();
    let found = call(
        &ctx,
        "search_content",
        json!({"query": "needle_|NEEDLE_TOKEN|internals|log|search for"}),
    )
    .await;
    let text = ok(&found);
    assert!(
        text.starts_with("[RESULTS] 1 match(es) in 1 file(s)") && text.contains("docs/guide.md"),
        "{text}"
    );
    for absent in [
        "needle_outside",
        "hunter2",
        "internals",
        "needle_built",
        "needle_hidden",
        "run.log",
        "needle_generated",
    ] {
        assert!(!text.contains(absent), "`{absent}` leaked: {text}");
    }
    let files = call(&ctx, "search_files", json!({"pattern": "**"})).await;
    for absent in ["secret.rs", "linked", ".env", ".git/", "config"] {
        assert!(!ok(&files).contains(absent), "`{absent}` listed: {files:?}");
    }
    // Naming those places as the directory is refused.
    let escape = call(
        &ctx,
        "search_content",
        json!({"query": "x", "directory": "linked-dir"}),
    )
    .await;
    failed(&escape, "[DENIED: sandbox] path escapes the sandbox");
    let dotdot = call(&ctx, "search_files", json!({"directory": "src/../.."})).await;
    failed(&dotdot, "[DENIED: sandbox]");
    let git = call(
        &ctx,
        "search_content",
        json!({"query": "x", "directory": "src/../.GIT"}),
    )
    .await;
    failed(&git, "[DENIED: sandbox] `src/../.GIT` is inside `.git/`");
    let file = call(&ctx, "search_files", json!({"directory": "src/main.rs"})).await;
    failed(&file, "[ERROR] search_files: `src/main.rs` is a file");
    let missing = call(
        &ctx,
        "search_content",
        json!({"query": "x", "directory": "nope"}),
    )
    .await;
    failed(&missing, "[ERROR]");
}

#[tokio::test]
async fn untrusted_patterns_and_arguments_get_clear_errors() {
    let (_root, _outside, ctx) = project();
    let bad = call(&ctx, "search_content", json!({"query": "fn (main"})).await;
    failed(&bad, "[ERROR] search_content: invalid regex `fn (main`");
    let huge = call(
        &ctx,
        "search_content",
        json!({"query": "(\\w{50}){50}(\\w{50}){50}"}),
    )
    .await;
    failed(&huge, "[ERROR] search_content: invalid regex");
    let glob = call(&ctx, "search_files", json!({"pattern": "src/[a"})).await;
    failed(&glob, "[ERROR] search_files: invalid glob `src/[a`");
    let count = call(
        &ctx,
        "search_content",
        json!({"query": "x", "maxResults": -3}),
    )
    .await;
    failed(
        &count,
        "[ERROR] tool `search_content`: argument `maxResults` must be a whole number",
    );
    let flag = call(
        &ctx,
        "search_content",
        json!({"query": "x", "caseSensitive": "maybe"}),
    )
    .await;
    failed(
        &flag,
        "[ERROR] tool `search_content`: argument `caseSensitive` must be true or false",
    );
    let no_query = call(&ctx, "search_content", json!({"directory": "src"})).await;
    failed(
        &no_query,
        "[ERROR] tool `search_content` needs a string argument `query`",
    );
}

#[tokio::test]
async fn output_is_bounded_by_the_runs_output_cap() {
    let root = Temp::new("search-cap");
    for index in 0..300 {
        root.write(&format!("f{index:03}.txt"), &"match this line\n".repeat(5));
    }
    let mut ctx = ToolContext::new(&root.0, "s1", "Explorer", 1).unwrap();
    ctx.limits.output_cap = 2_000;
    let found = call(
        &ctx,
        "search_content",
        json!({"query": "match", "maxResults": 1000}),
    )
    .await;
    let text = ok(&found);
    assert!(text.len() <= 2_000, "{} bytes", text.len());
    assert!(text.contains("(output cap reached"), "{text}");
    let files = call(&ctx, "search_files", json!({"maxResults": 1000})).await;
    let text = ok(&files);
    assert!(text.len() <= 2_100, "{} bytes", text.len());
    assert!(text.ends_with("narrow `directory` or `pattern`]"), "{text}");
    // One file with more matching lines than fit: the lines that fit are shown and counted.
    let single = Temp::new("search-cap-single");
    single.write("big.txt", &"match this line\n".repeat(1000));
    let mut ctx = ToolContext::new(&single.0, "s1", "Explorer", 1).unwrap();
    ctx.limits.output_cap = 600;
    let found = call(
        &ctx,
        "search_content",
        json!({"query": "match", "maxResults": 1000}),
    )
    .await;
    let text = ok(&found);
    assert!(text.len() <= 600, "{} bytes", text.len());
    let shown = text.matches("  L").count();
    assert!(shown > 5, "{text}");
    assert!(
        text.starts_with(&format!(
            "[RESULTS] {shown} match(es) in 1 file(s) (output cap reached"
        )),
        "{text}"
    );
}

/// A background thread swaps `sub` between a real directory and a symlink to a directory
/// outside the root while `search_content` runs hundreds of times: a line of a file outside
/// never comes back, because every file is read through the race-free walk.
#[tokio::test]
async fn a_directory_swapped_for_a_symlink_mid_search_leaks_no_content() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;

    let root = Temp::new("search-swap");
    let outside = Temp::new("search-swap-outside");
    outside.write("outside-only.txt", "needle OUTSIDE\n");
    root.write("sub/inside.txt", "needle inside\n");
    std::os::unix::fs::symlink(&outside.0, root.path("alt")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU32::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let (sub, alt) = (root.path("sub"), root.path("alt"));
        std::thread::spawn(move || {
            let mut hold = 0u64;
            while !stop.load(Ordering::Relaxed) {
                hold = (hold * 7 + 13) % 61;
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &sub,
                    rustix::fs::CWD,
                    &alt,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE)");
                if hold > 20 {
                    std::thread::sleep(std::time::Duration::from_micros(hold));
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut ctx = ToolContext::new(&root.0, "s1", "Explorer", 1).unwrap();
    ctx.change_log = std::path::PathBuf::new();
    let mut seen_inside = 0;
    for _ in 0..400 {
        let found = call(&ctx, "search_content", json!({"query": "needle"})).await;
        let text = ok(&found);
        assert!(!text.contains("OUTSIDE"), "read outside: {text}");
        seen_inside += usize::from(text.contains("needle inside"));
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 10, "the swapper ran");
    assert!(
        seen_inside > 0,
        "some searches went through the real directory"
    );
}

#[tokio::test]
async fn symbol_tools_find_definitions_and_uses_apart() {
    let root = Temp::new("search-symbols");
    root.write(
        "src/parser.rs",
        "pub struct Parser {\n    depth: usize,\n}\n\nimpl Parser {\n    pub fn parse(&self, text: &str) -> Ast {\n        todo!()\n    }\n}\n",
    );
    root.write(
        "src/main.rs",
        "fn run(p: Parser) {\n    let parser = Parser::new();\n    let ast = parser.parse(\"x\");\n}\n",
    );
    root.write(
        "tools/parser.py",
        "class Parser:\n    def parse(self, text):\n        return text\n",
    );
    root.write("target/.keep", "");
    let ctx = ToolContext::new(&root.0, "s1", "Explorer", 1).unwrap();
    let defined = call(&ctx, "search_symbol", json!({"symbol": "Parser"})).await;
    assert_eq!(
        ok(&defined),
        "[RESULTS] 2 definition(s) found for `Parser`\n\nsrc/parser.rs:L1  pub struct Parser {\ntools/parser.py:L1  class Parser:"
    );
    let rust_only = call(
        &ctx,
        "Search-search_symbol",
        json!({"symbol": "parse", "extension": ".rs"}),
    )
    .await;
    assert_eq!(
        ok(&rust_only),
        "[RESULTS] 1 definition(s) found for `parse`\n\nsrc/parser.rs:L6  pub fn parse(&self, text: &str) -> Ast {"
    );
    // Uses, the definitions left out.
    let used = call(&ctx, "search_callers", json!({"symbol": "parse"})).await;
    assert_eq!(
        ok(&used),
        "[RESULTS] 1 call site(s) found for `parse`\n\nsrc/main.rs:L3  let ast = parser.parse(\"x\");"
    );
    let typed = call(
        &ctx,
        "search_callers",
        json!({"symbol": "Parser", "extension": "rs", "maxResults": 1}),
    )
    .await;
    assert_eq!(
        ok(&typed),
        "[RESULTS] 1 call site(s) found for `Parser` (limit reached; raise `maxResults` to see more)\n\nsrc/main.rs:L1  fn run(p: Parser) {"
    );
    let none = call(&ctx, "search_symbol", json!({"symbol": "Lexer"})).await;
    assert!(
        ok(&none).starts_with("No definition found for `Lexer` under ."),
        "{none:?}"
    );
    for symbol in ["", "a b", "a.*", "x\ny", &"n".repeat(201)] {
        let refused = call(&ctx, "search_symbol", json!({"symbol": symbol})).await;
        failed(
            &refused,
            "[ERROR] search_symbol: `symbol` must be one identifier",
        );
    }
    let glob = call(
        &ctx,
        "search_callers",
        json!({"symbol": "x", "extension": "*/.."}),
    )
    .await;
    failed(
        &glob,
        "[ERROR] search_callers: `extension` must be a file extension",
    );
}
