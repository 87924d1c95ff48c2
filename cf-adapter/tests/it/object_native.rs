//! The job object and its client, natively: the core conformance suite
//! through the real wire protocol, object code and SQL, on a real SQLite
//! per object (what a SQLite-backed Durable Object is), with the transport
//! calling the object in-process instead of through workerd. The same suite
//! runs in workerd in `tests/tests/it/cf_workerd.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cronslot_cf::{JobObject, ObjectClient, Transport};
use cronslot_core::coord::StoreError;
use cronslot_core::coord::exec::block_on;
use cronslot_tests::sim_backends::RusqliteSql;

/// One object per job name, as `id_from_name(job)` gives in workerd.
#[derive(Default, Clone)]
struct Objects(Rc<RefCell<HashMap<String, Rc<JobObject<RusqliteSql>>>>>);

impl Objects {
    fn object(&self, job: &str) -> Rc<JobObject<RusqliteSql>> {
        self.0
            .borrow_mut()
            .entry(job.to_string())
            .or_insert_with(|| {
                let sql = RusqliteSql::in_memory().expect("in-memory sqlite");
                Rc::new(JobObject::new(sql, 7))
            })
            .clone()
    }
}

impl Transport for Objects {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        let object = self.object(job);
        Ok(object.handle_text(&body).await)
    }
}

fn client() -> ObjectClient<Objects> {
    ObjectClient::new(Objects::default())
}

cronslot_core::conformance_suite!(client(), block_on, "cf-native");

#[test]
fn schema_1_record_loads() {
    let c = client();
    let objects = c.transport().clone();
    block_on(cronslot_core::conformance::schema_1_record_loads(
        &c,
        "cf-native-schema",
        |job: String, text: String| {
            let objects = objects.clone();
            async move { objects.object(&job).store().put_raw(&job, &text).unwrap() }
        },
    ));
}

#[test]
fn garbage_requests_get_errors_not_panics() {
    let objects = Objects::default();
    let object = objects.object("a");
    let spec = cronslot_core::manifest::parse_manifest(
        "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n",
        "t.toml",
    )
    .unwrap()
    .jobs
    .remove(0);
    let spec = serde_json::to_string(&cronslot_cf::spec_text::encode_spec(&spec)).unwrap();
    let wrong_job = format!(r#"{{"job":"b","spec":{spec},"op":"record"}}"#);
    let unknown_op = format!(r#"{{"job":"a","spec":{spec},"op":"launch"}}"#);
    let toml_spec =
        r#"{"job":"a","spec":"[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n","op":"record"}"#;
    for body in [
        "",
        "{",
        "null",
        r#"{"job":"a","spec":"x","op":{"status":{"now":"2026-01-01T00:00:00Z"}}}"#,
        &wrong_job,
        &unknown_op,
        toml_spec,
    ] {
        let answer = block_on(object.handle_text(body));
        assert!(
            answer.starts_with(r#"{"Err":{"bad_request":{"message":"#),
            "{body:?} → {answer}"
        );
    }
}
