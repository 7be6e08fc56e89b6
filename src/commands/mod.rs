//! One module per subcommand. Each returns the process exit code.

pub mod check;
pub mod compile;
pub mod exec;
pub mod sessions;
pub mod test;
pub mod ui;

/// Exit codes shared by every command (DESIGN.md §5).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Findings: the input has errors, or a run stopped stuck, over budget or on error.
    pub const FINDINGS: u8 = 1;
    /// Usage error or unreadable input.
    pub const USAGE: u8 = 2;
}
