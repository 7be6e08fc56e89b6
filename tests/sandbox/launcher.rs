//! The launcher itself cannot be turned: it runs no program a command could choose (a
//! `PATH` set by the model), is never looked up by path again (a fuseraft binary in the work
//! dir, replaced by a command, or under the shared `/tmp`), and the read mask's blank file
//! is nowhere a command of the run can reach or replace.

use super::*;

/// `exec` of the run in `dir` with the fuseraft binary at `binary`.
fn exec_with(binary: &Path, dir: &Path, extra: &[&str]) -> Output {
    let output = Command::new(binary)
        .arg("exec")
        .arg(dir.join("config.yaml"))
        .args(["--task", "Work.", "--approve", "all", "--replay"])
        .arg(dir.join("replay.json"))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .args(extra)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the fuseraft binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        !text(&output.stderr).contains("OS sandbox is unavailable"),
        "{}",
        text(&output.stderr)
    );
    output
}

fn shell(command: &str) -> Value {
    json!({"name": "shell_run", "args": {"command": command}})
}

/// A copy of the fuseraft binary at `path`.
fn copy_binary(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(BIN, path).unwrap();
}

#[test]
fn a_program_on_a_path_the_model_set_never_runs_as_part_of_the_launcher() {
    let dir = scratch("path-hijack");
    let victim = outside("path-hijack");
    // Every helper a launcher could look up on `PATH` (the command's own shell is looked up
    // there too, and runs confined), each leaving a mark in the run's `/tmp` (which later
    // commands see) and trying to write outside with whatever it holds.
    let plant = format!(
        "mkdir -p /tmp/hbin && for tool in ip mount umount unshare; do \
         printf '#!/bin/sh\\ntouch /tmp/hbin/ran-%s\\nmount -o remount,rw,bind / 2>/dev/null\\necho x > {}/escaped-%s\\n' $tool $tool > /tmp/hbin/$tool; \
         chmod +x /tmp/hbin/$tool; done",
        victim.display()
    );
    let after = "/usr/bin/test -z \"$(/bin/ls /tmp/hbin | /bin/grep ran-)\"";
    write_calls(
        &dir,
        "    Sandbox: refuse\n    Permissions: { network_api: block }",
        "",
        vec![
            shell(&plant),
            json!({"name": "shell_set_env", "args": {"name": "PATH", "value": "/tmp/hbin:/usr/bin:/bin"}}),
            shell("/bin/echo launched"),
            shell(after),
        ],
    );
    let results = run_ok(&dir);
    assert_eq!(succeeded(&results, "/bin/echo launched").trim(), "launched");
    succeeded(&results, after);
    let escaped: Vec<_> = std::fs::read_dir(&victim).unwrap().flatten().collect();
    assert!(escaped.is_empty(), "written outside: {escaped:?}");
}

#[test]
fn a_fuseraft_binary_in_the_work_dir_replaced_by_a_command_is_not_what_launches_the_next() {
    let dir = scratch("exe-in-work");
    let victim = outside("exe-in-work");
    let binary = dir.join("work/bin/fuseraft");
    copy_binary(&binary);
    let swap = format!(
        "mv bin/fuseraft bin/fuseraft.real && \
         printf '#!/bin/sh\\necho x > {}/escaped\\nexec \"$(dirname \"$0\")/fuseraft.real\" \"$@\"\\n' > bin/fuseraft && \
         chmod +x bin/fuseraft",
        victim.display()
    );
    write_calls(
        &dir,
        "    Sandbox: refuse",
        "",
        vec![shell(&swap), shell("echo next")],
    );
    exec_with(&binary, &dir, &[]);
    let results = results(&dir);
    succeeded(&results, &swap);
    assert_eq!(succeeded(&results, "echo next").trim(), "next");
    assert!(
        !victim.join("escaped").exists(),
        "the replaced binary ran as the launcher"
    );
}

#[test]
fn a_fuseraft_binary_under_the_shared_tmp_still_confines_its_commands() {
    let dir = scratch("exe-in-tmp");
    let victim = outside("exe-in-tmp");
    let binary = std::env::temp_dir()
        .join(format!("fuseraft-bin-{}", std::process::id()))
        .join("fuseraft");
    copy_binary(&binary);
    let escape = format!("echo x > {}/escaped", victim.display());
    write_run(&dir, "    Sandbox: refuse", "", &[(&escape, None)]);
    exec_with(&binary, &dir, &[]);
    let _ = std::fs::remove_dir_all(binary.parent().unwrap());
    failed(&results(&dir), &escape);
    assert!(!victim.join("escaped").exists());
}

