//! Connecting to one MCP server with the official SDK (`rmcp`): a child process over stdio
//! (spawned with the allow-listed environment, in its own process group, its standard error
//! kept for error messages) or streamable HTTP. `${VAR}` in an argument, an environment
//! value, the URL or a header is expanded here (`vars.rs`: only the variables the user
//! allowed), and an expanded value is redacted from every message.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fuseraft_compiler::ir::{McpServer, McpTransport};
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};

use super::vars;
use tokio::io::AsyncReadExt as _;

/// A live connection.
pub(super) type Client = RunningService<RoleClient, ()>;

/// The last bytes a stdio server wrote to its standard error.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<Vec<u8>>>);

/// How much of a server's standard error is kept.
const STDERR_TAIL: usize = 2048;

impl StderrTail {
    /// The kept text, trimmed, or `None` when the server wrote nothing.
    pub(super) fn text(&self) -> Option<String> {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        (!text.is_empty()).then_some(text)
    }

    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(chunk);
        if bytes.len() > STDERR_TAIL {
            let cut = bytes.len() - STDERR_TAIL;
            bytes.drain(..cut);
        }
    }
}

/// A started server: its connection, and for a stdio server its process group and stderr.
pub(super) struct Started {
    pub client: Client,
    pub process_group: Option<u32>,
    pub stderr: StderrTail,
}

/// Starts `server` and runs the MCP handshake, for at most `limit`. `Err` says why, without
/// the server's name (the caller adds it); a stdio server that failed is killed at once
/// (a run that ends on this error would not live to reap it later).
pub(super) async fn start(
    server: &McpServer,
    work_dir: &Path,
    limit: Duration,
    confined: &Confined<'_>,
) -> Result<Started, String> {
    match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            working_directory,
        } => {
            let dir = match working_directory {
                Some(dir) => work_dir.join(dir),
                None => work_dir.to_path_buf(),
            };
            if !dir.is_dir() {
                return Err(format!(
                    "its working directory `{}` is not a directory",
                    dir.display()
                ));
            }
            let mut values = Vec::new();
            let mut argv = Vec::with_capacity(args.len());
            for arg in args {
                let expanded = vars::expand(arg)?;
                values.extend(expanded.values);
                argv.push(expanded.text);
            }
            let mut envs = Vec::with_capacity(env.len());
            for (name, value) in env {
                let expanded = vars::expand(value)?;
                values.extend(expanded.values);
                envs.push((name.as_str(), expanded.text));
            }
            let (process, stderr) = spawn(confined, command, &argv, &envs, &dir)?;
            let process_group = process.id();
            let tail = StderrTail::default();
            if let Some(mut stderr) = stderr {
                let tail = tail.clone();
                tokio::spawn(async move {
                    let mut buffer = [0u8; 1024];
                    while let Ok(read @ 1..) = stderr.read(&mut buffer).await {
                        tail.push(&buffer[..read]);
                    }
                });
            }
            match tokio::time::timeout(limit, ().serve(process)).await {
                Ok(Ok(client)) => Ok(Started {
                    client,
                    process_group,
                    stderr: tail,
                }),
                Ok(Err(error)) => {
                    // Give the dying process a moment to say why on its standard error.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    kill_group(process_group);
                    let message = match not_started(&tail) {
                        Some(reason) => format!("cannot start `{command}`: {reason}"),
                        None => with_stderr(
                            format!("`{command}` did not complete the MCP handshake ({error})"),
                            &tail,
                        ),
                    };
                    Err(vars::redact(message, &values))
                }
                Err(_) => {
                    kill_group(process_group);
                    Err(vars::redact(
                        with_stderr(
                            format!("did not finish starting within {} s", limit.as_secs()),
                            &tail,
                        ),
                        &values,
                    ))
                }
            }
        }
        McpTransport::Http { url, headers } => {
            // Messages show the URL as written: an expanded value is never printed.
            let expanded = vars::expand(url)?;
            let mut values = expanded.values;
            let mut config = StreamableHttpClientTransportConfig::with_uri(expanded.text);
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let expanded = vars::expand(value)?;
                values.extend(expanded.values);
                let value = expanded.text;
                if name.eq_ignore_ascii_case("authorization") {
                    if let Some(token) = value.strip_prefix("Bearer ") {
                        config = config.auth_header(token.trim().to_string());
                        continue;
                    }
                }
                let header_name = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
                let header_value = http::HeaderValue::from_str(&value)
                    .map_err(|_| format!("the value of header `{name}` is not valid in HTTP"))?;
                custom.insert(header_name, header_value);
            }
            let transport =
                StreamableHttpClientTransport::from_config(config.custom_headers(custom));
            let client = match tokio::time::timeout(limit, ().serve(transport)).await {
                Ok(Ok(client)) => client,
                Ok(Err(error)) => {
                    return Err(vars::redact(
                        format!("no MCP server answered at `{url}` ({error})"),
                        &values,
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "no MCP server answered at `{url}` within {} s",
                        limit.as_secs()
                    ))
                }
            };
            Ok(Started {
                client,
                process_group: None,
                stderr: StderrTail::default(),
            })
        }
    }
}

