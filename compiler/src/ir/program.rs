//! `Program::new`: a program with nothing in it yet, which the lowering, the `.fir` parser
//! and the samples fill.

use super::{
    FailurePolicy, Origin, Permissions, Program, Security, StateId, Termination, Validation,
};

impl Program {
    /// A program with nothing in it yet (no files, agents, states or settings; entry
    /// `StateId(0)`; default policies and sections), for the lowering and the parser to fill.
    pub fn new(name: String, origin: Origin) -> Program {
        Program {
            name,
            origin,
            files: Vec::new(),
            entry: StateId(0),
            agents: Vec::new(),
            states: Vec::new(),
            contracts: Vec::new(),
            counters: Vec::new(),
            termination: Termination::default(),
            failure: FailurePolicy::default(),
            settings: Vec::new(),
            security: Security::default(),
            validation: Validation::default(),
            chatroom_path: None,
            api_profiles: Vec::new(),
            routing_instructions: true,
            verifier: None,
            compaction: None,
            permissions: Permissions::default(),
            mcp_servers: Vec::new(),
            compaction_model: None,
            skills: Vec::new(),
        }
    }
}
