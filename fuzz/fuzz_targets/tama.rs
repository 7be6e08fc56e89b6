//! tama front matter: fuzz bytes are the `AGENT.md` of the entry agent `main` (and, after
//! a `\0\0`, of its sibling `worker`) inside a generated project; the project and the
//! `AGENT.md` are both compiled. A compiled program must round-trip through the IR text.
#![no_main]

use std::path::Path;

use fuseraft_fuzz::{check_program, split2, Memory};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (main, worker) = split2(data);
    let mut reader = Memory::default()
        .with(
            "/p/tama.toml",
            "[project]\nname = \"fuzz\"\nentrypoint = \"main\"\n",
        )
        .with(
            "/p/agents/main/AGENT.md",
            String::from_utf8_lossy(main).into_owned(),
        );
    reader = match worker {
        Some(bytes) => reader.with(
            "/p/agents/worker/AGENT.md",
            String::from_utf8_lossy(bytes).into_owned(),
        ),
        None => reader.with(
            "/p/agents/worker/AGENT.md",
            "---\nname: worker\npattern: oneshot\n---\nWork.\n",
        ),
    };
    for input in ["/p", "/p/agents/main/AGENT.md"] {
        let compiled = fuseraft_compiler::compile(Path::new(input), &reader);
        if let Some(program) = &compiled.program {
            check_program(program);
        }
        let _ = fuseraft_compiler::check::check(&compiled);
    }
});
