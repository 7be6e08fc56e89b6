//! The VM's integration tests, one binary: compaction, the event format, the network
//! providers against loopback servers, and the registries.

mod compaction;
mod events;
mod providers;
mod registries;
