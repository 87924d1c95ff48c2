//! cronslot on AWS: EventBridge (Scheduler and Rules) fires one Lambda; slot
//! state lives in one DynamoDB table and every decision is stored with a
//! conditional write.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

pub mod dynamo;
pub mod lambda;

pub use lambda::{JobError, Jobs, ManifestSource, RunContext, run, serve};
