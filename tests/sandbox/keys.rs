//! API keys are not readable by commands: not in their environment (even under an
//! allow-listed name), not through `/proc`.

use super::*;

#[test]
fn api_keys_are_not_readable_by_commands() {
    let dir = scratch("keys");
    let secret = format!("sk-sandbox-secret-{}", std::process::id());
    let commands = [
        "env",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'",
        // fuseraft's pid is on the launcher's command line; read its environ from there.
        "p=$(tr '\\0' '\\n' < /proc/1/cmdline | grep -o '\"parent\":[0-9]*' | cut -d: -f2); echo \"fuseraft=$p\"; tr '\\0' '\\n' < /proc/$p/environ",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | sort -u",
        "python3 -c \"import os; print(dict(os.environ))\"",
    ];
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        // `LC_*` is allow-listed: a key variable named so must be withheld all the same.
        "      Model: { Provider: openai, ModelId: m, ApiKeyEnvVar: LC_FUSERAFT_KEY }\n",
        &commands.iter().map(|c| (*c, None)).collect::<Vec<_>>(),
    );
    let output = exec_command(&dir)
        .env("LC_FUSERAFT_KEY", &secret)
        .env("OPENAI_API_KEY", format!("{secret}-openai"))
        .env("MY_SERVICE_TOKEN", format!("{secret}-token"))
        .env("FUSERAFT_VISIBLE_MARKER", "not-a-secret")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    for command in commands {
        let (_, out) = results
            .get(command)
            .unwrap_or_else(|| panic!("`{command}` did not run: {results:?}"));
        assert!(!out.contains(&secret), "`{command}` read a key:\n{out}");
        assert!(
            !out.contains("FUSERAFT_VISIBLE_MARKER"),
            "not allow-listed:\n{out}"
        );
    }
    assert!(results["env"].0 && results["env"].1.contains("PATH="));
}
