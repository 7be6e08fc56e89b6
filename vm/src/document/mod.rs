//! Text out of office documents: PDF (pdf-extract), DOCX and PPTX (their XML, read from the
//! zip with quick-xml) and XLSX (calamine). Used by the Document tools and by `exec
//! --context-file`. Every function takes the document's bytes (read by the caller through
//! the path confinement) and never panics on a hostile file: a parser that does is caught
//! and its file reported as unreadable.

use std::io::{Cursor, Read};

mod xml;

/// The formats read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Pdf,
    Docx,
    Pptx,
    Xlsx,
}

/// The extensions read, as the tools' errors list them.
pub const SUPPORTED: &str = ".pdf, .docx, .pptx, .xlsx";

/// The largest document read.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The most bytes a document's unpacked XML parts may take.
const MAX_UNPACKED: u64 = 64 * 1024 * 1024;

impl Format {
    /// The format a file name's extension says (ASCII case-insensitive).
    pub fn of(name: &str) -> Option<Format> {
        let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match extension.as_str() {
            "pdf" => Some(Format::Pdf),
            "docx" => Some(Format::Docx),
            "pptx" => Some(Format::Pptx),
            "xlsx" => Some(Format::Xlsx),
            _ => None,
        }
    }
}

/// A document's text and a line about it (`PDF document, 3 pages`).
#[derive(Debug, PartialEq)]
pub struct Extracted {
    pub text: String,
    pub info: String,
}

/// The text of a document in `format`.
pub fn extract(bytes: &[u8], format: Format) -> Result<Extracted, String> {
    guarded(|| match format {
        Format::Pdf => pdf(bytes),
        Format::Docx => {
            let xml = part(bytes, "word/document.xml")?;
            let paragraphs = xml::paragraphs(&xml, b"w:p", b"w:t")?;
            Ok(Extracted {
                info: format!("Word document, {} paragraph(s)", paragraphs.len()),
                text: paragraphs.join("\n"),
            })
        }
        Format::Pptx => pptx(bytes),
        Format::Xlsx => {
            let sheets = list_sheets(bytes)?;
            let mut text = String::new();
            for name in &sheets {
                let (table, _) = sheet(bytes, name, 0)?;
                text.push_str(&format!("## {name}\n{table}\n"));
            }
            Ok(Extracted {
                info: format!("Excel workbook, {} sheet(s)", sheets.len()),
                text: text.trim_end().to_string(),
            })
        }
    })
}

/// The sheet names of an XLSX workbook, in order.
pub fn list_sheets(bytes: &[u8]) -> Result<Vec<String>, String> {
    guarded(|| {
        let workbook = workbook(bytes)?;
        Ok(calamine::Reader::sheet_names(&workbook))
    })
}

/// Sheet `name` of an XLSX workbook as a `|`-separated table, its first `max_rows` rows (all
/// when 0), and how many rows that is.
pub fn sheet(bytes: &[u8], name: &str, max_rows: usize) -> Result<(String, usize), String> {
    guarded(|| {
        let mut workbook = workbook(bytes)?;
        let names = calamine::Reader::sheet_names(&workbook);
        if !names.iter().any(|sheet| sheet == name) {
            return Err(format!(
                "no sheet `{name}`; the workbook has {}",
                names
                    .iter()
                    .map(|sheet| format!("`{sheet}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let range = calamine::Reader::worksheet_range(&mut workbook, name)
            .map_err(|error| format!("cannot read sheet `{name}`: {error}"))?;
        let limit = if max_rows == 0 { usize::MAX } else { max_rows };
        let rows: Vec<String> = range
            .rows()
            .take(limit)
            .map(|row| {
                row.iter()
                    .map(|cell| cell.to_string().replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect();
        Ok((rows.join("\n"), rows.len()))
    })
}

/// `run`, with a parser's panic turned into an error: a hostile file must not end the run.
fn guarded<T>(run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|_| Err("the document is damaged or not what its name says".to_string()))
}

fn workbook(bytes: &[u8]) -> Result<calamine::Xlsx<Cursor<&[u8]>>, String> {
    <calamine::Xlsx<_> as calamine::Reader<_>>::new(Cursor::new(bytes))
        .map_err(|error| format!("not a readable XLSX workbook: {error}"))
}

fn pdf(bytes: &[u8]) -> Result<Extracted, String> {
    let text = pdf_extract::extract_text_from_mem(bytes)
        .map_err(|error| format!("not a readable PDF: {error}"))?;
    let pages = text.matches('\u{c}').count().max(1);
    Ok(Extracted {
        info: format!("PDF document, {pages} page(s)"),
        text: text.replace('\u{c}', "\n").trim().to_string(),
    })
}

fn pptx(bytes: &[u8]) -> Result<Extracted, String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|error| format!("not a readable PPTX file: {error}"))?;
    let mut slides: Vec<(u32, String)> = archive
        .file_names()
        .filter_map(|name| {
            let number = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse()
                .ok()?;
            Some((number, name.to_string()))
        })
        .collect();
    slides.sort();
    let mut text = String::new();
    for (number, name) in &slides {
        let xml = read_part(&mut archive, name)?;
        let paragraphs = xml::paragraphs(&xml, b"a:p", b"a:t")?;
        text.push_str(&format!(
            "--- Slide {number} ---\n{}\n",
            paragraphs.join("\n")
        ));
    }
    Ok(Extracted {
        info: format!("PowerPoint presentation, {} slide(s)", slides.len()),
        text: text.trim_end().to_string(),
    })
}

/// The bytes of the zip entry `name` of an OOXML document.
fn part(bytes: &[u8], name: &str) -> Result<Vec<u8>, String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|error| format!("not a readable Office document: {error}"))?;
    read_part(&mut archive, name)
}

fn read_part(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str) -> Result<Vec<u8>, String> {
    let entry = archive
        .by_name(name)
        .map_err(|_| format!("not a readable Office document: it has no `{name}`"))?;
    let mut xml = Vec::new();
    // A zip bomb stops at the cap.
    entry
        .take(MAX_UNPACKED + 1)
        .read_to_end(&mut xml)
        .map_err(|error| format!("cannot unpack `{name}`: {error}"))?;
    if xml.len() as u64 > MAX_UNPACKED {
        return Err(format!(
            "`{name}` unpacks to more than {MAX_UNPACKED} bytes"
        ));
    }
    Ok(xml)
}

#[cfg(test)]
#[path = "tests.rs"]
pub(crate) mod tests;
