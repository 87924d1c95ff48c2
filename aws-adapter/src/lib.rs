//! cronslot on AWS: EventBridge (Scheduler and Rules) fires one Lambda; slot
//! state lives in one DynamoDB table and every decision is stored with a
//! conditional write.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// The Lambda's `serve` future holds the store's and the handler's futures, nested
// deeper than the compiler's default layout depth.
#![recursion_limit = "256"]

/// The DynamoDB store the Lambda keeps its state in (`cronslot-dynamodb`).
pub use cronslot_dynamodb as dynamo;
pub mod lambda;

pub use lambda::{JobError, Jobs, ManifestSource, RunContext};
#[cfg(feature = "lambda")]
pub use lambda::{run, serve};
