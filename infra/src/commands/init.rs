//! `cronslot init`: creates what a store needs (the SQLite file, the
//! PostgreSQL schema, the DynamoDB table with TTL), and repairs the wakes
//! of records from before stores kept them (a Worker's Durable Objects
//! through its admin URL). Idempotent: what exists is left as it is.
//! `--format json` prints [`InitDoc`](crate::store::jobs::InitDoc) when the
//! store is ready, nothing when init failed.

use clap::Args;

use crate::cli::{Format, StoreFlag};
use crate::exit::Failure;
use crate::format::to_json;
use crate::store::StoreTarget;

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub store: StoreFlag,
    /// With an https:// store: the environment variable that holds the
    /// Worker's admin token (its CRONSLOT_ADMIN_TOKEN secret).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Output format: text, or json (what was created, already there or
    /// repaired, as one document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn exec(args: InitArgs) -> Result<(), Failure> {
    let target = StoreTarget::parse(&args.store, args.token_env.as_deref())?;
    let done = target.init()?;
    match args.format {
        Format::Text => println!("{}", done.text),
        Format::Json => println!("{}", to_json(&done.doc)?),
    }
    Ok(())
}
