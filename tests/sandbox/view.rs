//! The filesystem view every started process gets, one test per layer: the root is
//! read-only, `/tmp` is private, the credentials are masked, there is no terminal, and no
//! descriptor fuseraft inherited reaches the command; and the confinement, computed at the
//! start of the run, is not widened by what a command writes.

use super::*;

#[test]
fn the_root_is_read_only_so_chmod_touch_and_rename_fail_outside() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("read-only-root");
    let victim_dir = outside("victim");
    let victim = victim_dir.join("victim.txt");
    std::fs::write(&victim, "mine\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    let v = victim.display();
    let commands = [
        format!("chmod 600 {v}"),
        format!("touch -m -d '2001-01-01 00:00' {v}"),
        format!("mv {v} {v}.moved"),
        format!("ln -s /etc/passwd {}/link", victim_dir.display()),
    ];
    let control = "touch inside.txt && chmod 600 inside.txt";
    let mut list: Vec<(&str, Option<f64>)> = commands.iter().map(|c| (c.as_str(), None)).collect();
    list.push((control, None));
    write_run(&dir, "    Sandbox: refuse", "", &list);
    let results = run_ok(&dir);
    for command in &commands {
        failed(&results, command);
    }
    assert!(
        results[control].0,
        "the work dir stays writable: {}",
        results[control].1
    );
    let after = std::fs::metadata(&victim).expect("not moved");
    assert_eq!(after.permissions().mode() & 0o777, 0o644, "mode unchanged");
    assert_eq!(
        after.modified().unwrap(),
        before.modified().unwrap(),
        "mtime unchanged"
    );
    assert!(!victim_dir.join("link").exists());
}

#[test]
fn the_temp_dirs_are_the_runs_own_so_planted_files_and_sockets_are_invisible() {
    use std::os::unix::net::UnixListener;
    let dir = scratch("private-temp");
    let pid = std::process::id();
    let planted = PathBuf::from(format!("/tmp/fuseraft-planted-{pid}.txt"));
    std::fs::write(&planted, "planted-secret\n").unwrap();
    let socket = PathBuf::from(format!("/tmp/fuseraft-planted-{pid}.sock"));
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let leak = PathBuf::from(format!("/tmp/fuseraft-leak-{pid}"));
    let shm_leak = PathBuf::from(format!("/dev/shm/fuseraft-leak-{pid}"));
    let read = format!("cat {}", planted.display());
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
        socket.display()
    );
    let write = format!(
        "echo leak > {} && echo leak > {} && cat {}",
        leak.display(),
        shm_leak.display(),
        leak.display()
    );
    let shared = format!("cat {} {}", leak.display(), shm_leak.display());
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[
            (&read, None),
            (&connect, None),
            (&write, None),
            (&shared, None),
        ],
    );
    // A killed run of an earlier test with the same process id left its temp dir: only a
    // dir that appears during this run counts.
    let before: std::collections::HashSet<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    let child = exec_command(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let fuseraft = child.id();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    assert!(!failed(&results, &read).contains("planted-secret"));
    failed(&results, &connect);
    assert!(
        results[&write].0,
        "the private /tmp is writable: {}",
        results[&write].1
    );
    assert!(
        !leak.exists() && !shm_leak.exists(),
        "a command's temp files stay in its run"
    );
    let (ok, out) = &results[&shared];
    assert!(
        *ok && out.matches("leak").count() == 2,
        "the run's commands share /tmp: {out}"
    );
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            name.starts_with(&format!("fuseraft-run-{fuseraft}-"))
                && !before.contains(&entry.file_name())
        })
        .collect();
    assert!(left.is_empty(), "the run's temp dir outlived it: {left:?}");
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a sandboxed command reached a socket in /tmp: {other:?}"),
    }
    let _ = std::fs::remove_file(planted);
    let _ = std::fs::remove_file(socket);
}

