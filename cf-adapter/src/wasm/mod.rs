//! The glue to the Workers runtime: the Durable Object class, the transport
//! to it, the Worker's `scheduled` and `fetch` entry points, and `fetch`
//! for `http` jobs. Everything here is a thin translation; the decisions
//! are in the platform-neutral modules.

mod entry;
// The `new` and `fetch` bindings `#[durable_object]` generates on
// `CronslotJob` cannot carry docs.
#[allow(missing_docs)]
mod object_class;
mod outgoing;
mod transport;

pub use entry::{Cronslot, DEFAULT_MAX_JOBS_PER_TICK};
pub use object_class::CronslotJob;

/// The Durable Object binding the Worker's wrangler config declares.
pub const OBJECT_BINDING: &str = "CRONSLOT_JOBS";

/// A seed from the runtime's randomness (retry jitter, owner ids).
pub(crate) fn random_seed() -> u64 {
    let hi = (worker::js_sys::Math::random() * 4_294_967_296.0) as u64;
    let lo = (worker::js_sys::Math::random() * 4_294_967_296.0) as u64;
    (hi << 32) | lo
}

/// The runtime's clock. In a Worker it advances only across I/O, which is
/// all cronslot needs (leases and lags are measured across I/O).
pub(crate) fn now() -> jiff::Timestamp {
    let millis = worker::Date::now().as_millis();
    jiff::Timestamp::from_millisecond(i64::try_from(millis).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::MAX)
}
