//! fuseraft CLI.
fn main() {}
