//! `fuseraft audit verify|show ID`: a session's audit chain (`crate::audit`), checked record
//! by record, and printed one record a line.

use std::io::Read;
use std::path::PathBuf;

use fuseraft_vm::state_dir::Access;

use super::exit;
use crate::cli::{AuditAction, AuditArgs};
use crate::session::{self, Key};

pub fn run(args: &AuditArgs) -> u8 {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let (id, show) = match &args.action {
        AuditAction::Verify { id } => (id, false),
        AuditAction::Show { id } => (id, true),
    };
    if !session::valid_id(id) {
        return fail(&session::invalid_id(id));
    }
    let key = match Key::load_or_create() {
        Ok(key) => key,
        Err(problem) => return fail(&format!("cannot check the audit log: {problem}")),
    };
    let name = crate::audit::file_name(id);
    let mut bytes = Vec::new();
    let read = session::existing_dir(&work_dir)
        .map_err(|error| error.message)
        .and_then(|dir| dir.ok_or_else(|| "no session directory".to_string()))
        .and_then(|dir| {
            dir.open_file(&name, Access::Read)
                .and_then(|mut file| file.read_to_end(&mut bytes))
                .map_err(|error| error.to_string())
        });
    if let Err(why) = read {
        return fail(&format!(
            "no audit log of session `{id}` in `{}` ({why})",
            work_dir.join(session::DIR).display()
        ));
    }
    match crate::audit::verify_bytes(&bytes, id, &key) {
        Ok(records) => {
            if show {
                let text: String = records
                    .iter()
                    .map(|record| crate::audit::render(record) + "\n")
                    .collect();
                if let Some(code) = super::print_or_fail(&text) {
                    return code;
                }
            }
            eprintln!(
                "the audit chain of session `{id}` holds: {} record(s) verify",
                records.len()
            );
            exit::OK
        }
        Err(broken) => {
            eprintln!("error: the audit chain of session `{id}` {broken}");
            exit::FINDINGS
        }
    }
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}
