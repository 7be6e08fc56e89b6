//! The VM on any program the IR text parser accepts (`fuseraft exec file.fir` runs such a
//! program): fuzz bytes are IR text, then after a `\0\0` the bytes that answer the machine's
//! requests. Asserts no panic and that the history only grows.
#![no_main]

use fuseraft_compiler::ir;
use fuseraft_fuzz::{drive, split2, Caps};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

const CAPS: Caps = Caps {
    text_bytes: 16 * 1024,
    run_text_bytes: usize::MAX,
    tool_calls: 16,
    steps: 100,
};

fuzz_target!(|data: &[u8]| {
    let (text, answers) = split2(data);
    let Ok(program) = ir::parse(&String::from_utf8_lossy(text)) else {
        return;
    };
    let mut u = Unstructured::new(answers.unwrap_or(&[]));
    drive(&program, &mut u, &CAPS);
});
