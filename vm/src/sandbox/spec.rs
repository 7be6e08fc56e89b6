//! What the run's settings say about the sandbox: which grants the permission policy gives
//! commands (git writes, network) and what to do where the OS sandbox is unavailable.
//!
//! Read in one place ([`Spec::new`]) from the compiled permission policy
//! (`ir::Permissions`) and the `Security.Sandbox` setting: `refuse` or `warn` (any other
//! value counts as `refuse`: a typo must not open the sandbox); unset, it is `refuse` under
//! the `locked-down` preset and `warn` otherwise.

use std::path::PathBuf;

use fuseraft_compiler::ir::{Action, Category, Permissions, Preset, SandboxMode};

use super::{Access, Confinement, Policy};

/// What the permission policy says about one category.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    Allow,
    /// `require-approval`: allowed for a command the operator approved.
    OnApproval,
    Block,
}

impl Grant {
    fn of(permissions: &Permissions, category: Category) -> Grant {
        match permissions.action(category) {
            Action::Allow => Grant::Allow,
            Action::RequireApproval => Grant::OnApproval,
            Action::Block => Grant::Block,
        }
    }
}

/// What happens where the OS sandbox is unavailable.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OnUnavailable {
    /// Commands are not run.
    Refuse,
    /// Commands run unconfined, after one warning.
    Warn,
}

/// The sandbox settings of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// fuseraft's binary, re-executed as the launcher (see [`super::install_launcher`]).
    pub launcher: Option<PathBuf>,
    pub git_write: Grant,
    pub network: Grant,
    pub commands: Grant,
    /// `file_write_delete`: under `block`, no started process writes the root either.
    pub files: Grant,
    pub on_unavailable: OnUnavailable,
}

impl Default for Spec {
    /// Everything allowed, `warn` where unavailable, the registered launcher.
    fn default() -> Spec {
        Spec::new(None, &Permissions::default())
    }
}

impl Spec {
    /// The spec of `Security.Sandbox` (`mode`) and the permission policy.
    pub fn new(mode: Option<SandboxMode>, permissions: &Permissions) -> Spec {
        let on_unavailable = match mode {
            Some(SandboxMode::Warn) => OnUnavailable::Warn,
            Some(SandboxMode::Refuse) => OnUnavailable::Refuse,
            None if permissions.preset == Preset::LockedDown => OnUnavailable::Refuse,
            None => OnUnavailable::Warn,
        };
        Spec {
            launcher: super::launcher(),
            git_write: Grant::of(permissions, Category::GitWrite),
            network: Grant::of(permissions, Category::NetworkApi),
            commands: Grant::of(permissions, Category::CommandExecution),
            files: Grant::of(permissions, Category::FileWriteDelete),
            on_unavailable,
        }
    }

    /// The policy for a `shell_run` command that the permission check let through. A
    /// command classified as a git write under `require-approval` was approved, and so may
    /// write `.git`; any other command under `require-approval` for its category was
    /// approved too, and so gets the network when `network_api` is `require-approval`. The
    /// root is writable unless `file_write_delete` is `block`.
    pub fn for_tool_command(
        &self,
        confinement: &Confinement,
        classified_git_write: bool,
    ) -> Policy {
        let approved = if classified_git_write {
            self.git_write == Grant::OnApproval
        } else {
            self.commands == Grant::OnApproval
        };
        confinement.policy(Access {
            write: self.files != Grant::Block,
            git_write: self.git_write == Grant::Allow
                || (classified_git_write && self.git_write == Grant::OnApproval),
            network: self.network == Grant::Allow
                || (approved && self.network == Grant::OnApproval),
        })
    }

    /// The policy for a stdio MCP server, started once for the run: the network only when
    /// `network_api` is `allow` (nobody approves a server's own connections), never git
    /// writes, and the root writable only when `file_write_delete` is not `block` and
    /// `agents_write` (some agent that lists the server may write files).
    pub fn for_mcp_server(&self, confinement: &Confinement, agents_write: bool) -> Policy {
        confinement.policy(Access {
            write: agents_write && self.files != Grant::Block,
            git_write: false,
            network: self.network == Grant::Allow,
        })
    }

    /// The policy for a validator or contract command (from the config; nobody approves
    /// it): git writes and network only when the policy allows them outright.
    pub fn for_check_command(&self, confinement: &Confinement) -> Policy {
        confinement.policy(Access {
            write: true,
            git_write: self.git_write == Grant::Allow,
            network: self.network == Grant::Allow,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked_down() -> Permissions {
        Permissions {
            preset: Preset::LockedDown,
            overrides: Vec::new(),
        }
    }

    #[test]
    fn the_mode_follows_the_preset_unless_set() {
        let spec = Spec::new(None, &Permissions::default());
        assert_eq!(spec.on_unavailable, OnUnavailable::Warn);
        assert_eq!(
            Spec::new(None, &locked_down()).on_unavailable,
            OnUnavailable::Refuse
        );
        assert_eq!(
            Spec::new(Some(SandboxMode::Warn), &locked_down()).on_unavailable,
            OnUnavailable::Warn
        );
        assert_eq!(
            Spec::new(Some(SandboxMode::Refuse), &Permissions::default()).on_unavailable,
            OnUnavailable::Refuse
        );
    }

    #[test]
    fn approval_grants_only_the_approved_command() {
        let permissions = Permissions {
            preset: Preset::Unrestricted,
            overrides: vec![
                (Category::GitWrite, Action::RequireApproval),
                (Category::NetworkApi, Action::RequireApproval),
                (Category::CommandExecution, Action::Allow),
            ],
        };
        let spec = Spec::new(None, &permissions);
        let confinement = Confinement::new(&std::env::temp_dir(), &[], &[]);
        let commit = spec.for_tool_command(&confinement, true);
        assert!(commit.network);
        let other = spec.for_tool_command(&confinement, false);
        assert!(!other.network, "an unapproved command gets no network");
        let check = spec.for_check_command(&confinement);
        assert!(!check.network);
    }
}
