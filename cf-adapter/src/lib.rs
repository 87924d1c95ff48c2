//! cronslot on Cloudflare: Cron Triggers fire a Worker; a Durable Object per
//! job holds the job's state and serialises its claims; the job runs in the
//! Worker with the runtime's run loop and context (the same as on every
//! platform); the object records the outcome.
//!
//! Everything that decides something is platform-neutral and tested
//! natively: the object's request handling ([`object`]) over any SQLite
//! ([`sql`]), the wire protocol ([`protocol`]), the Worker's coordinator
//! client ([`client`]), which jobs an event serves ([`dispatch`]) and the
//! admin routes ([`admin`]). Only the glue to the `worker` crate sits under
//! `cfg(target_arch = "wasm32")`, because `worker` panics on every call
//! outside a JavaScript runtime.

pub mod admin;
pub mod client;
pub mod dispatch;
pub mod object;
pub mod object_store;
pub mod protocol;
pub mod run;
pub mod spec_text;
pub mod sql;

pub use client::{ObjectClient, Transport};
pub use cronslot_runtime::{JobError, Jobs, RunContext};
pub use object::JobObject;
pub use object_store::ObjectStore;

#[cfg(target_arch = "wasm32")]
mod wasm;
#[cfg(target_arch = "wasm32")]
pub use wasm::{Cronslot, CronslotJob, OBJECT_BINDING};

/// `worker`, re-exported so a user's Worker uses the same version.
#[cfg(target_arch = "wasm32")]
pub use worker;
