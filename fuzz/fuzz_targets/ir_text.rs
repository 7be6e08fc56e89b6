//! The textual IR parser: any text either parses or fails with a position inside it. A parsed
//! program prints, and that text parses back to an equal program which prints the same.
#![no_main]

use fuseraft_compiler::ir;
use fuseraft_fuzz::check_program;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match ir::parse(&text) {
        Ok(program) => {
            let printed = ir::print(&program, &ir::PrintOptions::default());
            let back = ir::parse(&printed)
                .unwrap_or_else(|error| panic!("printed IR does not parse: {error}\n{printed}"));
            assert_eq!(
                ir::print(&back, &ir::PrintOptions::default()),
                printed,
                "print/parse/print is not stable"
            );
            check_program(&program);
        }
        Err(error) => {
            assert!(error.offset <= text.len(), "{error:?}");
            assert!(error.line >= 1 && error.column >= 1, "{error:?}");
        }
    }
});
