//! The capability tags of `Capabilities: { Plugin: [tags] }`: what narrows a plugin to some
//! of its tools.

use std::fmt;

/// A capability tag of `Capabilities: { Plugin: [tags] }`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    Read,
    Write,
    Delete,
    Run,
    Handoff,
    Finish,
    // Http (issue 15): one tag per method, as upstream (`delete` is shared).
    Get,
    Post,
    Put,
    Patch,
}

impl Capability {
    pub const ALL: &'static [Capability] = &[
        Capability::Read,
        Capability::Write,
        Capability::Delete,
        Capability::Run,
        Capability::Handoff,
        Capability::Finish,
        // Http (issue 15).
        Capability::Get,
        Capability::Post,
        Capability::Put,
        Capability::Patch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Read => "read",
            Capability::Write => "write",
            Capability::Delete => "delete",
            Capability::Run => "run",
            Capability::Handoff => "handoff",
            Capability::Finish => "finish",
            // Http (issue 15).
            Capability::Get => "get",
            Capability::Post => "post",
            Capability::Put => "put",
            Capability::Patch => "patch",
        }
    }

    /// The tag named `text` (ASCII case-insensitive, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Capability> {
        let text = text.trim();
        Capability::ALL
            .iter()
            .copied()
            .find(|tag| tag.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