/// The credentials every run masks, relative to the home (files, and directories with a
/// file inside).
const CREDENTIAL_FILES: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/gcloud/application_default_credentials.json",
    ".azure/msal_token_cache.json",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".gnupg/private-keys-v1.d/key",
    ".local/share/keyrings/login.keyring",
    ".local/state/fuseraft/session.key",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".config/containers/auth.json",
    ".cache/huggingface/token",
    ".local/share/io.datasette.llm/keys.json",
    "xdg/gh/hosts.yml",
];

#[test]
fn credentials_the_session_key_and_deny_read_paths_read_as_denied() {
    let dir = scratch("read-mask");
    let home = outside("home");
    let secret = format!("credential-{}", std::process::id());
    for file in CREDENTIAL_FILES {
        let path = home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &secret).unwrap();
    }
    std::fs::write(home.join("notes.txt"), "visible\n").unwrap();
    let extra = outside("extra").join("private.txt");
    std::fs::write(&extra, &secret).unwrap();
    let mut commands: Vec<String> = CREDENTIAL_FILES
        .iter()
        .map(|file| format!("cat \"$HOME/{file}\""))
        .collect();
    commands.push("ls -A \"$HOME/.ssh\"".into());
    commands.push(format!("cat {}", extra.display()));
    let control = "cat \"$HOME/notes.txt\"";
    let mut list: Vec<(&str, Option<f64>)> = commands.iter().map(|c| (c.as_str(), None)).collect();
    list.push((control, None));
    write_run(&dir, "    Sandbox: refuse", "", &list);
    let output = exec_command(&dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env_remove("FUSERAFT_SESSION_KEY")
        .env_remove("XDG_STATE_HOME")
        .arg("--deny-read")
        .arg(&extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        home.join(".local/state/fuseraft/session.key").exists(),
        "the run made its key where the mask covers it"
    );
    let results = results(&dir);
    for command in &commands {
        let out = failed(&results, command);
        assert!(
            !out.contains(&secret),
            "`{command}` read a credential: {out}"
        );
    }
    assert!(
        results[control].0,
        "the rest of the home reads: {}",
        results[control].1
    );
}

#[test]
fn commands_have_no_terminal_to_open_or_type_into() {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let dir = scratch("no-terminal");
    let open_tty = "exec 3<>/dev/tty && echo opened";
    let tiocsti = "python3 -c \"import fcntl, termios\nfor fd in (0, 1, 2):\n    try:\n        fcntl.ioctl(fd, termios.TIOCSTI, b'x'); print('typed', fd)\n    except OSError:\n        pass\" | grep typed";
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[(open_tty, None), (tiocsti, None)],
    );
    // fuseraft runs with a pseudo-terminal as its controlling terminal, as at a prompt.
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pty");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let exec = exec_command(&dir);
    let output = Command::new("setsid")
        .arg("--ctty")
        .arg(exec.get_program())
        .args(exec.get_args())
        .env("NO_COLOR", "1")
        .stdin(Stdio::from(slave))
        .output()
        .expect("setsid (util-linux) runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    assert!(!failed(&results, open_tty).contains("opened"));
    assert!(!failed(&results, tiocsti).contains("typed"));
    drop(master);
}

#[test]
fn a_descriptor_fuseraft_inherited_never_reaches_a_command() {
    let dir = scratch("inherited-fd");
    let target = outside("fd").join("inherited.txt");
    std::fs::write(&target, "").unwrap();
    let write = "echo pwned >&9";
    let list = "ls /proc/self/fd | tr '\\n' ' '";
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[(write, None), (list, None)],
    );
    let exec = exec_command(&dir);
    let output = Command::new("bash")
        .arg("-c")
        .arg("exec 9>>\"$0\" && exec \"$@\"")
        .arg(&target)
        .arg(exec.get_program())
        .args(exec.get_args())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    failed(&results, write);
    let (ok, fds) = &results[list];
    assert!(ok, "{fds}");
    // 0, 1, 2 and the directory `ls` reads.
    assert!(
        fds.split_whitespace().count() <= 4 && !fds.split_whitespace().any(|fd| fd == "9"),
        "open descriptors: {fds}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
}

