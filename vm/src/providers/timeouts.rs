//! Which timeouts a model's requests get: for each of connect, idle and overall, the
//! command line's flag, else the model's own key (`ConnectTimeoutSeconds`,
//! `IdleTimeoutSeconds`, `TimeoutSeconds`), else the default of [`Settings`].

use std::time::Duration;

use fuseraft_compiler::ir;

use super::Settings;

/// The timeout flags given on the command line.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeoutFlags {
    pub timeout: Option<Duration>,
    pub idle: Option<Duration>,
    pub connect: Option<Duration>,
}

const YEAR: f64 = 365.0 * 86_400.0;

/// The timeouts one model's requests are sent with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub overall: Duration,
    pub idle: Duration,
    pub connect: Duration,
}

impl Timeouts {
    /// For `model`: the flag, else the model's own key, else the default.
    pub(super) fn of(model: &ir::Model, flags: &TimeoutFlags, defaults: &Settings) -> Timeouts {
        let own = &model.timeouts;
        // The reader keeps seconds positive and finite; a year is as good as forever.
        let pick = |flag: Option<Duration>, seconds: Option<f64>, default: Duration| {
            flag.or_else(|| {
                seconds.map(|seconds| Duration::from_secs_f64(seconds.clamp(0.001, YEAR)))
            })
            .unwrap_or(default)
        };
        Timeouts {
            overall: pick(flags.timeout, own.overall, defaults.timeout),
            idle: pick(flags.idle, own.idle, defaults.idle_timeout),
            connect: pick(flags.connect, own.connect, defaults.connect_timeout),
        }
    }
}
