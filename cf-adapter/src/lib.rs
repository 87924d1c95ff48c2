//! cronslot on Cloudflare: Cron Triggers fire a Worker; a Durable Object per
//! job holds the job's state and serialises its claims; the job runs in the
//! Worker with the runtime's run loop and context (the same as on every
//! platform); the object records the outcome.
//!
//! A Worker embeds the manifest and registers its job functions in a
//! `Cronslot`, forwards its `scheduled` and `fetch` events to it, and
//! exports the `CronslotJob` Durable Object class under the binding
//! `OBJECT_BINDING` (these three exist on `wasm32` only). The [`admin`]
//! routes and their JSON documents are public too: the `cronslot` CLI reads
//! the documents with `--store https://…`.
//!
//! Everything that decides something is platform-neutral and tested
//! natively: the object's request handling over any SQLite, the wire
//! protocol between Worker and object, the Worker's coordinator client,
//! which jobs an event serves ([`dispatch`]) and the admin routes
//! ([`admin`]). Only the glue to the `worker` crate sits under
//! `cfg(target_arch = "wasm32")`, because `worker` panics on every call
//! outside a JavaScript runtime.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

/// The admin routes, written once in the runtime and served by the Worker.
pub use cronslot_runtime::admin;
mod client;
pub mod dispatch;
mod object;
mod object_store;
mod tick_store;
// not public API: used by this crate's tests (tests/fuzz_protocol.rs).
#[doc(hidden)]
pub mod protocol;
pub mod run;
// not public API: used by this crate's tests (fuzz_protocol, object_native).
#[doc(hidden)]
pub mod spec_text;
// not public API: used by cronslot-tests (src/sim_backends.rs: rusqlite).
#[doc(hidden)]
pub mod sql;

pub use cronslot_runtime::{JobError, Jobs, RunContext};

// not public API: used by this crate's tests and cronslot-tests (cf_workerd).
#[doc(hidden)]
pub use client::{ObjectClient, TickClient, Transport};
// not public API: used by this crate's tests (object_native, fuzz_protocol).
#[doc(hidden)]
pub use object::{AlarmStep, JobObject, WAKE_REMINDER, WAKE_RETRY};
// not public API: used by cronslot-tests (tests/src/sim_backends.rs).
#[doc(hidden)]
pub use object_store::ObjectStore;

#[cfg(target_arch = "wasm32")]
mod wasm;
#[cfg(target_arch = "wasm32")]
pub use wasm::{Cronslot, CronslotJob, DEFAULT_MAX_JOBS_PER_TICK, OBJECT_BINDING};

/// `worker`, re-exported so a user's Worker uses the same version.
#[cfg(target_arch = "wasm32")]
pub use worker;
