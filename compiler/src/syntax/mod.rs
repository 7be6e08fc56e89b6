//! Syntax layer: config text (YAML, JSON) to a span-keeping [`Node`] tree.

pub mod json;
pub mod node;
pub mod yaml;

pub use json::parse as parse_json;
pub use node::{Budget, Node, NodeKind};
pub use yaml::parse as parse_yaml;

pub mod config_paths;
pub mod fields;
pub mod fuseraft;
pub mod key_effects;
pub mod load;
pub mod mcp;
pub mod model_limits;
pub mod schema;
mod schema_required;
mod schema_values;
pub mod selection;
pub mod tama;
pub mod tama_skill;

pub use load::Loader;
