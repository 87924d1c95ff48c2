//! The conformance suite on the in-memory store, with a yield at every store
//! operation so that concurrent claimers really interleave.

use cronslot_core::coord::{CasCoordinator, MemoryStore};

cronslot_core::conformance_suite!(
    CasCoordinator::new(MemoryStore::yielding(), 7),
    cronslot_core::coord::exec::block_on,
    "mem"
);

/// Schedules as data, on the same yielding store: the eight concurrent
/// upserts really interleave.
mod schedules {
    use cronslot_core::coord::{CasCoordinator, MemoryStore};

    cronslot_core::schedules_suite!(
        CasCoordinator::new(MemoryStore::yielding(), 7),
        cronslot_core::coord::exec::block_on,
        "mem"
    );
}

/// Keyed runs, on the same yielding store: the eight concurrent enqueues
/// really interleave.
mod runs {
    use cronslot_core::coord::{CasCoordinator, MemoryStore};

    cronslot_core::runs_suite!(
        CasCoordinator::new(MemoryStore::yielding(), 7),
        cronslot_core::coord::exec::block_on,
        "mem"
    );
}
