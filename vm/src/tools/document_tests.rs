//! The Document tools on real files in a work dir: each format's text, a workbook's sheets,
//! and refusals: a file outside the work dir, a credential file, a format not read, a
//! damaged document.

use serde_json::json;

use super::super::tests::{answer as call, Temp};
use crate::document::tests::{docx_with, pdf_with, xlsx};
use crate::tools::ToolContext;

#[tokio::test]
async fn documents_read_as_text_and_workbooks_by_sheet() {
    let temp = Temp::new("documents");
    std::fs::create_dir_all(temp.0.join("docs")).unwrap();
    std::fs::write(
        temp.0.join("docs/report.pdf"),
        pdf_with("Revenue grew by a tenth."),
    )
    .unwrap();
    std::fs::write(
        temp.0.join("docs/plan.docx"),
        docx_with(&["Goal: ship.", "Owner: Ana."]),
    )
    .unwrap();
    std::fs::write(temp.0.join("docs/stock.xlsx"), xlsx()).unwrap();
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();

    let (text, ok) = call(
        &ctx,
        "document_extract_text",
        json!({"path": "docs/report.pdf"}),
    )
    .await;
    assert!(
        ok && text.starts_with("[PDF document, 1 page(s)]\n\n"),
        "{text}"
    );
    assert!(text.contains("Revenue grew by a tenth."), "{text}");
    let (text, ok) = call(
        &ctx,
        "document_extract_text",
        json!({"path": "docs/plan.docx"}),
    )
    .await;
    assert_eq!(
        (text.as_str(), ok),
        (
            "[Word document, 2 paragraph(s)]\n\nGoal: ship.\nOwner: Ana.",
            true
        )
    );
    let (info, ok) = call(&ctx, "document_get_info", json!({"path": "docs/plan.docx"})).await;
    assert!(
        ok && info.contains("Extracted text: 23 characters"),
        "{info}"
    );
    let (sheets, ok) = call(
        &ctx,
        "document_list_sheets",
        json!({"path": "docs/stock.xlsx"}),
    )
    .await;
    assert_eq!((sheets.as_str(), ok), ("1. Q1\n2. Notes", true));
    let (sheet, ok) = call(
        &ctx,
        "document_get_sheet",
        json!({"path": "docs/stock.xlsx", "sheetName": "Q1", "maxRows": 2}),
    )
    .await;
    assert_eq!(
        (sheet.as_str(), ok),
        (
            "[Sheet `Q1`: 2 row(s), the first 2]\n\nItem | Count\nbolts | 40",
            true
        )
    );
}

#[tokio::test]
async fn documents_outside_the_rules_are_refused() {
    let temp = Temp::new("documents-refused");
    std::fs::write(temp.0.join("notes.txt"), "plain").unwrap();
    std::fs::write(temp.0.join("fake.pdf"), "not a pdf").unwrap();
    std::fs::write(temp.0.join("plan.docx"), docx_with(&["x"])).unwrap();
    let ctx = ToolContext::new(&temp.0, "s", "A", 0).unwrap();
    let refused = [
        (json!({"path": "../outside.pdf"}), "document_extract_text"),
        (json!({"path": "/etc/passwd.pdf"}), "document_extract_text"),
        (json!({"path": "notes.txt"}), "document_extract_text"),
        (json!({"path": "fake.pdf"}), "document_extract_text"),
        (json!({"path": "plan.docx"}), "document_list_sheets"),
        (
            json!({"path": "plan.docx", "sheetName": "Q1"}),
            "document_get_sheet",
        ),
    ];
    for (args, tool) in refused {
        let (text, ok) = call(&ctx, tool, args.clone()).await;
        assert!(!ok, "{tool} {args}: {text}");
        assert!(!text.is_empty(), "{tool} {args}: says why");
    }
    let (text, _) = call(&ctx, "document_extract_text", json!({"path": "notes.txt"})).await;
    assert!(
        text.contains("not a document fuseraft reads (.pdf, .docx, .pptx, .xlsx)"),
        "{text}"
    );
    let (text, _) = call(&ctx, "document_extract_text", json!({"path": "fake.pdf"})).await;
    assert!(text.contains("not a readable PDF"), "{text}");
}
