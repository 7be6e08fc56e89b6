//! The network is unreachable under `network_api: block` (TCP to the host's loopback),
//! reachable under `allow`; masked daemon sockets cannot be reached.

use super::*;

#[test]
fn the_network_is_unreachable_under_block_and_reachable_under_allow() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let python = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\""
    );
    let bash = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let curl = format!("command -v curl >/dev/null || exit 7; curl -sS -m 3 http://127.0.0.1:{port}/ && echo connected");
    let dir = scratch("net-block");
    write_run(
        &dir,
        "    Permissions: { network_api: block }",
        "",
        &[(&python, None), (&bash, None), (&curl, None)],
    );
    let results = run_ok(&dir);
    for command in [&python, &bash, &curl] {
        let (succeeded, output) = &results[command.as_str()];
        assert!(!succeeded, "`{command}` reached the network: {output}");
    }
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a sandboxed command connected to the listener: {other:?}"),
    }

    let dir = scratch("net-allow");
    write_run(
        &dir,
        "    Permissions: { network_api: allow }",
        "",
        &[(&python, None)],
    );
    let results = run_ok(&dir);
    assert!(
        results[&python].0,
        "allowed network works: {}",
        results[&python].1
    );
}

#[test]
fn masked_daemon_sockets_cannot_be_reached() {
    use std::os::unix::net::UnixListener;
    let dir = scratch("masked");
    let work = dir.join("work");
    // Outside the work dir and outside `/tmp`, which every command sees a private copy of.
    let outside =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("daemon-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&outside);
    std::fs::create_dir_all(&outside).unwrap();
    let socket = outside.join("engine.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')",
        socket.display()
    );
    let run = |masked: Vec<&Path>| {
        let policy = json!({
            "work_dir": work, "writable": [work], "read_only": [], "state_dir": null,
            "masked": masked, "network": false, "parent": 0
        });
        Command::new(BIN)
            .args([
                "__sandbox",
                &policy.to_string(),
                "--",
                "python3",
                "-c",
                &connect,
            ])
            .current_dir(&work)
            .output()
            .unwrap()
    };
    let masked = run(vec![socket.as_path()]);
    assert!(
        !masked.status.success(),
        "reached a masked socket: {masked:?}"
    );
    let masked_dir = run(vec![outside.as_path()]);
    assert!(
        !masked_dir.status.success(),
        "reached a socket in a masked dir: {masked_dir:?}"
    );
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a sandboxed command connected to the masked socket: {other:?}"),
    }
    let control = run(vec![]);
    assert!(
        control.status.success(),
        "unmasked, the socket works: {control:?}"
    );
}
