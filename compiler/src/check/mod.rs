//! Stage 3: static checks over a compiled workflow (`fuseraft check`).
//!
//! ```text
//!  Compiled { diagnostics, program or partial program, typed syntax, sources }
//!     │
//!     ├─ config rules   the typed syntax alone: bounds, regexes, contracts, validators
//!     ├─ route rules    each state's exits in order, with the real matchers (shadowing,
//!     │                 duplicates, unmatchable keywords); exits that can never fire are
//!     │                 recorded as dead, with the finding that explains why
//!     ├─ graph rules    reachability and liveness (`flow`) over live exits only; a
//!     │                 consequence is attached to its cause as `related`
//!     └─ suppress       `# fuseraft: allow(CODE) reason` comments
//!  ▼
//!  Findings { diagnostics, suppressed }
//! ```
//!
//! Pure like the rest of the compiler: no IO. One module per rule under `rules/`, each
//! opening with its documentation; `docs/diagnostics.md` and `--explain` are built from
//! those headers ([`all_docs`], [`explain`]).

mod context;
mod flow;
pub mod matcher;
mod paths;
pub(crate) mod rules;
mod suppress;

pub use paths::{paths, PathKind};
pub use rules::{all_docs, explain, RULE_DOCS};

use crate::compile::Compiled;
use crate::diagnostic::Diagnostic;

/// What `check` found in one compiled input.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Every finding, compile-stage diagnostics included, ordered by position.
    pub diagnostics: Vec<Diagnostic>,
    /// Findings silenced by an inline `# fuseraft: allow(...)` comment, with its reason.
    pub suppressed: Vec<Suppressed>,
}

/// A finding silenced by an inline comment.
#[derive(Clone, Debug)]
pub struct Suppressed {
    pub diagnostic: Diagnostic,
    pub reason: String,
}

impl Findings {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn has_warnings(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diag| diag.severity == crate::Severity::Warning)
    }
}

/// Runs every check over a compiled input. The compile diagnostics come first in spirit:
/// consequences of an unresolved reference are attached to it rather than reported again.
pub fn check(compiled: &Compiled) -> Findings {
    let mut ctx = context::Ctx::new(compiled);
    rules::run(&mut ctx);
    let mut diagnostics = ctx.finish();
    let suppressed = suppress::apply(&compiled.sources, &mut diagnostics);
    sort(&mut diagnostics);
    Findings {
        diagnostics,
        suppressed,
    }
}

/// Position order, then code, so output is stable whatever order the rules ran in.
fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        let key = |diag: &Diagnostic| {
            let span = diag.span();
            (
                span.is_none(),
                span.map(|span| (span.file, span.start, span.end)),
                diag.code,
                diag.message.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    for diag in diagnostics.iter_mut() {
        sort(&mut diag.related);
    }
}
