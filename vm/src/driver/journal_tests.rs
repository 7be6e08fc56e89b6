//! The journal's one rule as the tool runner applies it in a served run, against a journal
//! that answers as a retried turn's would: a call that only reads is asked again; a file
//! tool's call, interrupted, is known made or not by its own record and leaves one result;
//! any other call that acts, interrupted, is not made again and says so.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use serde_json::json;

use super::tool_calls::execute_kept;
use super::Models;
use crate::effect::{ModelCall, ModelReply};
use crate::history::ToolCall;
use crate::journal::{Journal, Recalled, Repeat, INTERRUPTED};
use crate::tools::{Tool, ToolContext};

/// What the journal answers for the next effect.
enum Next {
    Make,
    Interrupted,
}

/// A journal that answers from a script and remembers how each effect was asked.
struct Scripted {
    next: Mutex<VecDeque<Next>>,
    asked: Mutex<Vec<Repeat>>,
}

impl Journal for Scripted {
    fn recall(
        &self,
        _effect: &'static str,
        repeat: Repeat,
    ) -> Pin<Box<dyn Future<Output = Recalled> + Send + '_>> {
        self.asked.lock().unwrap().push(repeat);
        let next = self.next.lock().unwrap().pop_front();
        Box::pin(async move {
            match next {
                Some(Next::Interrupted) => Recalled::Interrupted,
                _ => Recalled::Make(Box::new(|_| {})),
            }
        })
    }
}

struct Served(Scripted);

impl Models for Served {
    async fn call(&self, _call: &ModelCall) -> Result<ModelReply, String> {
        Err("no model in this test".to_string())
    }

    fn journal(&self) -> Option<&dyn Journal> {
        Some(&self.0)
    }
}

fn served(script: Vec<Next>) -> Served {
    Served(Scripted {
        next: Mutex::new(script.into()),
        asked: Mutex::new(Vec::new()),
    })
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        args,
        result: None,
        ok: false,
        denied: None,
    }
}

/// `call` run by the tool runner against `models`.
async fn run(models: &Served, mut call: ToolCall, ctx: &ToolContext) -> ToolCall {
    let tool = Tool::resolve(&call.name).expect("a built-in tool");
    execute_kept(models, &mut call, tool, ctx).await;
    call
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-journal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_file_tools_interrupted_call_leaves_one_result_and_a_command_is_not_run_again() {
    let work = scratch("rule");
    let ctx = ToolContext::new(&work, "s1", "Dev", 3).unwrap();
    let write = |id: &str| {
        call(
            id,
            "write_file",
            json!({"path": "notes.md", "content": "first"}),
        )
    };
    // Made, and recorded: a retry that finds it interrupted gives the same outcome and does
    // not write again (the file changed since stays as it is).
    let models = served(vec![Next::Make, Next::Interrupted]);
    let made = run(&models, write("call_1"), &ctx).await;
    assert!(made.ok, "{made:?}");
    std::fs::write(work.join("notes.md"), "changed since").unwrap();
    let again = run(&models, write("call_1"), &ctx).await;
    assert_eq!((again.ok, &again.result), (made.ok, &made.result));
    assert_eq!(
        std::fs::read_to_string(work.join("notes.md")).unwrap(),
        "changed since"
    );
    // Interrupted before it was made (no record): made now, once.
    let models = served(vec![Next::Interrupted, Next::Interrupted]);
    let first = run(
        &models,
        call("call_2", "delete_file", json!({"path": "notes.md"})),
        &ctx,
    )
    .await;
    assert!(first.ok, "{first:?}");
    assert!(!work.join("notes.md").exists());
    let second = run(
        &models,
        call("call_2", "delete_file", json!({"path": "notes.md"})),
        &ctx,
    )
    .await;
    assert_eq!((second.ok, &second.result), (first.ok, &first.result));
    // A command, interrupted: not run again, and the model is told.
    let models = served(vec![Next::Interrupted]);
    let command = json!({"command": "echo ran > ran.txt"});
    let shell = run(&models, call("call_3", "shell_run", command), &ctx).await;
    assert_eq!(
        (shell.ok, shell.result.as_deref()),
        (false, Some(INTERRUPTED))
    );
    assert!(!work.join("ran.txt").exists());
    // A read is asked again; every call that acts, at most once.
    let models = served(vec![Next::Interrupted]);
    std::fs::write(work.join("a.txt"), "text").unwrap();
    let read = run(
        &models,
        call("call_4", "read_file", json!({"path": "a.txt"})),
        &ctx,
    )
    .await;
    assert!(read.ok, "{read:?}");
    assert_eq!(*models.0.asked.lock().unwrap(), [Repeat::Safe]);
    let _ = std::fs::remove_dir_all(&work);
}
