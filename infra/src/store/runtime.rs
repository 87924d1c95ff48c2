//! The async runtime the store commands drive their stores' futures on:
//! one current-thread runtime per command ([`wait`]).

use std::future::Future;

thread_local! {
    /// One current-thread runtime for the command: DynamoDB's client does
    /// its I/O on it (the SQLite store's futures finish on their first poll).
    static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok();
}

/// Whether the command's runtime could be started (the HTTP client needs
/// it; the fallback executor of [`wait`] cannot drive network I/O).
pub fn runtime_available() -> bool {
    RUNTIME.with(Option::is_some)
}

/// Drives a store operation to its end on the command's runtime.
pub fn wait<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|rt| match rt {
        Some(rt) => rt.block_on(future),
        // Without a runtime (the OS refused its resources) only futures that
        // need none can finish: the SQLite store's.
        None => cronslot_core::coord::exec::block_on(future),
    })
}
