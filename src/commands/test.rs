//! `fuseraft test`: snapshot-testing routing behaviour (being built, issue 6).

use super::exit;
use crate::cli::TestArgs;
use crate::render::Style;

pub fn run(_args: &TestArgs, _style: Style) -> u8 {
    eprintln!("error: `fuseraft test` is not available yet");
    exit::USAGE
}
