//! The condition grammar: any text either parses, or fails with an error inside the text.
//! A parsed condition prints in its canonical form, which parses back to an equal condition;
//! evaluating it against a reply (the same text) must not panic.
#![no_main]

use fuseraft_compiler::condition;
use fuseraft_compiler::ir::{extract_json, CondInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match condition::parse(&text) {
        Ok(cond) => {
            let printed = cond.to_string();
            let back = condition::parse(&printed)
                .unwrap_or_else(|error| panic!("{printed:?} does not parse: {error}"));
            assert_eq!(back, cond, "canonical form {printed:?}");
            assert_eq!(back.to_string(), printed);
            let json = extract_json(&text);
            let _ = cond.eval(&CondInput {
                last_agent: "Reviewer",
                last_message: &text,
                json: json.as_ref(),
            });
        }
        Err(error) => {
            assert!(error.offset + error.len <= text.len(), "{error:?}");
            assert!(text.is_char_boundary(error.offset), "{error:?}");
            assert!(!error.message.contains("internal"), "{error:?}");
        }
    }
});
