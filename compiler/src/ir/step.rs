//! tama pattern steps: what a step of a pattern is given, and the key its reply routes on.
//!
//! A tama pattern (`critic`, `reflexion`, `plan-execute`, …) lowers to a few states, one per
//! step file. A step reads a [`Template`] composed from the inputs and values of earlier
//! steps (the VM keeps each step's newest input and value), and returns a key by its
//! [`StepKey`]. The text form of a template is one string: `{input:S}` and `{value:S}` name
//! states (`|` between names means the newest of them), `{item}` is a fork run's item,
//! `{earlier}` what the earlier runs of a sequential fork returned, `{operator}` the line the
//! operator answers (tama `human`); `{{` and `}}` are literal braces.

use super::StateId;

/// A tama skill (`skills/<name>/SKILL.md`): listed in the prompts of the agents that use it,
/// its body what `read_skill` returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub body: String,
}

/// How a tama state is given its input and what key its reply returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// What the step is given; `None`: the value routed to it.
    pub input: Option<Template>,
    pub key: StepKey,
    /// A `react` step: a tool loop offered `finish` (else one call, no tools).
    pub react: bool,
}

/// The key a step's reply routes on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StepKey {
    /// The key of its `finish` call, `done` without one (a `react` loop).
    #[default]
    Finish,
    /// This key whatever it replies (`oneshot`: `result`; a oneshot step file, and the last
    /// step of a pattern that returns `done`: `done`).
    Fixed(String),
    /// A oneshot verdict (`reflexion`'s reflect, `plan-execute`'s verify): `done` when the
    /// reply starts with `DONE` in any case, else `continue`.
    Verdict,
}

impl StepKey {
    /// The key a reply of this step routes on: `finish_key` is the key of its `finish`
    /// call, if any (lowercased), and `text` its text.
    pub fn key_of(&self, finish_key: Option<&str>, text: &str) -> String {
        match self {
            StepKey::Finish => finish_key.unwrap_or("done").to_string(),
            StepKey::Fixed(key) => key.clone(),
            StepKey::Verdict => {
                let starts_done = text
                    .trim_start()
                    .get(..4)
                    .is_some_and(|head| head.eq_ignore_ascii_case("done"));
                if finish_key == Some("done") || starts_done {
                    "done".to_string()
                } else {
                    "continue".to_string()
                }
            }
        }
    }
}

/// Text with the inputs and values of earlier steps filled in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template(pub Vec<Part>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// What the newest-run of these states was given.
    Input(Vec<StateId>),
    /// The value the newest-run of these states returned.
    Value(Vec<StateId>),
    /// The item a fork's branch run is given (`per_item`, `per_line`).
    Item,
    /// What the earlier runs of a `sequential` fork returned, headed by their items.
    Earlier,
    /// A line the operator is asked for when the step starts, shown the value routed to it.
    Operator,
}

impl Part {
    /// The placeholders without a state, by their text form.
    const BARE: [(&'static str, Part); 3] = [
        ("item", Part::Item),
        ("earlier", Part::Earlier),
        ("operator", Part::Operator),
    ];
}

/// Why a template's text form does not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl Template {
    /// A template of `parts`, adjacent texts joined and empty ones dropped (the form its
    /// text reads back as).
    pub fn new(parts: Vec<Part>) -> Template {
        let mut joined: Vec<Part> = Vec::new();
        for part in parts {
            match (joined.last_mut(), part) {
                (_, Part::Text(text)) if text.is_empty() => {}
                (Some(Part::Text(last)), Part::Text(text)) => last.push_str(&text),
                (_, part) => joined.push(part),
            }
        }
        Template(joined)
    }

