//! A schedule object: one of the Durable Objects a dynamic job's schedules
//! (and keyed runs) are spread over by key ([`schedule_object`]). It holds
//! each of its schedules and keyed runs as the record `job/key`, written
//! and read by the core's [`Schedules`] and [`Runs`] over the object's own
//! storage (so it agrees with every other store to the letter), and runs
//! the coordinator's operations on a schedule's record with the spec the
//! request carries. Its alarm serves the wakes of all its records
//! (`crate::object_store`), a keyed run's forget time among them: the
//! tick's read for the claim then ([`Op::ReadScheduleForClaim`]) deletes
//! it.

use std::rc::Rc;

use cronslot_core::coord::decide::ScheduleWrite;
use cronslot_core::coord::{
    RunError, RunQuery, Runs, ScheduleError, SchedulePut, ScheduleQuery, Schedules, StateStore,
};
use cronslot_core::manifest::{JobName, JobTemplate};
use cronslot_core::schedules::{RunRequest, ScheduleKey, ScheduleSpec, SpecProblem, record_name};

use super::JobObject;
use crate::protocol::{
    Answer, MAX_SCHEDULE_OBJECTS, ObjectReply, ObjectRequest, Op, ScheduleAt, WireError,
    schedule_shard,
};
use crate::spec_text::decode_template;
use crate::sql::{Alarm, Sql, SqlValue};

fn bad(message: String) -> WireError {
    WireError::BadRequest { message }
}

fn refused(e: ScheduleError) -> WireError {
    match e {
        ScheduleError::Refused(refusal) => WireError::Schedule(refusal),
        ScheduleError::Coord(e) => WireError::from(&e),
    }
}

fn run_refused(e: RunError) -> WireError {
    match e {
        RunError::Refused(refusal) => WireError::Run(refusal),
        RunError::Coord(e) => WireError::from(&e),
    }
}

/// Problems of a request's body, each naming its field, as one message.
fn problems(what: &str, problems: &[SpecProblem]) -> WireError {
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    bad(format!("{what}: {}", problems.join("; ")))
}

