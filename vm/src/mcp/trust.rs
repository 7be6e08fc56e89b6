//! What the user is asked to trust before a run starts a server: which servers start, and
//! a stdio server's command line as written.

use fuseraft_compiler::ir::{McpServer, McpServerId, McpTransport, Program};

/// Per server of the program, whether it starts with the run (some agent lists it).
pub fn used(program: &Program) -> Vec<bool> {
    (0..program.mcp_servers.len() as u32)
        .map(|id| {
            program.agents.iter().any(|agent| {
                program
                    .mcp_servers_of(&agent.tools)
                    .contains(&McpServerId(id))
            })
        })
        .collect()
}

/// A stdio server's command line as written (no `${VAR}` expanded), the way the user is
/// asked to trust it: `[cd DIR &&] [NAME=value …] command args…`, each word quoted for a
/// POSIX shell when it needs to be. `None` for an HTTP server.
pub fn command_line(server: &McpServer) -> Option<String> {
    let McpTransport::Stdio {
        command,
        args,
        env,
        working_directory,
    } = &server.transport
    else {
        return None;
    };
    let mut words: Vec<String> = Vec::new();
    if let Some(dir) = working_directory {
        words.push(format!("cd {} &&", quote(dir)));
    }
    words.extend(
        env.iter()
            .map(|(name, value)| format!("{name}={}", quote(value))),
    );
    words.push(quote(command));
    words.extend(args.iter().map(|arg| quote(arg)));
    Some(words.join(" "))
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
