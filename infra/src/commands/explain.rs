//! `cronslot explain`: a schedule in plain English, with its DST behaviour.

use cronslot_core::explain::{explain as explain_schedule, explain_dst};

use crate::cli::ExplainArgs;
use crate::exit::Failure;
use crate::parse::build_schedule;

pub fn exec(args: ExplainArgs) -> Result<(), Failure> {
    let schedule = build_schedule(&args.expr, &args.zone)?;
    println!("{}", explain_schedule(&schedule));
    if let Some(dst) = explain_dst(&schedule) {
        println!("{dst}");
    }
    Ok(())
}
