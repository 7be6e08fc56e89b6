//! `fuseraft schema`: the JSON Schema of the config format (built by the compiler from the
//! key tables its readers use), for the YAML language server and CI validators.

use super::exit;

pub fn run() -> u8 {
    let schema = fuseraft_compiler::syntax::schema::json_schema();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    super::print_or_fail(&text).unwrap_or(exit::OK)
}
