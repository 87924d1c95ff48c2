//! The background thread that opens and drives a store's connections.
//!
//! Every connection of a server store is opened, driven and used on one
//! thread with a current-thread tokio runtime that the store owns: callers
//! may sit on any runtime (the runner's per-worker runtimes, the CLI's, the
//! core's test executor) and only await a task's answer, so a caller's
//! runtime ending never strands a connection. The thread ends when the
//! driver is dropped (with the last clone of the store).

use std::future::Future;

use cronslot_core::coord::StoreError;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A store's background thread and its runtime.
#[derive(Debug)]
pub struct Driver {
    handle: Handle,
    /// The store as messages name it (`PostgreSQL store postgres://…`,
    /// without a password).
    label: String,
    /// Dropping it ends the background thread (and its connections).
    _stop: oneshot::Sender<()>,
}

impl Driver {
    /// Starts the thread, named `thread`; opens nothing yet. `label` names
    /// the store in messages, and must hold no secret.
    pub fn start(thread: &str, label: String) -> Result<Driver, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| cannot_start(&label, &e))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(thread.to_string())
            .spawn(move || {
                // Runs the connections and the store's tasks until the
                // driver is gone; dropping the runtime then closes the
                // connections.
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| cannot_start(&label, &e))?;
        Ok(Driver {
            handle,
            label,
            _stop: stop,
        })
    }

    /// Runs `task` on the store's runtime and waits for its answer, from
    /// whatever executor the caller is on.
    pub async fn run<T, F>(&self, task: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        match self.handle.spawn(task).await {
            Ok(answer) => answer,
            Err(e) => Err(StoreError::other(format!(
                "{}: the store's background task ended without an answer ({e}): this is a bug",
                self.label
            ))),
        }
    }

    /// Starts `task` on the store's runtime and does not wait for it: a
    /// listener that lives as long as the store (it ends with the
    /// background thread, when the last clone of the store is dropped).
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.handle.spawn(task));
    }

    /// The store as messages name it.
    pub fn label(&self) -> &str {
        &self.label
    }
}

fn cannot_start(label: &str, e: &std::io::Error) -> StoreError {
    StoreError::other(format!(
        "{label}: cannot start the store's background thread: {e}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::coord::exec::block_on;

    #[test]
    fn runs_tasks_on_its_own_thread_for_a_caller_without_a_runtime() {
        let driver = Driver::start("kit-test", "test store".to_string()).unwrap();
        let name =
            block_on(driver.run(async { Ok(std::thread::current().name().map(str::to_string)) }))
                .unwrap();
        assert_eq!(name.as_deref(), Some("kit-test"));
        let slept = block_on(driver.run(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            Ok(7)
        }));
        assert_eq!(slept, Ok(7));
        let failed: Result<(), _> =
            block_on(driver.run(async { Err(StoreError::unavailable("gone")) }));
        assert_eq!(failed, Err(StoreError::unavailable("gone")));
    }

    #[test]
    fn a_task_that_panics_is_an_error_that_names_the_store() {
        let driver = Driver::start("kit-test", "test store".to_string()).unwrap();
        let answer: Result<(), StoreError> = block_on(driver.run(async {
            let nothing: Option<()> = None;
            nothing
                .ok_or(())
                .map_err(|()| -> StoreError { panic!("a bug") })
        }));
        let e = answer.unwrap_err();
        assert!(
            e.message
                .starts_with("test store: the store's background task ended"),
            "{e}"
        );
    }
}
