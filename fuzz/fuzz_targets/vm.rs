//! The VM driven by arbitrary model replies and effect results: one of the fixture programs
//! (first byte), then every request answered from the fuzz bytes (text with signals, tool
//! calls with arbitrary names and arguments, validator verdicts, approvals, context blocks,
//! now and then a wrong kind or count of answer, a checkpoint and restore). Asserts no panic
//! and that the history only grows.
#![no_main]

use fuseraft_fuzz::{drive, programs, FUZZ_CAPS};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let programs = programs();
    assert!(!programs.is_empty(), "no fixture program compiled");
    let mut u = Unstructured::new(data);
    let Ok(index) = u.choose_index(programs.len()) else {
        return;
    };
    drive(&programs[index], &mut u, &FUZZ_CAPS);
});
