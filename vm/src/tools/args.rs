//! A tool call's arguments as the tools read them: a JSON object (also a JSON string holding
//! one, or `null`), typed accessors that turn a wrong type or value into an `[ERROR]` result
//! naming the argument, and upstream's camelCase names accepted in snake_case too.

use serde_json::{Map, Value as Json};

use super::Outcome;

/// A tool's arguments: a JSON object (a JSON string holding an object and `null` are
/// accepted too, as some providers send them).
pub(crate) struct Args {
    pub(crate) tool: &'static str,
    map: Map<String, Json>,
}

impl Args {
    pub(crate) fn new(tool: &'static str, args: &Json) -> Result<Args, Outcome> {
        let parsed;
        let value = match args {
            Json::String(text) if text.trim().is_empty() => &Json::Null,
            Json::String(text) => {
                parsed = serde_json::from_str::<Json>(text).map_err(|_| {
                    Outcome::error(format!(
                        "tool `{tool}` needs its arguments as a JSON object"
                    ))
                })?;
                &parsed
            }
            other => other,
        };
        match value {
            Json::Null => Ok(Args {
                tool,
                map: Map::new(),
            }),
            Json::Object(map) => Ok(Args {
                tool,
                map: map.clone(),
            }),
            _ => Err(Outcome::error(format!(
                "tool `{tool}` needs its arguments as a JSON object"
            ))),
        }
    }

    pub(crate) fn value(&self, key: &str) -> Option<&Json> {
        self.map.get(key).filter(|value| !value.is_null())
    }

    /// A required string argument.
    pub(crate) fn string(&self, key: &str) -> Result<&str, Outcome> {
        match self.value(key) {
            Some(Json::String(text)) => Ok(text),
            _ => Err(Outcome::error(format!(
                "tool `{}` needs a string argument `{key}`",
                self.tool
            ))),
        }
    }

    /// An optional string argument (absent or `null` is `None`, another type an error).
    pub(crate) fn opt_string(&self, key: &str) -> Result<Option<&str>, Outcome> {
        match self.value(key) {
            None => Ok(None),
            Some(Json::String(text)) => Ok(Some(text)),
            Some(_) => Err(Outcome::error(format!(
                "tool `{}`: argument `{key}` must be a string",
                self.tool
            ))),
        }
    }

    /// An argument by its upstream (camelCase) name, or spelled in snake_case
    /// (`maxResults`, `max_results`).
    fn either(&self, key: &str) -> Option<&Json> {
        self.value(key).or_else(|| {
            let mut snake = String::new();
            for ch in key.chars() {
                if ch.is_ascii_uppercase() {
                    snake.push('_');
                }
                snake.push(ch.to_ascii_lowercase());
            }
            self.value(&snake)
        })
    }

    /// An optional string argument by [`Args::either`] name.
    pub(crate) fn opt_text(&self, key: &str) -> Result<Option<&str>, Outcome> {
        match self.either(key) {
            None => Ok(None),
            Some(Json::String(text)) => Ok(Some(text)),
            Some(_) => Err(Outcome::error(format!(
                "tool `{}`: argument `{key}` must be a string",
                self.tool
            ))),
        }
    }

    /// An optional whole number (a JSON number or a numeric string) by [`Args::either`]
    /// name, at least `min`; `default` when absent, at most `max` (larger is clamped).
    pub(crate) fn opt_count(
        &self,
        key: &str,
        default: usize,
        min: usize,
        max: usize,
    ) -> Result<usize, Outcome> {
        let number = match self.either(key) {
            None => return Ok(default.min(max)),
            Some(Json::Number(number)) => number.as_u64(),
            Some(Json::String(text)) => text.trim().parse::<u64>().ok(),
            Some(_) => None,
        };
        match number {
            Some(number) if number >= min as u64 => {
                Ok(usize::try_from(number).unwrap_or(usize::MAX).min(max))
            }
            _ => Err(Outcome::error(format!(
                "tool `{}`: argument `{key}` must be a whole number of at least {min}",
                self.tool
            ))),
        }
    }

    /// An optional boolean (`true`/`false`, also as a string) by [`Args::either`] name.
    pub(crate) fn opt_flag(&self, key: &str, default: bool) -> Result<bool, Outcome> {
        match self.either(key) {
            None => Ok(default),
            Some(Json::Bool(flag)) => Ok(*flag),
            Some(Json::String(text)) if text.trim().eq_ignore_ascii_case("true") => Ok(true),
            Some(Json::String(text)) if text.trim().eq_ignore_ascii_case("false") => Ok(false),
            Some(_) => Err(Outcome::error(format!(
                "tool `{}`: argument `{key}` must be true or false",
                self.tool
            ))),
        }
    }

    /// An optional number of seconds (a JSON number or a numeric string).
    pub(crate) fn opt_seconds(&self, key: &str) -> Result<Option<f64>, Outcome> {
        let seconds = match self.value(key) {
            None => return Ok(None),
            Some(Json::Number(number)) => number.as_f64(),
            Some(Json::String(text)) => text.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match seconds {
            Some(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(Some(seconds)),
            _ => Err(Outcome::error(format!(
                "tool `{}`: argument `{key}` must be a positive number of seconds",
                self.tool
            ))),
        }
    }
}