/// Kills a stdio server's process group (the server and anything it started).
pub(super) fn kill_group(process_group: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = process_group
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = process_group;
}

/// `message`, with the server's last standard error lines when it wrote any.
pub(super) fn with_stderr(message: String, tail: &StderrTail) -> String {
    match tail.text() {
        Some(text) => format!("{message}; its standard error ends with:\n{text}"),
        None => message,
    }
}

/// Why the sandbox's launcher could not start the server's program (not installed, not
/// executable), from its standard error: the launcher's own first line, without the
/// program's name it repeats.
fn not_started(tail: &StderrTail) -> Option<String> {
    let text = tail.text()?;
    let line = text.lines().next()?;
    let rest = line.strip_prefix(crate::sandbox::SETUP_FAILED_MARK)?.trim();
    let reason = rest.strip_prefix("starting `")?.split_once("`: ")?.1;
    Some(reason.to_string())
}

/// The confinement a stdio server runs in: the run's sandbox settings and the server's
/// policy, drawn from the run's one confinement.
pub(super) struct Confined<'a> {
    pub spec: &'a crate::sandbox::Spec,
    pub policy: &'a crate::sandbox::Policy,
}

/// Starts a stdio server's process: `command args…` in `dir`, in the OS sandbox under
/// `confined` (the allow-listed environment plus `envs`; refused where the sandbox is
/// unavailable and `Security.Sandbox` says `refuse`), in its own process group, its
/// standard error piped. The one place a server's process is spawned.
fn spawn(
    confined: &Confined<'_>,
    command: &str,
    args: &[String],
    envs: &[(&str, String)],
    dir: &Path,
) -> Result<(TokioChildProcess, Option<tokio::process::ChildStderr>), String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut policy = confined.policy.clone();
    policy.work_dir = dir.to_path_buf();
    let extra: Vec<(String, String)> = envs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let cmd = crate::sandbox::command_with_env(confined.spec, &policy, command, &args, &extra)?;
    let mut wrapped = CommandWrap::from(tokio::process::Command::from(cmd));
    wrapped.wrap(ProcessGroup::leader());
    TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start `{command}`: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_working_directory_is_named_not_blamed_on_the_command() {
        let server = McpServer {
            name: "s".into(),
            transport: McpTransport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: Vec::new(),
                working_directory: Some("no-such-dir".into()),
            },
            timeout_seconds: None,
            loc: None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let work_dir = std::env::temp_dir();
        let spec = crate::sandbox::Spec::default();
        let policy = crate::sandbox::Policy::new(&work_dir, &[], false, false);
        let confined = Confined {
            spec: &spec,
            policy: &policy,
        };
        let error = runtime
            .block_on(start(&server, &work_dir, Duration::from_secs(5), &confined))
            .err()
            .unwrap();
        assert!(
            error.starts_with("its working directory `")
                && error.ends_with("no-such-dir` is not a directory"),
            "{error}"
        );
    }
}
