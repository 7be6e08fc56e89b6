//! The Document plugin (upstream's `document_extract_text`, `document_get_info`,
//! `document_list_sheets`, `document_get_sheet`): the text of a PDF, DOCX, PPTX or XLSX file
//! under the work dir, read through the path confinement with the credential rule as
//! `read_file` reads, and extracted by [`crate::document`]. Nothing is written.

use serde_json::json;

use super::sandbox::read_capped;
use super::{schema as function, string_prop, Args, Outcome, Tool, ToolContext};
use crate::document::{self, Format, MAX_BYTES, SUPPORTED};
use crate::effect::ToolSchema;

#[cfg(all(test, unix))]
#[path = "document_tests.rs"]
mod tests;

/// The function schema of one Document tool, with upstream's parameter names.
pub(crate) fn schema(tool: Tool) -> ToolSchema {
    let path = || string_prop("The document, relative to the work directory.");
    match tool {
        Tool::DocumentExtractText => function(
            tool.name(),
            "Extract the plain text of a document: PDF, DOCX, PPTX or XLSX.",
            json!({ "path": path() }),
            &["path"],
        ),
        Tool::DocumentGetInfo => function(
            tool.name(),
            "Format, size and text length of a document (PDF, DOCX, PPTX, XLSX); cheaper to read than its text.",
            json!({ "path": path() }),
            &["path"],
        ),
        Tool::DocumentListSheets => function(
            tool.name(),
            "List the sheet names of an Excel workbook (.xlsx).",
            json!({ "path": path() }),
            &["path"],
        ),
        Tool::DocumentGetSheet => function(
            tool.name(),
            "Read one sheet of an Excel workbook (.xlsx) as a `|`-separated table.",
            json!({
                "path": path(),
                "sheetName": string_prop("The sheet's name."),
                "maxRows": {"type": "integer", "description": "Optional: the most rows returned (0, the default: all)."},
            }),
            &["path", "sheetName"],
        ),
        other => function(other.name(), "", json!({}), &[]),
    }
}

/// Runs one Document tool.
pub(crate) fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    let outcome = match one(tool, args, ctx) {
        Ok(outcome) | Err(outcome) => outcome,
    };
    if outcome.text.len() > ctx.limits.output_cap {
        return Outcome {
            text: super::record::cap_text(&outcome.text, ctx.limits.output_cap),
            ok: outcome.ok,
            denied: outcome.denied,
        };
    }
    outcome
}

fn one(tool: Tool, args: &Args, ctx: &ToolContext) -> Result<Outcome, Outcome> {
    let name = tool.name();
    let raw = args.string("path")?;
    let format = Format::of(raw).ok_or_else(|| {
        Outcome::fail(format!(
            "{name}: `{raw}` is not a document fuseraft reads ({SUPPORTED})"
        ))
    })?;
    let sheets_only = matches!(tool, Tool::DocumentListSheets | Tool::DocumentGetSheet);
    if sheets_only && format != Format::Xlsx {
        return Err(Outcome::fail(format!(
            "{name} reads .xlsx workbooks only, not `{raw}`"
        )));
    }
    let bytes = read(name, raw, ctx)?;
    let failed = |why: String| Outcome::fail(format!("{name}: `{raw}`: {why}"));
    Ok(match tool {
        Tool::DocumentExtractText => {
            let extracted = document::extract(&bytes, format).map_err(failed)?;
            match extracted.text.trim().is_empty() {
                true => Outcome::ok(format!("[{}] no text found", extracted.info)),
                false => Outcome::ok(format!("[{}]\n\n{}", extracted.info, extracted.text)),
            }
        }
        Tool::DocumentGetInfo => {
            let extracted = document::extract(&bytes, format).map_err(failed)?;
            let chars = extracted.text.chars().count();
            Outcome::ok(format!(
                "{}\nFile size: {} bytes\nExtracted text: {chars} characters (~{} tokens)",
                extracted.info,
                bytes.len(),
                chars.div_ceil(4)
            ))
        }
        Tool::DocumentListSheets => {
            let sheets = document::list_sheets(&bytes).map_err(failed)?;
            let lines: Vec<String> = sheets
                .iter()
                .enumerate()
                .map(|(index, sheet)| format!("{}. {sheet}", index + 1))
                .collect();
            Outcome::ok(lines.join("\n"))
        }
        Tool::DocumentGetSheet => {
            let sheet = args.string("sheetName")?;
            let max_rows = args.opt_count("maxRows", 0, 0, usize::MAX)?;
            let (table, rows) = document::sheet(&bytes, sheet, max_rows).map_err(failed)?;
            let first = if max_rows > 0 && rows >= max_rows {
                format!(", the first {max_rows}")
            } else {
                String::new()
            };
            Outcome::ok(format!(
                "[Sheet `{sheet}`: {rows} row(s){first}]\n\n{table}"
            ))
        }
        _ => Outcome::error(format!("tool `{name}` is not a Document tool")),
    })
}

/// The bytes of a document under the sandbox root, read as `read_file` reads, at most
/// [`MAX_BYTES`].
fn read(name: &str, raw: &str, ctx: &ToolContext) -> Result<Vec<u8>, Outcome> {
    read_capped(name, raw, &ctx.work_dir, MAX_BYTES)
}
