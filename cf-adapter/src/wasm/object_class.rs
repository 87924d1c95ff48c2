//! `CronslotJob`: one Durable Object per job (`id_from_name(job)`), with
//! SQLite-backed storage (the `new_sqlite_classes` migration).

use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use crate::object::JobObject;
use crate::sql::{Sql, SqlError, SqlValue};

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
#[durable_object]
pub struct CronslotJob {
    object: JobObject<ObjectSql>,
}

impl DurableObject for CronslotJob {
    fn new(state: State, _env: Env) -> Self {
        let sql = ObjectSql(state.storage().sql());
        CronslotJob {
            object: JobObject::new(sql, super::random_seed()),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let body = req.text().await?;
        // Everything from here to the answer is synchronous storage work:
        // no other request of this object runs in between, and the writes
        // are committed together.
        let answer = self.object.handle_text(&body).await;
        let mut response = Response::ok(answer)?;
        response
            .headers_mut()
            .set("Content-Type", "application/json")?;
        Ok(response)
    }
}