#[test]
fn a_git_file_planted_by_one_command_does_not_widen_the_next_ones_sandbox() {
    let dir = scratch("gitdir");
    let work = repo(&dir);
    let victim = outside("gitdir-target");
    let plant = format!(
        "mv .git .git-aside; printf 'gitdir: {}\\n' > .git; cat .git",
        victim.display()
    );
    let escape = format!("echo pwned > {}/pwned", victim.display());
    // The default policy: git writes and commands allowed.
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[(&plant, None), (&escape, None)],
    );
    let results = run_ok(&dir);
    failed(&results, &escape);
    assert!(
        !victim.join("pwned").exists(),
        "the planted gitdir became writable"
    );
    assert!(
        work.join(".git").is_dir(),
        "the repository's .git stays in place"
    );
}

#[test]
fn a_config_adds_to_the_read_mask() {
    let dir = scratch("config-mask");
    let secret_dir = outside("config-mask");
    let secret = secret_dir.join("service-token");
    std::fs::write(&secret, "config-secret\n").unwrap();
    let read = format!("cat {}", secret.display());
    let security = format!("    Sandbox: refuse\n    DenyRead: [{}]", secret.display());
    write_run(&dir, &security, "", &[(&read, None)]);
    let results = run_ok(&dir);
    assert!(!failed(&results, &read).contains("config-secret"));
}

#[test]
fn a_command_holds_no_capability_even_as_root() {
    let dir = scratch("no-capability");
    let caps = "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | tr -s '\\t' ' '";
    write_run(&dir, "    Sandbox: refuse", "", &[(caps, None)]);
    let results = run_ok(&dir);
    let (ok, out) = &results[caps];
    assert!(ok, "{out}");
    assert_eq!(
        out.lines()
            .filter(|line| line.ends_with(" 0000000000000000"))
            .count(),
        4,
        "{out}"
    );
}

#[test]
fn a_git_file_naming_a_dir_outside_the_work_dir_never_makes_it_writable() {
    // As an earlier run's command would leave them: a `.git` file naming a directory
    // outside, and one whose git dir's `commondir` climbs out.
    let direct = outside("gitfile-direct");
    let common = outside("gitfile-common");
    let dir = scratch("gitfile-direct");
    let work = dir.join("work");
    std::fs::write(work.join(".git"), format!("gitdir: {}\n", direct.display())).unwrap();
    let escape = format!("echo x > {}/planted", direct.display());
    write_run(&dir, "    Sandbox: refuse", "", &[(&escape, None)]);
    failed(&run_ok(&dir), &escape);

    let dir = scratch("gitfile-common");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("meta")).unwrap();
    std::fs::write(work.join(".git"), "gitdir: meta\n").unwrap();
    let climb = "../".repeat(work.join("meta").components().count());
    let relative = format!(
        "{climb}{}",
        common.display().to_string().trim_start_matches('/')
    );
    std::fs::write(work.join("meta/commondir"), format!("{relative}\n")).unwrap();
    let escape = format!("echo x > {}/planted", common.display());
    write_run(&dir, "    Sandbox: refuse", "", &[(&escape, None)]);
    failed(&run_ok(&dir), &escape);
    assert!(!direct.join("planted").exists() && !common.join("planted").exists());
}

#[test]
fn a_nested_git_file_naming_fuseraft_state_leaves_it_read_only() {
    let dir = scratch("gitfile-state");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join(".fuseraft/sessions")).unwrap();
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/.git"), "gitdir: ../.fuseraft/sessions\n").unwrap();
    let forge = "touch .fuseraft/sessions/forged";
    write_run(&dir, "    Sandbox: refuse", "", &[(forge, None)]);
    failed(&run_ok(&dir), forge);
    assert!(!work.join(".fuseraft/sessions/forged").exists());
}

