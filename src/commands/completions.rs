//! `fuseraft completions SHELL`: the completion script of bash, zsh, fish, elvish or
//! PowerShell, generated from the clap types by `clap_complete`; bash's also completes
//! session ids from `fuseraft sessions list`.

use clap::CommandFactory;

use super::exit;
use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: &CompletionsArgs) -> u8 {
    super::print_or_fail(&script(args.shell)).unwrap_or(exit::OK)
}

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "fuseraft", &mut out);
    let mut script = String::from_utf8_lossy(&out).into_owned();
    if shell == clap_complete::Shell::Bash {
        script.push_str(BASH_SESSIONS);
    }
    script
}

/// Bash: session ids after `--resume`/`-r` and `sessions show|rm`, listed by `fuseraft
/// sessions list` for the work dir the line names (`--work-dir DIR`), else the current one;
/// everything else as clap's completion has it.
const BASH_SESSIONS: &str = r#"
_fuseraft_sessions() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" i
    local work=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ "${COMP_WORDS[i]}" == --work-dir ]]; then
            work=(--work-dir "${COMP_WORDS[i+1]}")
        fi
    done
    if [[ "$prev" == --resume || "$prev" == -r ]]         || [[ "${COMP_WORDS[1]}" == sessions && ( "$prev" == show || "$prev" == rm ) ]]; then
        local ids
        ids="$(fuseraft sessions list "${work[@]}" 2>/dev/null | cut -d' ' -f1)"
        COMPREPLY=($(compgen -W "$ids" -- "$cur"))
        return 0
    fi
    _fuseraft "$@"
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _fuseraft_sessions -o nosort -o bashdefault -o default fuseraft
else
    complete -F _fuseraft_sessions -o bashdefault -o default fuseraft
fi
"#;
