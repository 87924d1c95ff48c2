//! `cronslot init`: creates what a store needs (the SQLite file, the
//! PostgreSQL schema, the DynamoDB table with TTL), and repairs the wakes
//! of records from before stores kept them (a Worker's Durable Objects
//! through its admin URL). Idempotent: what exists is left as it is.

use crate::cli::InitArgs;
use crate::exit::Failure;
use crate::store::StoreTarget;

pub fn exec(args: InitArgs) -> Result<(), Failure> {
    let target = StoreTarget::parse(&args.store, args.token_env.as_deref())?;
    println!("{}", target.init()?);
    Ok(())
}
