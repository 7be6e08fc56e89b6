//! The Json tools on text and on files: upstream's answers for good input, a clear result
//! for bad JSON and bad arguments, files read only inside the sandbox and never a credential.

use serde_json::json;

use super::super::tests::Temp;
use crate::tools::ToolContext;

use crate::tools::testkit::answer as call;

const DOC: &str =
    r#"{"name": "cli", "items": [{"id": 1, "Name": "a"}, {"id": 2}], "meta": {"owner_name": "x"}}"#;

#[tokio::test]
async fn json_tools_answer_on_text() {
    let temp = Temp::new("json-text");
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();
    let doc = || json!({"json": DOC});
    assert_eq!(
        call(&ctx, "json_minify", doc()).await,
        (
            r#"{"name":"cli","items":[{"id":1,"Name":"a"},{"id":2}],"meta":{"owner_name":"x"}}"#
                .to_string(),
            true
        )
    );
    let (pretty, ok) = call(
        &ctx,
        "Json-json_format",
        json!({"json": "[1,{\"a\":null}]"}),
    )
    .await;
    assert!(ok);
    assert_eq!(pretty, "[\n  1,\n  {\n    \"a\": null\n  }\n]");
    assert_eq!(call(&ctx, "json_keys", doc()).await.0, "name, items, meta");
    assert_eq!(
        call(&ctx, "json_keys", json!({"json": "[1,2]"})).await.0,
        "[ARRAY] length=2"
    );
    assert_eq!(
        call(
            &ctx,
            "json_get",
            json!({"json": DOC, "path": "items[1].id"})
        )
        .await,
        ("2".to_string(), true)
    );
    assert_eq!(
        call(
            &ctx,
            "json_get",
            json!({"json": DOC, "path": "items.0.Name"})
        )
        .await
        .0,
        "\"a\""
    );
    let (missing, ok) = call(&ctx, "json_get", json!({"json": DOC, "path": "items.5"})).await;
    assert!(!ok && missing.starts_with("[PATH ERROR]"), "{missing}");
    assert_eq!(
        call(&ctx, "json_search", json!({"json": DOC, "keyName": "NAME"}))
            .await
            .0,
        "name = \"cli\"\nitems[0].Name = \"a\"\nmeta.owner_name = \"x\""
    );
    assert_eq!(
        call(
            &ctx,
            "json_to_text",
            json!({"json": r#"{"a": [1, 2], "b": {"c": null}}"#})
        )
        .await
        .0,
        "a:   [2 items]\n    [0] 1\n    [1] 2\nb:   c: (null)"
    );
    assert_eq!(
        call(&ctx, "json_validate", doc()).await,
        ("valid".to_string(), true)
    );
    let (invalid, ok) = call(&ctx, "json_validate", json!({"json": "{\"a\": }"})).await;
    assert!(
        !ok && invalid.starts_with("invalid: ") && invalid.contains("line 1"),
        "{invalid}"
    );
    assert_eq!(
        call(
            &ctx,
            "json_merge",
            json!({"baseJson": r#"{"a": 1, "b": 2}"#, "patchJson": r#"{"b": 3, "c": 4}"#})
        )
        .await
        .0,
        "{\n  \"a\": 1,\n  \"b\": 3,\n  \"c\": 4\n}"
    );
}

#[tokio::test]
async fn json_tools_turn_bad_input_into_results() {
    let temp = Temp::new("json-bad");
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();
    for (name, args, needle) in [
        ("json_format", json!({"json": "{"}), "[INVALID JSON]"),
        (
            "json_format",
            json!({}),
            "[ERROR] tool `json_format` needs the JSON text",
        ),
        (
            "json_format",
            json!({"json": "1", "file": "a.json"}),
            "not both",
        ),
        ("json_keys", json!({"json": 5}), "`json` must be a string"),
        ("json_get", json!({"json": "{}"}), "`path`"),
        (
            "json_search",
            json!({"json": "{}", "keyName": " "}),
            "must not be empty",
        ),
        (
            "json_to_text",
            json!({"json": "{}", "depth": -1}),
            "`depth`",
        ),
        (
            "json_merge",
            json!({"baseJson": "[1]", "patchJson": "{}"}),
            "not a JSON object",
        ),
        ("json_merge", json!({"baseJson": "{}"}), "`patchJson`"),
    ] {
        let (text, ok) = call(&ctx, name, args.clone()).await;
        assert!(!ok, "{name} {args}: {text}");
        assert!(
            text.contains(needle),
            "{name} {args}: `{needle}` not in {text}"
        );
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (text, ok) = call(&ctx, "json_format", json!({ "json": deep })).await;
    assert!(!ok && text.starts_with("[INVALID JSON]"), "{text}");
}

#[tokio::test]
async fn json_tools_read_files_only_inside_the_sandbox() {
    let temp = Temp::new("json-files");
    let outside = Temp::new("json-files-outside");
    temp.write("data/brief.json", r#"{"goal": "ship"}"#);
    temp.write(".env.json", r#"{"KEY": "secret"}"#);
    outside.write("secret.json", r#"{"KEY": "secret"}"#);
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();
    assert_eq!(
        call(
            &ctx,
            "json_get",
            json!({"file": "data/brief.json", "path": "goal"})
        )
        .await,
        ("\"ship\"".to_string(), true)
    );
    assert_eq!(
        call(
            &ctx,
            "json_merge",
            json!({"baseFile": "data/brief.json", "patchJson": "{\"x\": 1}"})
        )
        .await
        .0,
        "{\n  \"goal\": \"ship\",\n  \"x\": 1\n}"
    );
    let escape = format!(
        "../{}/secret.json",
        outside.0.file_name().unwrap().to_string_lossy()
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path("secret.json"), temp.path("link.json")).unwrap();
    for file in [escape.as_str(), "/etc/hostname", "link.json"] {
        let (text, ok) = call(&ctx, "json_keys", json!({ "file": file })).await;
        assert!(
            !ok && text.starts_with("[DENIED: sandbox]"),
            "{file}: {text}"
        );
        assert!(!text.contains("KEY"), "{text}");
    }
    let (text, ok) = call(&ctx, "json_keys", json!({"file": "missing.json"})).await;
    assert!(!ok && text.contains("does not exist"), "{text}");
    let (text, ok) = call(&ctx, "json_keys", json!({"file": "data"})).await;
    assert!(!ok && text.contains("not a regular file"), "{text}");
    let (text, ok) = call(&ctx, "json_keys", json!({"file": ".env.json"})).await;
    assert!(!ok && text.starts_with("[DENIED: credentials]"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}