#[test]
fn no_command_moves_a_protected_place_away_from_the_path_the_next_one_protects() {
    let dir = scratch("rename-away");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("vendor/lib")).unwrap();
    git(&work.join("vendor/lib"), &["init", "-q"]);
    std::fs::create_dir_all(work.join("config/secrets")).unwrap();
    std::fs::write(work.join("config/secrets/token"), "rename-away-secret\n").unwrap();
    let moves = [
        "mv vendor vendor2",
        "mv vendor/lib vendor/lib2",
        "mv config config2",
    ];
    let after = [
        "echo x > vendor2/lib/.git/hooks/post-checkout",
        "echo x > vendor/lib2/.git/hooks/post-checkout",
        "cat config2/secrets/token",
    ];
    let commands: Vec<(&str, Option<f64>)> = moves
        .iter()
        .chain(&after)
        .map(|command| (*command, None))
        .collect();
    write_run(
        &dir,
        "    Sandbox: refuse\n    Permissions: { git_write: block }\n    DenyRead: [config/secrets/token]",
        "",
        &commands,
    );
    let results = run_ok(&dir);
    for command in moves.iter().chain(&after) {
        let output = failed(&results, command);
        assert!(
            !output.contains("rename-away-secret"),
            "{command}: {output}"
        );
    }
    assert!(!work.join("vendor/lib/.git/hooks/post-checkout").exists());
    assert!(work.join("vendor/lib/.git").is_dir() && work.join("config/secrets/token").is_file());
}

