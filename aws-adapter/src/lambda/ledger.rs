//! The effect ledger and checkpoints of a run, behind the store-free
//! [`Ledger`] trait that [`RunContext`](super::jobs::RunContext) holds.

use std::rc::Rc;

use cronslot_core::coord::{
    CasCoordinator, CoordError, Coordinator, EffectError, EffectLedger, JobContext, Lease,
    StateStore,
};
use cronslot_core::manifest::JobSpec;

use super::handler::Clock;
use super::jobs::{EffectWork, Ledger, LocalFuture};
use super::observe::Observed;

pub(crate) struct RunLedger<S> {
    coordinator: Rc<CasCoordinator<Observed<S>>>,
    spec: Rc<JobSpec>,
    lease: Lease,
    clock: Clock,
}

impl<S> RunLedger<S> {
    pub(crate) fn new(
        coordinator: Rc<CasCoordinator<Observed<S>>>,
        spec: Rc<JobSpec>,
        lease: Lease,
        clock: Clock,
    ) -> RunLedger<S> {
        RunLedger {
            coordinator,
            spec,
            lease,
            clock,
        }
    }
}

impl<S: StateStore + EffectLedger> Ledger for RunLedger<S> {
    fn effect<'a>(
        &'a self,
        name: &'a str,
        work: EffectWork<'a>,
    ) -> LocalFuture<'a, Result<String, EffectError>> {
        Box::pin(async move {
            let clock = || (self.clock)();
            // The core's context holds the ledger rules (hold time, fence
            // checks); it is cheap to build per effect.
            let ctx = JobContext::new(&*self.coordinator, &self.spec, self.lease.clone(), &clock);
            ctx.effect(name, work).await
        })
    }

    fn checkpoint<'a>(&'a self, value: &'a str) -> LocalFuture<'a, Result<(), CoordError>> {
        Box::pin(async move {
            self.coordinator
                .checkpoint(&self.spec, self.lease.fence, value, (self.clock)())
                .await
        })
    }
}
