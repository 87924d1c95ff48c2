//! `cronslot init`: creates what a store needs (the SQLite file, the
//! PostgreSQL schema, the DynamoDB table with TTL). Idempotent: what exists
//! is left as it is.

use crate::cli::InitArgs;
use crate::exit::Failure;
use crate::store::StoreTarget;

pub fn exec(args: InitArgs) -> Result<(), Failure> {
    let target = StoreTarget::parse_for_jobs(&args.store)?;
    println!("{}", target.init()?);
    Ok(())
}
