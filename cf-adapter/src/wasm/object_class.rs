//! `CronslotJob`: one Durable Object per job (`id_from_name(job)`), and
//! the tick object (`id_from_name(TICK_OBJECT)`), with SQLite-backed
//! storage (the `new_sqlite_classes` migration) and an alarm per object.

use std::cell::RefCell;

use worker::{DurableObject, Env, Request, Response, Result, State, console_error, durable_object};

use super::OBJECT_BINDING;
use super::transport::StubTransport;
use crate::client::TickClient;
use crate::object::{AlarmStep, JobObject};
use crate::sql::{Alarm, Sql, SqlError, SqlValue};

/// The variable that makes every object count the requests and alarms it
/// serves (tests measure what a tick costs with it; off in production,
/// where it would be a write per request).
pub const COUNT_REQUESTS_VAR: &str = "CRONSLOT_COUNT_REQUESTS";

/// The object's alarm, through `storage.setAlarm`/`deleteAlarm`, called
/// synchronously between the SQL statements of the same request (so they
/// commit together). Their promises are awaited once the request's
/// storage work is done ([`ObjectAlarm::settle`]).
pub struct ObjectAlarm {
    storage: worker::Storage,
    pending: RefCell<Vec<worker::js_sys::Promise>>,
}

impl ObjectAlarm {
    /// Waits for the alarm operations issued so far.
    async fn settle(&self) -> std::result::Result<(), SqlError> {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for promise in pending {
            worker::wasm_bindgen_futures::JsFuture::from(promise)
                .await
                .map_err(|e| SqlError(format!("{e:?}")))?;
        }
        Ok(())
    }
}

impl Alarm for ObjectAlarm {
    fn set(&self, at_ms: i64) -> std::result::Result<(), SqlError> {
        let date = worker::js_sys::Date::new(&(at_ms as f64).into());
        let promise = self
            .storage
            .as_raw()
            .set_alarm(date, worker::wasm_bindgen::JsValue::NULL.into())
            .map_err(|e| SqlError(format!("setAlarm: {e:?}")))?;
        self.pending.borrow_mut().push(promise);
        Ok(())
    }

    fn delete(&self) -> std::result::Result<(), SqlError> {
        let promise = self
            .storage
            .as_raw()
            .delete_alarm(worker::wasm_bindgen::JsValue::NULL.into())
            .map_err(|e| SqlError(format!("deleteAlarm: {e:?}")))?;
        self.pending.borrow_mut().push(promise);
        Ok(())
    }
}

/// The object's SQLite, through `storage.sql`.
pub struct ObjectSql(worker::SqlStorage);

impl Sql for ObjectSql {
    fn exec(
        &self,
        sql: &str,
        params: &[SqlValue],
    ) -> std::result::Result<Vec<Vec<SqlValue>>, SqlError> {
        use worker::SqlStorageValue as V;
        let bindings: Vec<V> = params
            .iter()
            .map(|p| match p {
                SqlValue::Null => V::Null,
                SqlValue::Integer(i) => V::Integer(*i),
                SqlValue::Real(r) => V::Float(*r),
                SqlValue::Text(t) => V::String(t.clone()),
                SqlValue::Blob(b) => V::Blob(b.clone()),
            })
            .collect();
        let cursor = self
            .0
            .exec(sql, bindings)
            .map_err(|e| SqlError(e.to_string()))?;
        let mut rows = Vec::new();
        for row in cursor.raw() {
            let row = row.map_err(|e| SqlError(e.to_string()))?;
            rows.push(
                row.into_iter()
                    .map(|v| match v {
                        V::Null => SqlValue::Null,
                        V::Boolean(b) => SqlValue::Integer(i64::from(b)),
                        V::Integer(i) => SqlValue::Integer(i),
                        V::Float(f) => SqlValue::Real(f),
                        V::String(s) => SqlValue::Text(s),
                        V::Blob(b) => SqlValue::Blob(b),
                    })
                    .collect(),
            );
        }
        Ok(rows)
    }
}

