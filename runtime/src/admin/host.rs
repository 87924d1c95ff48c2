//! One admin host: what a platform gives the admin routes, so that the
//! route dispatch is written once. The Worker and `cronslot serve` only
//! translate HTTP to an [`AdminRequest`](super::AdminRequest) and a
//! [`Reply`] back; which route runs, and how, is decided here.

use std::rc::Rc;

use cronslot_core::coord::{CoordError, Coordinator};
use cronslot_core::manifest::Manifest;
use jiff::Timestamp;

use super::{AdminRoute, ErrorKind, JSON, Reply, execute, repair_page, trigger_reply, trigger_run};
use crate::{Jobs, Platform};

/// What the admin routes need of the platform that serves them.
#[allow(async_fn_in_trait)]
pub trait AdminHost {
    /// The coordinator over the platform's store.
    type Coordinator: Coordinator + 'static;

    /// The coordinator the routes read and act through.
    fn coordinator(&self) -> &Rc<Self::Coordinator>;

    /// The owner of a manual trigger's lease.
    fn trigger_owner(&self) -> String;

    /// The Rust functions a manual trigger may run (none for a host that
    /// has no functions: its command and http jobs still run).
    fn jobs(&self) -> &Jobs;

    /// The platform a manual trigger's run uses (its clock, its HTTP
    /// sender, its process runner).
    fn platform(&self) -> Rc<dyn Platform>;

    /// The OpenAPI document of the admin routes, `GET {p}/openapi.json`
    /// (`docs/openapi.json` in the repository), if this host carries it;
    /// `None`: the route answers 404 saying where the document is (the
    /// Worker, whose size budget it does not fit; docs/performance.md).
    fn openapi(&self) -> Option<&'static str>;

    /// Gives `job`'s record the wake it lacks, if it has none (the repair
    /// route); answers the wake.
    async fn repair_wake(&self, job: &str) -> Result<Option<Timestamp>, CoordError>;

    /// Serves a schedule's route ([`AdminRoute::is_schedule`]) at `now`.
    /// A host whose coordinator writes schedules answers with
    /// [`execute_schedule`](super::execute_schedule) over it; the default
    /// answers 404 saying this host serves no schedules, as a build
    /// without the feature (the Worker's) does.
    #[cfg(feature = "schedules")]
    async fn schedule_route(
        &self,
        route: &AdminRoute,
        manifest: &Manifest,
        now: Timestamp,
    ) -> Reply {
        let _ = (route, manifest, now);
        no_schedules()
    }

    /// The spec the slots of the schedule `key` of the dynamic job `job`
    /// run with now, as the store holds it, for a job's operation on that
    /// schedule ([`AdminRoute::OfSchedule`]): a host whose coordinator
    /// writes schedules answers with
    /// [`schedule_job_spec`](super::schedule_job_spec); 404 when there is
    /// no such schedule (or a tombstone), and by default, as for
    /// [`schedule_route`](AdminHost::schedule_route).
    #[cfg(feature = "schedules")]
    async fn schedule_spec(
        &self,
        manifest: &Manifest,
        job: &cronslot_core::manifest::JobName,
        key: &cronslot_core::schedules::ScheduleKey,
    ) -> Result<cronslot_core::manifest::JobSpec, Reply> {
        let _ = (manifest, job, key);
        Err(no_schedules())
    }

    /// Adds the dead keyed runs of `templates` to the dead-letter list
    /// `GET {p}/dlq` answers: a host whose coordinator keeps keyed runs
    /// answers with [`add_dead_runs`](super::add_dead_runs) over it; by
    /// default nothing is added (the Worker, whose size budget the
    /// listing does not fit: its dashboard lists a job's dead runs).
    #[cfg(feature = "schedules")]
    async fn dead_runs(
        &self,
        doc: &mut super::DlqDoc,
        templates: &[&cronslot_core::manifest::JobTemplate],
        now: Timestamp,
    ) -> Result<(), Reply> {
        let _ = (doc, templates, now);
        Ok(())
    }

    /// Serves a keyed run's route ([`AdminRoute::is_run`]) at `now`. A
    /// host whose coordinator keeps keyed runs answers with
    /// [`execute_run`](super::execute_run) over it; the default answers
    /// 404 saying this host serves no keyed runs.
    #[cfg(feature = "schedules")]
    async fn run_route(&self, route: &AdminRoute, manifest: &Manifest, now: Timestamp) -> Reply {
        let _ = (route, manifest, now);
        Reply::error(
            404,
            ErrorKind::NotFound,
            "this host does not serve the keyed runs of dynamic jobs; `cronslot serve` does",
        )
    }
}

