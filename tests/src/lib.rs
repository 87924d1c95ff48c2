//! Cross-crate tests for cronslot: the store conformance suite on every
//! store, simulations, and emulator end-to-end tests. The tests live in
//! `tests/`; this library holds what they share.

pub mod fuzz;
pub mod moto;
pub mod sim;
pub mod sim_backends;
pub mod workerd;
