//! `fuseraft check`: static lints over compiled workflows (being built, issue 3).

use super::exit;
use crate::cli::CheckArgs;
use crate::render::Style;

pub fn run(_args: &CheckArgs, _style: Style) -> u8 {
    eprintln!("error: `fuseraft check` is not available yet");
    exit::USAGE
}
