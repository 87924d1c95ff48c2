//! The `cronslot.toml` manifest.
