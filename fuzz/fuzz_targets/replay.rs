//! The replay file: YAML or JSON bytes (first byte picks) through the CLI's loader
//! (`replay_file::parse`); a valid script then serves a few model calls.
#![no_main]

use fuseraft_vm::effect::ModelCall;
use fuseraft_vm::replay::Replay;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    // The CLI's own loader: the JSON fast path, the span-keeping parsers, the script checks.
    let path = if selector & 1 == 0 {
        "replay.yaml"
    } else {
        "replay.json"
    };
    let Ok(script) = fuseraft::replay_file::parse(std::path::Path::new(path), text.into_owned())
    else {
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