#[test]
fn no_write_is_granted_through_a_link_a_command_or_a_repository_made() {
    use std::os::unix::fs::PermissionsExt;
    // A bare repository the start of the run widens under git writes, whose parent a
    // command then swaps for a link to a directory outside holding a dir of the same name.
    let victim = outside("linked-parent");
    std::fs::create_dir_all(victim.join("outside")).unwrap();
    std::fs::write(victim.join("outside/victim"), "v\n").unwrap();
    std::fs::set_permissions(
        victim.join("outside/victim"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let dir = scratch("linked-parent");
    let work = dir.join("work");
    for part in ["d/outside/objects", "d/outside/refs"] {
        std::fs::create_dir_all(work.join(part)).unwrap();
    }
    std::fs::write(work.join("d/outside/HEAD"), "ref: refs/heads/main\n").unwrap();
    let swap = format!("mv d d.old && ln -s {} d", victim.display());
    let write = format!("echo x > {}/outside/pwned", victim.display());
    write_run(
        &dir,
        "    Sandbox: refuse\n    Permissions: { git_write: allow }",
        "",
        &[(&swap, None), (&write, None)],
    );
    let results = run_ok(&dir);
    succeeded(&results, &swap);
    failed(&results, &write);

    // A `DenyRead` path whose parents do not exist yet: a command makes the first a link.
    let dir = scratch("linked-pin");
    let link = format!("ln -s {} a", victim.display());
    let chmod = format!("chmod 777 {}/outside/victim", victim.display());
    let touch = format!("touch -d 2001-01-01 {}/outside/victim", victim.display());
    write_run(
        &dir,
        "    Sandbox: refuse\n    DenyRead: [a/outside/secret]",
        "",
        &[(&link, None), (&chmod, None), (&touch, None)],
    );
    let results = run_ok(&dir);
    succeeded(&results, &link);
    failed(&results, &chmod);
    failed(&results, &touch);

    // A `.git` that is a link to a directory outside, left by an earlier run.
    let dir = scratch("linked-dotgit");
    std::os::unix::fs::symlink(victim.join("outside"), dir.join("work/.git")).unwrap();
    let write = format!("echo x > {}/outside/pwned", victim.display());
    write_run(
        &dir,
        "    Sandbox: refuse\n    Permissions: { git_write: allow }",
        "",
        &[(&write, None)],
    );
    failed(&run_ok(&dir), &write);
    assert!(!victim.join("outside/pwned").exists());
    let meta = std::fs::metadata(victim.join("outside/victim")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
}

#[test]
fn nothing_a_command_does_in_the_runs_temp_stops_the_next_ones_view() {
    let dir = scratch("temp-sabotage");
    let sabotage = "rm -rf /tmp/shm /tmp/tmp; ln -s / /tmp/shm; ln -s / /tmp/tmp; ls -A /dev/shm";
    let next = "echo next > /dev/shm/n && cat /dev/shm/n";
    write_run(
        &dir,
        "    Sandbox: refuse",
        "",
        &[(sabotage, None), (next, None)],
    );
    let results = run_ok(&dir);
    assert_eq!(succeeded(&results, next).trim(), "next");
}

#[test]
fn a_repository_made_by_hand_under_git_write_block_is_moved_aside_at_the_end() {
    let dir = scratch("new-repo");
    let work = dir.join("work");
    let victim = outside("new-repo");
    // The work dir is no repository: a command writes one whose `core.fsmonitor` would run
    // at the user's next `git status`.
    let plant = format!(
        "mkdir -p .git/objects .git/refs && echo 'ref: refs/heads/main' > .git/HEAD && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {}/ran\\n' > .git/config",
        victim.display()
    );
    write_run(
        &dir,
        "    Sandbox: refuse\n    Permissions: { git_write: block }",
        "",
        &[(&plant, None)],
    );
    let results = run_ok(&dir);
    succeeded(&results, &plant);
    assert!(!work.join(".git").exists(), "the new repository is gone");
    let aside: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with(".git.fuseraft-refused-"))
        .collect();
    assert_eq!(aside.len(), 1, "moved aside, not lost");
    // The user's `git status` there runs nothing of it.
    let _ = Command::new("git")
        .arg("status")
        .current_dir(&work)
        .env("GIT_CEILING_DIRECTORIES", &dir)
        .output();
    assert!(!victim.join("ran").exists(), "the planted fsmonitor ran");
}

#[test]
fn a_bare_layout_at_the_root_or_a_blocked_set_aside_name_leaves_no_repository_either() {
    let victim = outside("new-repo-bare");
    let fsmonitor = format!(
        "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = touch {}/ran\\n' > config",
        victim.display()
    );
    // The root itself laid out as a bare repository.
    let bare =
        format!("mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD && {fsmonitor}");
    // A `.git`, with the names a move aside might take made first.
    let crowded = format!(
        "n=$(date +%s); for i in $(seq 0 300); do : > .git.fuseraft-refused-$((n+i)); done; \
         mkdir -p .git/objects .git/refs && echo 'ref: refs/heads/main' > .git/HEAD && cd .git && {fsmonitor}"
    );
    for (name, plant) in [("bare", &bare), ("crowded", &crowded)] {
        let dir = scratch(&format!("new-repo-{name}"));
        let work = dir.join("work");
        write_run(
            &dir,
            "    Sandbox: refuse\n    Permissions: { git_write: block }",
            "",
            &[(plant, None)],
        );
        succeeded(&run_ok(&dir), plant);
        let status = Command::new("git")
            .arg("status")
            .current_dir(&work)
            .env("GIT_CEILING_DIRECTORIES", &dir)
            .output()
            .unwrap();
        assert!(!status.status.success(), "{name}: still a repository");
        assert!(
            !victim.join("ran").exists(),
            "{name}: the planted fsmonitor ran"
        );
    }
}

#[test]
fn a_repl_replaying_code_its_approval_did_not_show_never_gets_a_writable_git() {
    let dir = scratch("repl-replay");
    let work = repo(&dir);
    let hook = "try:\n    open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\necho planted\\n')\nexcept OSError:\n    pass\n";
    let commit = "import os\nos.system(\" git add README\")\n";
    let config = "Orchestration:\n  Name: Repl\n  Security:\n    Sandbox: refuse\n    Permissions: { git_write: require-approval, command_execution: allow }\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [CodeExecution]\n  Selection: { Type: sequential }\n  Termination: { Type: maxiterations, MaxIterations: 1 }\n";
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let calls = json!([
        {"name": "repl_start", "args": {"language": "python"}},
        {"name": "repl_exec", "args": {"sessionId": "repl-1", "code": hook}},
        {"name": "repl_exec", "args": {"sessionId": "repl-1", "code": commit}},
    ]);
    let replay = json!({"replies": {"Dev": [{"tool_calls": calls, "text": "Done."}]}});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    // `--approve all`: the commit is approved, and with it would go the earlier code.
    let output = exec(&dir);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        !work.join(".git/hooks/pre-commit").exists(),
        "code the approval never showed wrote a hook"
    );
}
