//! What the run's settings say about the sandbox: which grants the permission policy gives
//! commands (git writes, network) and what to do where the OS sandbox is unavailable.
//!
//! Read from the IR settings the simple way, in one place ([`Spec::from_settings`]):
//! `Security.Sandbox` is `refuse` or `warn` (any other value counts as `refuse`: a typo
//! must not open the sandbox); unset, it is `refuse` under the `locked-down` preset and
//! `warn` otherwise.

use std::path::{Path, PathBuf};

use super::Policy;

/// What the permission policy says about one category.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    Allow,
    /// `require-approval`: allowed for a command the operator approved.
    OnApproval,
    Block,
}

impl Grant {
    fn of(settings: &[(String, String)], category: &str) -> Grant {
        match fuseraft_compiler::ir::permission_policy(settings, category) {
            "allow" => Grant::Allow,
            "require-approval" => Grant::OnApproval,
            _ => Grant::Block,
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
    pub on_unavailable: OnUnavailable,
}

impl Default for Spec {
    /// Everything allowed, `warn` where unavailable, the registered launcher.
    fn default() -> Spec {
        Spec::from_settings(&[])
    }
}

impl Spec {
    pub fn from_settings(settings: &[(String, String)]) -> Spec {
        let setting = |key: &str| {
            settings
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key))
                .map(|(_, value)| value.trim().to_ascii_lowercase())
        };
        let on_unavailable = match setting("Security.Sandbox").as_deref() {
            Some("warn") => OnUnavailable::Warn,
            Some(_) => OnUnavailable::Refuse,
            None if setting("Security.Permissions.Preset").as_deref() == Some("locked-down") => {
                OnUnavailable::Refuse
            }
            None => OnUnavailable::Warn,
        };
        Spec {
            launcher: super::launcher(),
            git_write: Grant::of(settings, "git_write"),
            network: Grant::of(settings, "network_api"),
            commands: Grant::of(settings, "command_execution"),
            on_unavailable,
        }
    }

    /// The policy for a `shell_run` command that the permission check let through. A
    /// command classified as a git write under `require-approval` was approved, and so may
    /// write `.git`; any other command under `require-approval` for its category was
    /// approved too, and so gets the network when `network_api` is `require-approval`.
    pub fn for_tool_command(
        &self,
        work_dir: &Path,
        protect: &[PathBuf],
        classified_git_write: bool,
    ) -> Policy {
        let approved = if classified_git_write {
            self.git_write == Grant::OnApproval
        } else {
            self.commands == Grant::OnApproval
        };
        let git = self.git_write == Grant::Allow
            || (classified_git_write && self.git_write == Grant::OnApproval);
        let network =
            self.network == Grant::Allow || (approved && self.network == Grant::OnApproval);
        Policy::new(work_dir, protect, git, network)
    }

    /// The policy for a validator or contract command (from the config; nobody approves
    /// it): git writes and network only when the policy allows them outright.
    pub fn for_check_command(&self, work_dir: &Path) -> Policy {
        Policy::new(
            work_dir,
            &[],
            self.git_write == Grant::Allow,
            self.network == Grant::Allow,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_mode_follows_the_preset_unless_set() {
        let spec = Spec::from_settings(&settings(&[]));
        assert_eq!(spec.on_unavailable, OnUnavailable::Warn);
        let locked = settings(&[("Security.Permissions.Preset", "locked-down")]);
        assert_eq!(
            Spec::from_settings(&locked).on_unavailable,
            OnUnavailable::Refuse
        );
        let warn = settings(&[
            ("Security.Permissions.Preset", "locked-down"),
            ("Security.Sandbox", "Warn"),
        ]);
        assert_eq!(
            Spec::from_settings(&warn).on_unavailable,
            OnUnavailable::Warn
        );
        let typo = settings(&[("Security.Sandbox", "wran")]);
        assert_eq!(
            Spec::from_settings(&typo).on_unavailable,
            OnUnavailable::Refuse
        );
    }

    #[test]
    fn approval_grants_only_the_approved_command() {
        let spec = Spec::from_settings(&settings(&[
            ("Security.Permissions.git_write", "require-approval"),
            ("Security.Permissions.network_api", "require-approval"),
            ("Security.Permissions.command_execution", "allow"),
        ]));
        let dir = std::env::temp_dir();
        let commit = spec.for_tool_command(&dir, &[], true);
        assert!(commit.network);
        let other = spec.for_tool_command(&dir, &[], false);
        assert!(!other.network, "an unapproved command gets no network");
        let check = spec.for_check_command(&dir);
        assert!(!check.network);
    }
}
