//! The text of an OOXML part: the runs (`w:t`, `a:t`) of each paragraph (`w:p`, `a:p`),
//! tabs and breaks kept as whitespace.

use quick_xml::events::Event;
use quick_xml::Reader;

/// The paragraphs of `xml`: for each `paragraph` element, the text of its `text` elements.
pub(super) fn paragraphs(xml: &[u8], paragraph: &[u8], text: &[u8]) -> Result<Vec<String>, String> {
    let mut reader = Reader::from_reader(xml);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_text = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(element)) if element.name().as_ref() == text => in_text = true,
            Ok(Event::End(element)) if element.name().as_ref() == text => in_text = false,
            Ok(Event::End(element)) if element.name().as_ref() == paragraph => {
                out.push(std::mem::take(&mut current));
            }
            Ok(Event::Empty(element)) => match element.name().as_ref() {
                b"w:tab" => current.push('\t'),
                b"w:br" | b"a:br" => current.push('\n'),
                _ => {}
            },
            Ok(Event::Text(content)) if in_text => {
                let decoded = content
                    .decode()
                    .map_err(|error| format!("the document's XML is malformed: {error}"))?;
                match quick_xml::escape::unescape(&decoded) {
                    Ok(text) => current.push_str(&text),
                    Err(_) => current.push_str(&decoded),
                }
            }
            Ok(Event::GeneralRef(reference)) if in_text => {
                let name = String::from_utf8_lossy(&reference);
                current.push_str(match name.as_ref() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    _ => "",
                });
            }
            Ok(Event::Eof) => break,
            Err(error) => return Err(format!("the document's XML is malformed: {error}")),
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}