#[test]
fn no_command_can_swap_the_read_masks_blank_for_a_link_to_what_it_masks() {
    let dir = scratch("mask-race");
    let secret_dir = outside("mask-race");
    let secret = secret_dir.join("token");
    std::fs::write(&secret, "mask-race-secret\n").unwrap();
    // A background job that, the moment any file appears in the run's `/tmp`, renames a
    // link to the masked file over it: a blank made there and bound by its path would then
    // bind the secret over itself.
    let racer = format!(
        "import ctypes, os, struct\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         fd = libc.inotify_init()\n\
         libc.inotify_add_watch(fd, b'/tmp', 0x100)\n\
         open('/tmp/racer-ready', 'w').close()\n\
         while True:\n\
         \x20   buf = os.read(fd, 65536)\n\
         \x20   i = 0\n\
         \x20   while i < len(buf):\n\
         \x20       wd, mask, cookie, size = struct.unpack_from('iIII', buf, i)\n\
         \x20       name = buf[i + 16:i + 16 + size].rstrip(b'\\0').decode()\n\
         \x20       i += 16 + size\n\
         \x20       if name.endswith('.swap') or name.startswith('racer'):\n\
         \x20           continue\n\
         \x20       try:\n\
         \x20           os.symlink('{}', '/tmp/' + name + '.swap')\n\
         \x20           os.rename('/tmp/' + name + '.swap', '/tmp/' + name)\n\
         \x20       except OSError:\n\
         \x20           pass\n",
        secret.display()
    );
    std::fs::write(dir.join("work/racer.py"), racer).unwrap();
    let read = format!("cat {}", secret.display());
    let mut calls = vec![
        json!({"name": "shell_run_background", "args": {"command": "python3 racer.py"}}),
        shell("for i in $(seq 50); do [ -e /tmp/racer-ready ] && exit 0; sleep 0.1; done; exit 1"),
    ];
    calls.extend((0..30).map(|n| shell(&format!("{read} # {n}"))));
    let security = format!("    Sandbox: refuse\n    DenyRead: [{}]", secret.display());
    write_calls(&dir, &security, "", calls);
    let results = run_ok(&dir);
    for n in 0..30 {
        let output = failed(&results, &format!("{read} # {n}"));
        assert!(!output.contains("mask-race-secret"), "read #{n}: {output}");
    }
}

#[test]
fn the_launcher_runs_with_no_environment_the_agent_chose() {
    let dir = scratch("launcher-env");
    let show = "echo ok; printenv MIMALLOC_VERBOSE; test -n \"$PATH\" && echo path";
    write_calls(
        &dir,
        "    Sandbox: refuse",
        "",
        vec![
            // The allocator's own variables: read at its start, in whatever process they
            // reach; here only the command's.
            json!({"name": "shell_set_env", "args": {"name": "MIMALLOC_SHOW_STATS", "value": "1"}}),
            json!({"name": "shell_set_env", "args": {"name": "MIMALLOC_VERBOSE", "value": "1"}}),
            shell(show),
        ],
    );
    let results = run_ok(&dir);
    assert_eq!(succeeded(&results, show), "ok\n1\npath\n");
}

#[test]
fn no_command_reads_another_terminal_or_reaches_a_home_container_socket() {
    use std::os::unix::net::UnixListener;
    let dir = scratch("pts-home");
    let home = outside("pts-home");
    std::fs::create_dir_all(home.join(".colima/default")).unwrap();
    let socket = home.join(".colima/default/docker.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let terminals = "ls -A /dev/pts";
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
        socket.display()
    );
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[(terminals, None), (&connect, None)],
    );
    let output = exec_command(&dir).env("HOME", &home).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    failed(&results, terminals);
    failed(&results, &connect);
    assert!(
        listener.accept().is_err(),
        "a command reached the engine's socket"
    );
}

#[test]
fn no_command_reads_a_disk_or_memory_device_even_as_root() {
    let dir = scratch("devices");
    // Every block device (a disk holds every masked file) and the memory devices.
    let read = "for d in $(find /dev -maxdepth 1 \\( -type b -o -name mem -o -name kmem -o -name port \\)); do \
                head -c 1 \"$d\" > /dev/null 2>&1 && echo \"READ $d\"; done; \
                head -c 4 /dev/urandom | wc -c";
    write_run(&dir, "    Sandbox: refuse", "", &[(read, None)]);
    let results = run_ok(&dir);
    assert_eq!(succeeded(&results, read).trim(), "4", "a device was read");
}
