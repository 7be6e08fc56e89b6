//! The config loader: YAML or JSON bytes (first byte picks the format) through `compile`
//! with an in-memory reader; bytes after a `\0\0` are served for every include. When the
//! config compiles, its IR must round-trip, and `check` must not panic either way.
#![no_main]

use std::path::{Path, PathBuf};

use fuseraft_fuzz::{check_program, split2, WithIncludes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (main, include) = split2(rest);
    let path = if selector & 1 == 0 {
        "/fuzz/config.yaml"
    } else {
        "/fuzz/config.json"
    };
    let reader = WithIncludes {
        main: (
            PathBuf::from(path),
            String::from_utf8_lossy(main).into_owned(),
        ),
        include: include.map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
    };
    let compiled = fuseraft_compiler::compile(Path::new(path), &reader);
    if let Some(program) = &compiled.program {
        check_program(program);
    }
    let _ = fuseraft_compiler::check::check(&compiled);
});
