//! Real documents, made here with the libraries that write them (lopdf, rust_xlsxwriter, a
//! zip of OOXML parts), read back as text; and damaged ones refused with a reason.

use std::io::Write;

use super::*;

/// A one-page PDF whose page says `text`, written with lopdf.
pub(crate) fn pdf_with(text: &str) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{dictionary, Document, Object, Stream};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 720.into()]),
            Operation::new("Tj", vec![Object::string_literal(text)]),
            Operation::new("ET", vec![]),
        ],
    };
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// An OOXML package holding `parts` (name, XML), with its content types.
fn package(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default();
        zip.start_file("[Content_Types].xml", options).unwrap();
        zip.write_all(br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#)
            .unwrap();
        for (name, xml) in parts {
            zip.start_file(*name, options).unwrap();
            zip.write_all(xml.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }
    out.into_inner()
}

/// A DOCX whose body has `paragraphs` (each one run).
pub(crate) fn docx_with(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|text| format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"))
        .collect();
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    package(&[("word/document.xml", &xml)])
}

/// An XLSX with sheets `Q1` (a header and two rows) and `Notes`, written with
/// rust_xlsxwriter.
pub(crate) fn xlsx() -> Vec<u8> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let q1 = workbook.add_worksheet();
    q1.set_name("Q1").unwrap();
    q1.write_string(0, 0, "Item").unwrap();
    q1.write_string(0, 1, "Count").unwrap();
    q1.write_string(1, 0, "bolts").unwrap();
    q1.write_number(1, 1, 40.0).unwrap();
    q1.write_string(2, 0, "nuts").unwrap();
    q1.write_number(2, 1, 7.0).unwrap();
    let notes = workbook.add_worksheet();
    notes.set_name("Notes").unwrap();
    notes.write_string(0, 0, "ship by Friday").unwrap();
    workbook.save_to_buffer().unwrap()
}

#[test]
fn each_format_reads_as_text() {
    let pdf = extract(&pdf_with("Quarterly totals are up."), Format::Pdf).unwrap();
    assert!(pdf.text.contains("Quarterly totals are up."), "{pdf:?}");
    assert_eq!(pdf.info, "PDF document, 1 page(s)");

    let docx = extract(
        &docx_with(&["First &amp; foremost.", "Second."]),
        Format::Docx,
    )
    .unwrap();
    assert_eq!(docx.text, "First & foremost.\nSecond.");
    assert_eq!(docx.info, "Word document, 2 paragraph(s)");

    let slide =
        r#"<p:sld xmlns:a="a" xmlns:p="p"><a:p><a:r><a:t>Roadmap</a:t></a:r></a:p></p:sld>"#;
    let pptx = extract(&package(&[("ppt/slides/slide1.xml", slide)]), Format::Pptx).unwrap();
    assert_eq!(pptx.text, "--- Slide 1 ---\nRoadmap");

    let xlsx = extract(&xlsx(), Format::Xlsx).unwrap();
    assert_eq!(xlsx.info, "Excel workbook, 2 sheet(s)");
    assert!(
        xlsx.text
            .contains("## Q1\nItem | Count\nbolts | 40\nnuts | 7"),
        "{xlsx:?}"
    );
    assert!(xlsx.text.contains("## Notes\nship by Friday"), "{xlsx:?}");
}

#[test]
fn sheets_are_listed_and_read_by_name_and_row_count() {
    let bytes = xlsx();
    assert_eq!(list_sheets(&bytes).unwrap(), ["Q1", "Notes"]);
    assert_eq!(
        sheet(&bytes, "Q1", 2).unwrap(),
        ("Item | Count\nbolts | 40".to_string(), 2)
    );
    let missing = sheet(&bytes, "Q2", 0).unwrap_err();
    assert_eq!(missing, "no sheet `Q2`; the workbook has `Q1`, `Notes`");
}

#[test]
fn damaged_or_mislabelled_documents_are_refused_with_a_reason() {
    for format in [Format::Pdf, Format::Docx, Format::Pptx, Format::Xlsx] {
        let error = extract(b"not a document at all", format).unwrap_err();
        assert!(error.starts_with("not a readable"), "{format:?}: {error}");
    }
    // A PDF cut in half.
    let whole = pdf_with("Half a file.");
    assert!(extract(&whole[..whole.len() / 2], Format::Pdf).is_err());
    assert_eq!(Format::of("report.PDF"), Some(Format::Pdf));
    assert_eq!(Format::of("notes.txt"), None);
}