    /// The template's text form, states named by `name` (a backslash, `|`, `{` and `}` in a
    /// name escaped with a backslash).
    pub fn to_text(&self, name: impl Fn(StateId) -> String) -> String {
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Text(text) => out.push_str(&text.replace('{', "{{").replace('}', "}}")),
                Part::Input(ids) | Part::Value(ids) => {
                    out.push_str(if matches!(part, Part::Input(_)) {
                        "{input:"
                    } else {
                        "{value:"
                    });
                    for (idx, id) in ids.iter().enumerate() {
                        if idx > 0 {
                            out.push('|');
                        }
                        for ch in name(*id).chars() {
                            if matches!(ch, '\\' | '|' | '{' | '}') {
                                out.push('\\');
                            }
                            out.push(ch);
                        }
                    }
                    out.push('}');
                }
                bare => {
                    if let Some((name, _)) = Part::BARE.iter().find(|(_, part)| part == bare) {
                        out.push_str(&format!("{{{name}}}"));
                    }
                }
            }
        }
        out
    }

    /// Reads the text form, states found by `lookup`.
    pub fn parse(
        text: &str,
        lookup: impl Fn(&str) -> Option<StateId>,
    ) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(ch) = chars.next() {
            match ch {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err(TemplateError("a lone `}` (write `}}`)".into())),
                '{' => {
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(placeholder(&mut chars, &lookup)?);
                }
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template(parts))
    }
}

/// A placeholder after its `{`, through its `}`.
fn placeholder(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    lookup: &impl Fn(&str) -> Option<StateId>,
) -> Result<Part, TemplateError> {
    let mut kind = String::new();
    loop {
        match chars.next() {
            Some('}') => {
                return Part::BARE
                    .iter()
                    .find(|(name, _)| *name == kind)
                    .map(|(_, part)| part.clone())
                    .ok_or_else(|| TemplateError(format!("`{{{kind}}}` is not a placeholder")));
            }
            Some(':') => break,
            Some(ch) => kind.push(ch),
            None => return Err(TemplateError("a `{` that is never closed".into())),
        }
    }
    let mut ids = Vec::new();
    let mut name = String::new();
    loop {
        match chars.next() {
            Some('\\') => match chars.next() {
                Some(ch) => name.push(ch),
                None => return Err(TemplateError("a `{` that is never closed".into())),
            },
            Some(end @ ('|' | '}')) => {
                let id =
                    lookup(&name).ok_or_else(|| TemplateError(format!("no state `{name}`")))?;
                ids.push(id);
                name.clear();
                if end == '}' {
                    break;
                }
            }
            Some(ch) => name.push(ch),
            None => return Err(TemplateError("a `{` that is never closed".into())),
        }
    }
    match kind.as_str() {
        "input" => Ok(Part::Input(ids)),
        "value" => Ok(Part::Value(ids)),
        other => Err(TemplateError(format!(
            "`{other}` is neither `input` nor `value`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_reads_back_what_it_prints() {
        let names = ["w/draft", "w/critique"];
        let template = Template(vec![
            Part::Text("Original task {x}:\n".into()),
            Part::Input(vec![StateId(0)]),
            Part::Text("\n\nCritique:\n".into()),
            Part::Value(vec![StateId(0), StateId(1)]),
            Part::Text("\n".into()),
            Part::Item,
            Part::Earlier,
            Part::Operator,
        ]);
        let text = template.to_text(|id| names[id.0 as usize].to_string());
        assert_eq!(
            text,
            "Original task {{x}}:\n{input:w/draft}\n\nCritique:\n{value:w/draft|w/critique}\n{item}{earlier}{operator}"
        );
        let back = Template::parse(&text, |name| {
            names
                .iter()
                .position(|n| *n == name)
                .map(|i| StateId(i as u32))
        });
        assert_eq!(back, Ok(template));
        assert!(Template::parse("{value:nope}", |_| None).is_err());
        let odd = Template(vec![Part::Value(vec![StateId(0)])]);
        let text = odd.to_text(|_| "a|b}{c\\".to_string());
        let back = Template::parse(&text, |name| (name == "a|b}{c\\").then_some(StateId(0)));
        assert_eq!(back, Ok(odd), "{text}");
        assert!(Template::parse("a } b", |_| None).is_err());
    }

    #[test]
    fn a_verdict_is_done_only_when_the_reply_says_so_first() {
        let verdict = StepKey::Verdict;
        assert_eq!(verdict.key_of(None, "  Done. All good"), "done");
        assert_eq!(verdict.key_of(None, "Not done yet"), "continue");
        assert_eq!(verdict.key_of(Some("done"), ""), "done");
        assert_eq!(
            StepKey::Fixed("result".into()).key_of(Some("x"), ""),
            "result"
        );
        assert_eq!(StepKey::Finish.key_of(None, "text"), "done");
    }
}
