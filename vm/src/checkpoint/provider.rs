//! A provider's position as a checkpoint stores it: [`crate::models::ProviderState`].

pub use crate::models::ProviderState;
