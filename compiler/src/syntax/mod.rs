//! Syntax layer (placeholder).
