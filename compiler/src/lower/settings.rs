//! The written settings typed into the program's sections ([`crate::ir::Program::settle_settings`]),
//! each value its key cannot take an error (`FR004`) at that value.

use super::Builder;
use crate::diagnostic::{Code, Diagnostic};
use crate::syntax::fuseraft::Config;

pub(super) fn settle(config: &Config, builder: &mut Builder<'_>) {
    for bad in builder.program.settle_settings() {
        let Some((_, value)) = config.settings.iter().find(|(key, _)| *key == bad.key) else {
            continue;
        };
        builder.diags.push(
            Diagnostic::error(Code::InvalidValue, bad.message)
                .with_label(value.span, format!("not {}", bad.expected)),
        );
    }
}