impl<S: Sql, A: Alarm> JobObject<S, A> {
    /// Serves a request on a dynamic job's schedules (`at` says which).
    pub(super) async fn schedule_request(
        &self,
        request: &ObjectRequest,
        at: &ScheduleAt,
    ) -> ObjectReply {
        let (job, shard) = request
            .job
            .rsplit_once('#')
            .and_then(|(job, i)| Some((job, i.parse::<u32>().ok()?)))
            .ok_or_else(|| {
                bad(format!(
                    "{:?} is not the name of a schedule object (job#index)",
                    request.job
                ))
            })?;
        let job = JobName::new(job).map_err(|e| bad(e.to_string()))?;
        if !(1..=MAX_SCHEDULE_OBJECTS).contains(&at.objects) || shard >= at.objects {
            return Err(bad(format!(
                "a job's schedules are spread over 1 to {MAX_SCHEDULE_OBJECTS} objects, and the \
                 request names object {shard} of {}",
                at.objects
            )));
        }
        self.check_objects(at.objects)?;
        let key = match &at.key {
            None => None,
            Some(k) => {
                let key = ScheduleKey::new(k.clone()).map_err(|e| bad(e.to_string()))?;
                let home = schedule_shard(key.as_str(), at.objects);
                if home != shard {
                    return Err(bad(format!(
                        "schedule {key:?} belongs to object {home} of {}, not {shard}",
                        at.objects
                    )));
                }
                Some(key)
            }
        };
        let c = &self.coordinator;
        match (&request.op, key) {
            (
                Op::PutSchedule {
                    spec,
                    precondition,
                    now,
                },
                Some(key),
            ) => {
                let template = self.template(&request.spec, &job)?;
                let spec = ScheduleSpec::from_json(spec)
                    .map_err(|p| problems("the schedule's spec", &p))?;
                c.put_schedule(&template, &key, spec, *precondition, *now)
                    .await
                    .map(Answer::Written)
                    .map_err(refused)
            }
            (Op::DeleteSchedule { precondition, now }, Some(key)) => {
                let template = self.template(&request.spec, &job)?;
                c.delete_schedule(&template, &key, *precondition, *now)
                    .await
                    .map(Answer::Written)
                    .map_err(refused)
            }
            (Op::ReadSchedule, Some(key)) => c
                .store()
                .get(&record_name(&job, &key))
                .await
                .map(|read| Answer::Record(read.map(|v| Box::new(v.value))))
                .map_err(|e| WireError::from(&e.into())),
            (Op::ReadScheduleForClaim { now }, Some(key)) => {
                // The core's read for a claim, to the letter: it forgets a
                // keyed run past its key's retention (one delete, which
                // removes the record's wake with it) and primes the record
                // for the claim that follows. The record it read (or none,
                // forgotten) is the coordinator's last known one.
                let template = self.template(&request.spec, &job)?;
                c.schedule_for_claim(&template, &key, *now)
                    .await
                    .map_err(refused)?;
                let known = c.known(&record_name(&job, &key));
                Ok(Answer::Record(known.map(|v| Box::new(v.value))))
            }
            (Op::EnqueueRun { request: body, now }, Some(key)) => {
                let template = self.template(&request.spec, &job)?;
                let run =
                    RunRequest::from_json(body).map_err(|p| problems("the run request", &p))?;
                c.enqueue_run(&template, &key, &run, *now)
                    .await
                    .map(Answer::Enqueued)
                    .map_err(run_refused)
            }
            (Op::RunStatus { now }, Some(key)) => {
                let template = self.template(&request.spec, &job)?;
                c.run_status(&template, &key, *now)
                    .await
                    .map(|view| Answer::Run(view.map(Box::new)))
                    .map_err(run_refused)
            }
            (
                Op::ListRuns {
                    prefix,
                    status,
                    after,
                    limit,
                    now,
                },
                None,
            ) => {
                let template = self.template(&request.spec, &job)?;
                let query = RunQuery {
                    prefix: prefix.clone(),
                    status: *status,
                    after: after.clone(),
                    limit: *limit,
                };
                let page = c
                    .list_runs(&template, &query, *now)
                    .await
                    .map_err(run_refused)?;
                Ok(Answer::Runs {
                    runs: page.runs,
                    cursor: page.cursor,
                })
            }
            (Op::PutSchedules { puts, now }, None) => {
                let template = self.template(&request.spec, &job)?;
                // Each entry is checked as its own request would be: a key
                // of another object, or a spec that does not read, is that
                // entry's refusal alone.
                let mut answers: Vec<Option<Result<ScheduleWrite, WireError>>> = Vec::new();
                let mut checked = Vec::new();
                for (key, spec, precondition) in puts {
                    let put = ScheduleKey::new(key.clone())
                        .map_err(|e| bad(e.to_string()))
                        .and_then(|key| {
                            let home = schedule_shard(key.as_str(), at.objects);
                            if home == shard {
                                Ok(key)
                            } else {
                                Err(bad(format!(
                                    "schedule {key:?} belongs to object {home} of {}, not {shard}",
                                    at.objects
                                )))
                            }
                        })
                        .and_then(|key| {
                            let spec = ScheduleSpec::from_json(spec)
                                .map_err(|p| problems("the schedule's spec", &p))?;
                            Ok(SchedulePut {
                                key,
                                spec,
                                precondition: *precondition,
                            })
                        });
                    match put {
                        Ok(put) => {
                            answers.push(None);
                            checked.push(put);
                        }
                        Err(e) => answers.push(Some(Err(e))),
                    }
                }
                let mut written = c.put_schedules(&template, checked, *now).await.into_iter();
                let each = answers
                    .into_iter()
                    .map(|answer| match answer {
                        Some(refused) => refused,
                        None => match written.next() {
                            Some(w) => w.map_err(refused),
                            None => Err(bad("a bulk write lost an answer: this is a bug".into())),
                        },
                    })
                    .collect();
                Ok(Answer::WrittenEach(each))
            }
            (
                Op::ListSchedules {
                    prefix,
                    label,
                    after,
                    limit,
                },
                None,
            ) => {
                let template = self.template(&request.spec, &job)?;
                let query = ScheduleQuery {
                    prefix: prefix.clone(),
                    label: label.clone(),
                    after: after.clone(),
                    limit: *limit,
                };
                let page = c.list_schedules(&template, &query).await.map_err(refused)?;
                Ok(Answer::Page {
                    schedules: page
                        .schedules
                        .into_iter()
                        .map(|(key, read)| (key.as_str().to_string(), Box::new(read.record)))
                        .collect(),
                    cursor: page.cursor,
                })
            }
            (Op::PutSchedules { .. }, Some(_)) => Err(bad("put_schedules takes no key".into())),
            (
                Op::PutSchedule { .. }
                | Op::DeleteSchedule { .. }
                | Op::ReadSchedule
                | Op::ReadScheduleForClaim { .. }
                | Op::EnqueueRun { .. }
                | Op::RunStatus { .. }
                | Op::ListRuns { .. }
                | Op::ListSchedules { .. },
                _,
            )
            | (_, None) => Err(bad(format!(
                "{} {} a schedule's key",
                request.op.name(),
                if at.key.is_some() {
                    "takes no"
                } else {
                    "needs"
                }
            ))),
            (op, Some(key)) => {
                let parsed = self.parsed_spec(&request.spec)?;
                if parsed.name != job {
                    return Err(bad(format!(
                        "the spec is job {:?}, the request names job {:?}",
                        parsed.name.as_str(),
                        job.as_str()
                    )));
                }
                let mut spec = (*parsed).clone();
                spec.key = Some(key);
                spec.schedule_version = at.version;
                self.apply(&spec, op).await.map_err(|e| WireError::from(&e))
            }
        }
    }