/// The Durable Object class that holds one job's state: one object per
/// job (`id_from_name(job)`), on SQLite-backed storage. A Worker exports it
/// (`pub use cronslot_cf::CronslotJob;`), and its wrangler config binds it
/// as [`OBJECT_BINDING`](crate::OBJECT_BINDING) with the class in a
/// `new_sqlite_classes` migration (`cronslot render wrangler` writes both).
///
/// The same class serves the tick object, named
/// [`TICK_OBJECT`](crate::protocol::TICK_OBJECT), which no job can be.
#[durable_object(alarm)]
pub struct CronslotJob {
    object: JobObject<ObjectSql, ObjectAlarm>,
    env: Env,
}

impl DurableObject for CronslotJob {
    fn new(state: State, env: Env) -> Self {
        let storage = state.storage();
        let sql = ObjectSql(storage.sql());
        let alarm = ObjectAlarm {
            storage,
            pending: RefCell::new(Vec::new()),
        };
        let object = JobObject::with_alarm(sql, alarm, super::random_seed());
        object.count_requests(env.var(COUNT_REQUESTS_VAR).is_ok());
        CronslotJob { object, env }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let body = req.text().await?;
        // Everything from here to the answer is synchronous storage work:
        // no other request of this object runs in between, and the writes
        // (the alarm's included) are committed together.
        let answer = self.object.handle_text(&body).await;
        self.object
            .store()
            .alarm()
            .settle()
            .await
            .map_err(|e| worker::Error::RustError(format!("the object's alarm: {e}")))?;
        let mut response = Response::ok(answer)?;
        response
            .headers_mut()
            .set("Content-Type", "application/json")?;
        Ok(response)
    }

    /// The record's wake has come: send it to the tick object. Never fails
    /// (the platform retries a failed alarm only a few times): whatever
    /// goes wrong, the alarm is set again (see `crate::object`).
    async fn alarm(&self) -> Result<Response> {
        let step = self.object.alarm_start(super::now());
        if let Ok(AlarmStep::Send(woken)) = &step {
            let delivered = match self.env.durable_object(OBJECT_BINDING) {
                Ok(namespace) => {
                    let transport = StubTransport::new(namespace);
                    TickClient::new(&transport).wake(woken.clone()).await
                }
                Err(e) => Err(cronslot_core::coord::StoreError::unavailable(format!(
                    "no Durable Object binding {OBJECT_BINDING}: {e}"
                ))),
            };
            let first = woken.first().map(|w| w.job.as_str());
            if let Err(e) = &delivered {
                log_error(
                    "wake not sent to the tick object: the alarm tries again",
                    first,
                    e,
                );
            }
            if let Err(e) = self
                .object
                .alarm_end(woken, delivered.is_ok(), super::now())
            {
                log_error("re-arming the alarm", first, &e);
                self.rearm_later();
            }
        } else if let Err(e) = &step {
            log_error("reading the wake for the alarm", None, e);
            self.rearm_later();
        }
        if let Err(e) = self.object.store().alarm().settle().await {
            log_error("setting the alarm", None, &e);
        }
        Response::empty()
    }
}

impl CronslotJob {
    /// The alarm again in a minute, when its handler could not tell.
    fn rearm_later(&self) {
        let at = super::now()
            .checked_add(crate::object::WAKE_RETRY)
            .map(|t| t.as_millisecond())
            .unwrap_or(i64::MAX);
        let _ = self.object.store().alarm().set(at);
    }
}

/// An error line of the object's log: what failed, for which job.
fn log_error(msg: &str, job: Option<&str>, error: &dyn std::fmt::Display) {
    let line = crate::run::Line::Note {
        binding: None,
        cron: None,
        error: Some(error.to_string()),
        job,
        msg,
    };
    console_error!("{}", line.json());
}