#[cfg(feature = "schedules")]
fn no_schedules() -> Reply {
    Reply::error(
        404,
        ErrorKind::NotFound,
        "this host does not serve the schedules of dynamic jobs; `cronslot serve` does",
    )
}

/// Serves an authorised route on `host`, judged at `now`.
pub async fn dispatch<H: AdminHost>(
    route: &AdminRoute,
    manifest: &Manifest,
    host: &H,
    now: Timestamp,
) -> Reply {
    match route {
        AdminRoute::Trigger { job } => {
            let Some(spec) = manifest.job(job.as_str()) else {
                return Reply::error(404, ErrorKind::NotFound, "no such job");
            };
            let spec = Rc::new(spec.clone());
            let outcome = trigger_run(
                &spec,
                host.coordinator(),
                &host.trigger_owner(),
                host.jobs(),
                &host.platform(),
            )
            .await;
            trigger_reply(&spec, &outcome)
        }
        AdminRoute::Repair { after } => {
            repair_page(manifest, after.as_deref(), |spec| {
                host.repair_wake(spec.name.as_str())
            })
            .await
        }
        AdminRoute::OpenApi => match host.openapi() {
            Some(document) => Reply {
                status: 200,
                content_type: JSON,
                headers: vec![("Cache-Control".to_string(), "no-cache".to_string())],
                body: document.to_string(),
            },
            None => Reply::error(
                404,
                ErrorKind::NotFound,
                "this host does not carry the OpenAPI document of its routes: `cronslot serve` \
                 serves it at /cronslot/openapi.json, and cronslot's repository keeps it as \
                 docs/openapi.json",
            ),
        },
        #[cfg(feature = "schedules")]
        AdminRoute::OfSchedule { key, action } => {
            let Some(job) = action.job() else {
                return Reply::error(
                    500,
                    ErrorKind::Internal,
                    "a schedule's operation names no job",
                );
            };
            let spec = match host.schedule_spec(manifest, job, key).await {
                Ok(spec) => spec,
                Err(reply) => return reply,
            };
            if let AdminRoute::Trigger { .. } = **action {
                let spec = Rc::new(spec);
                let outcome = trigger_run(
                    &spec,
                    host.coordinator(),
                    &host.trigger_owner(),
                    host.jobs(),
                    &host.platform(),
                )
                .await;
                return trigger_reply(&spec, &outcome);
            }
            match super::execute::act(action, &spec, &**host.coordinator(), now).await {
                Ok(reply) | Err(reply) => reply,
            }
        }
        #[cfg(feature = "schedules")]
        AdminRoute::Dlq { job } => match dlq_with_runs(manifest, job.as_ref(), host, now).await {
            Ok(reply) | Err(reply) => reply,
        },
        #[cfg(feature = "schedules")]
        route if route.is_schedule() => host.schedule_route(route, manifest, now).await,
        #[cfg(feature = "schedules")]
        route if route.is_run() => host.run_route(route, manifest, now).await,
        route => execute(route, manifest, &**host.coordinator(), now).await,
    }
}

/// `GET {p}/dlq` with the dead keyed runs of the dynamic jobs (all, or
/// the one `job` names) beside the manifest jobs' dead letters.
#[cfg(feature = "schedules")]
async fn dlq_with_runs<H: AdminHost>(
    manifest: &Manifest,
    job: Option<&cronslot_core::manifest::JobName>,
    host: &H,
    now: Timestamp,
) -> Result<Reply, Reply> {
    let (specs, templates) = match job {
        None => (
            manifest.jobs.iter().collect(),
            manifest.templates.iter().collect(),
        ),
        Some(name) => match (
            manifest.job(name.as_str()),
            manifest.template(name.as_str()),
        ) {
            (Some(spec), _) => (vec![spec], Vec::new()),
            (None, Some(template)) => (Vec::new(), vec![template]),
            (None, None) => {
                return Err(Reply::error(
                    404,
                    ErrorKind::NotFound,
                    format!("no job {:?} in the manifest", name.as_str()),
                ));
            }
        },
    };
    let mut doc = super::execute::dlq_doc(specs, &**host.coordinator(), now).await?;
    host.dead_runs(&mut doc, &templates, now).await?;
    doc.sort();
    Ok(Reply::json(200, &doc))
}
