//! The replay file: YAML or JSON bytes (first byte picks) → the CLI's YAML→JSON conversion →
//! `Script::from_json`; a valid script then serves a few model calls.
#![no_main]

use fuseraft_compiler::syntax::{parse_json, parse_yaml, Budget};
use fuseraft_compiler::FileId;
use fuseraft_vm::effect::ModelCall;
use fuseraft_vm::replay::{Replay, Script};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let parsed = if selector & 1 == 0 {
        parse_yaml(FileId(0), &text, &Budget::default())
    } else {
        parse_json(FileId(0), &text, &Budget::default())
    };
    let Ok(node) = parsed else {
        return;
    };
    let json = fuseraft::replay_file::to_json(&node);
    let Ok(script) = Script::from_json(&json) else {
        return;
    };
    let agents: Vec<String> = script.queues.iter().map(|(name, _)| name.clone()).collect();
    let replay = Replay::new(script);
    for turn in 0..8u32 {
        let agent = agents
            .get(turn as usize % agents.len().max(1))
            .cloned()
            .unwrap_or_else(|| "Nobody".to_string());
        let call = ModelCall {
            agent,
            model: None,
            messages: Vec::new(),
            tools: Vec::new(),
            turn,
        };
        let _ = replay.next(&call);
    }
    let state = replay.state();
    replay.restore(&state);
});
