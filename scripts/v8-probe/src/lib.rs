//! Exports for `run.mjs`: load a precompiled manifest, then plan minutes
//! over it, as a Worker does (the calls are timed on the JavaScript side).
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;

use cronslot_core::due::DuePlanner;
use cronslot_core::manifest::{Manifest, load_precompiled};
use jiff::Timestamp;

thread_local! {
    static LOADED: RefCell<Option<(Manifest, Option<DuePlanner>)>> = const { RefCell::new(None) };
}

/// Room for `len` bytes of input, for JavaScript to fill.
#[unsafe(no_mangle)]
pub extern "C" fn input(len: usize) -> *mut u8 {
    let mut buffer = vec![0u8; len].into_boxed_slice();
    let at = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    at
}

/// Loads the manifest at `at` (`len` bytes): its number of jobs, or -1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn load(at: *const u8, len: usize) -> i32 {
    // SAFETY: `at` is the buffer `input(len)` returned, filled by the caller.
    let bytes = unsafe { std::slice::from_raw_parts(at, len) };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return -1;
    };
    match load_precompiled(text) {
        Ok(m) => {
            let jobs = i32::try_from(m.jobs.len()).unwrap_or(i32::MAX);
            LOADED.with(|l| *l.borrow_mut() = Some((m, None)));
            jobs
        }
        Err(_) => -1,
    }
}

/// Builds the tick plan over the loaded manifest: its number of jobs.
#[unsafe(no_mangle)]
pub extern "C" fn build_plan() -> i32 {
    LOADED.with(|l| {
        let mut l = l.borrow_mut();
        let Some((m, plan)) = l.as_mut() else { return -1 };
        let planner = DuePlanner::new(&m.jobs, |_| true);
        let n = i32::try_from(planner.len()).unwrap_or(i32::MAX);
        *plan = Some(planner);
        n
    })
}

/// Plans the minute ending at `until` (seconds since the epoch): how many
/// jobs are due.
#[unsafe(no_mangle)]
pub extern "C" fn plan(until: i64) -> i32 {
    LOADED.with(|l| {
        let l = l.borrow();
        let Some((m, Some(planner))) = l.as_ref() else { return -1 };
        let (Ok(after), Ok(until)) = (
            Timestamp::from_second(until - 60),
            Timestamp::from_second(until),
        ) else {
            return -1;
        };
        i32::try_from(planner.due(&m.jobs, after, until).len()).unwrap_or(i32::MAX)
    })
}
