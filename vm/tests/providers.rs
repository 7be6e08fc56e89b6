//! The network providers against loopback servers that speak each provider's wire format:
//! streamed text and tool calls, the exact requests sent (snapshotted), and faults
//! (429 with Retry-After, 500, a reset mid-stream, a body cut mid-JSON, a hanging server,
//! a 401). Only 127.0.0.1 is contacted; the key is fake and never appears in an error.

mod bounds;
mod common;
mod config;
mod context;
mod faults;
mod keys;
mod model_limits;
mod server;
mod turns;
mod usage;
mod wire;
