//! A machine as a checkpoint: its state record (with or without the messages), written
//! straight to bytes after every turn, and a machine restored from one. These live here, not
//! in `machine`, so that the machine knows nothing of the checkpoint's layout.

use fuseraft_compiler::ir::Program;

use super::records::MessageRecord;
use super::{run_from_json, state_json, state_record, write_state, ProviderState};
use crate::machine::{Machine, Options};

impl<'p> Machine<'p> {
    /// The run's state as a checkpoint (upstream's session layout plus `Machine`) without
    /// its `Messages`, which a caller stores incrementally (`MessageCount` says how many
    /// belong to it); `None` while a request other than a fork is out.
    pub fn checkpoint_state(&self) -> Option<serde_json::Value> {
        if !self.checkpointable() {
            return None;
        }
        let record = state_record(self.program(), self.run(), self.stand_in(), None);
        Some(state_json(&record))
    }

    /// Writes [`Machine::checkpoint_state`] with `Provider` and then the `extra` keys (which
    /// must be new) added, as that JSON would serialize, without building it: what a driver
    /// stores after every turn. Call it between turns ([`Machine::at_boundary`]).
    pub fn write_checkpoint_state<E: serde::Serialize + ?Sized>(
        &self,
        provider: &ProviderState<'_>,
        extra: &E,
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        write_state(
            self.program(),
            self.run(),
            self.stand_in(),
            provider,
            extra,
            out,
        )
    }

    /// The whole run as one checkpoint: the state and every message.
    pub fn checkpoint(&self) -> Option<serde_json::Value> {
        if !self.checkpointable() {
            return None;
        }
        let mut record = state_record(self.program(), self.run(), self.stand_in(), None);
        record.messages = Some(self.run().history.iter().map(MessageRecord::of).collect());
        Some(state_json(&record))
    }

    /// A machine that continues a checkpointed run where it stopped.
    pub fn restore(
        program: &'p Program,
        options: Options,
        checkpoint: &serde_json::Value,
    ) -> Result<Machine<'p>, String> {
        let (run, stand_in) = run_from_json(program, checkpoint)?;
        Machine::resumed(program, options, run, stand_in)
    }
}
