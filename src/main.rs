//! The `fuseraft` binary: parse the command line, run, exit with the command's code.

use clap::Parser;

/// mimalloc (v2) instead of glibc's malloc: a replayed turn allocates and frees a few hundred
/// small blocks, and a provider turn builds and drops a ~200 KB request, which glibc hands back
/// to the kernel and faults in again every turn (`docs/performance.md`, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // The OS sandbox's launcher (`fuseraft __sandbox ...`) runs before anything else: it
    // must still be single-threaded. Otherwise fuseraft hides its own environment from the
    // commands it runs and registers itself as their launcher.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(code) = fuseraft_vm::sandbox::dispatch(&args) {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    fuseraft_vm::sandbox::harden_self();
    fuseraft_vm::sandbox::install_own_binary();
    fuseraft::quiet_closed_stdout();
    let cli = match fuseraft::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            if error.use_stderr() {
                // `exec --json` prints its one summary object even for a refused command line.
                let text = error.render().to_string();
                if let Some(summary) = fuseraft::commands::early::refused_command_line(&args, &text)
                {
                    let _ = fuseraft::commands::print(&summary);
                }
            }
            return std::process::ExitCode::from(code);
        }
    };
    std::process::ExitCode::from(fuseraft::run(&cli))
}