    /// The dynamic job `text` parses to, parsed once while the same text
    /// comes; it must be `job`.
    fn template(&self, text: &str, job: &JobName) -> Result<Rc<JobTemplate>, WireError> {
        let cached = self
            .template
            .borrow()
            .as_ref()
            .filter(|(t, _)| t == text)
            .map(|(_, template)| template.clone());
        let template = match cached {
            Some(template) => template,
            None => {
                let template = Rc::new(
                    decode_template(text)
                        .map_err(|e| bad(format!("the dynamic job's text does not parse: {e}")))?,
                );
                *self.template.borrow_mut() = Some((text.to_string(), template.clone()));
                template
            }
        };
        if template.name != *job {
            return Err(bad(format!(
                "the dynamic job is {:?}, the request names job {:?}",
                template.name.as_str(),
                job.as_str()
            )));
        }
        Ok(template)
    }

    /// Refuses a request that counts the job's schedule objects otherwise
    /// than the first request this object served: the count decides which
    /// object holds each key, so a changed count would hide schedules.
    fn check_objects(&self, objects: u32) -> Result<(), WireError> {
        if self.objects.get() == Some(objects) {
            return Ok(());
        }
        let sql = self.store().sql();
        let failed = |e: crate::sql::SqlError| WireError::Store {
            kind: crate::protocol::WireStoreKind::Unavailable,
            message: format!("schedule object storage: the count of objects: {e}"),
        };
        sql.exec(
            "CREATE TABLE IF NOT EXISTS cronslot_schedule_objects (\
               singleton INTEGER PRIMARY KEY CHECK (singleton = 1), objects INTEGER NOT NULL)",
            &[],
        )
        .map_err(failed)?;
        sql.exec(
            "INSERT INTO cronslot_schedule_objects (singleton, objects) VALUES (1, ?) \
             ON CONFLICT (singleton) DO NOTHING",
            &[SqlValue::Integer(i64::from(objects))],
        )
        .map_err(failed)?;
        let rows = sql
            .exec(
                "SELECT objects FROM cronslot_schedule_objects WHERE singleton = 1",
                &[],
            )
            .map_err(failed)?;
        let stored = rows
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_integer)
            .and_then(|n| u32::try_from(n).ok());
        if stored != Some(objects) {
            return Err(bad(format!(
                "this object holds schedules spread over {} objects, and the request counts \
                 {objects}: the count decides which object holds each key, so it cannot change \
                 while the job has schedules",
                stored.map_or_else(|| "an unreadable number of".to_string(), |n| n.to_string())
            )));
        }
        self.objects.set(Some(objects));
        Ok(())
    }
}
