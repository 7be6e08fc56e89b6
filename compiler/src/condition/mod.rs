//! Condition language (placeholder).
