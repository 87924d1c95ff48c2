//! The little SQL the job's object needs, over any SQLite: the Durable
//! Object's `storage.sql` in workerd, `rusqlite` in native tests. Keeping
//! the statements here (not under `cfg(wasm32)`) is what lets them be
//! tested against a real SQLite without a Worker runtime.

use std::fmt;

/// A value bound to or read from a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// `NULL`.
    Null,
    /// An `INTEGER`.
    Integer(i64),
    /// A `REAL`.
    Real(f64),
    /// A `TEXT`.
    Text(String),
    /// A `BLOB`.
    Blob(Vec<u8>),
}

/// A failed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError(pub String);

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs one statement synchronously and returns its rows. Synchronous on
/// purpose: in a Durable Object, code that never awaits between a read and
/// a write cannot be interleaved with another request, and the writes of
/// one request are committed together.
pub trait Sql {
    /// Runs `sql` with `params` bound to its `?` placeholders, in order;
    /// returns every row, each a value per column.
    fn exec(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError>;
}

impl SqlValue {
    /// The text of a `Text`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            SqlValue::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The integer of an `Integer`, or of a `Real` that holds a whole
    /// number JavaScript represents exactly.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            SqlValue::Integer(i) => Some(*i),
            // JavaScript numbers: workerd may hand integers back as floats.
            SqlValue::Real(r) if r.fract() == 0.0 && r.abs() < 9.007_199_254_740_992e15 => {
                Some(*r as i64)
            }
            _ => None,
        }
    }
}

/// The object's alarm (one per Durable Object), set and deleted from the
/// same synchronous code as the SQL writes: in a Durable Object, storage
/// writes and `setAlarm`/`deleteAlarm` issued without an await in between
/// commit together, so a record and its alarm never disagree after a
/// crash. Natively, tests record the calls.
pub trait Alarm {
    /// Sets the alarm to `at` (milliseconds since the epoch), replacing
    /// any; a time already past fires at once.
    fn set(&self, at_ms: i64) -> Result<(), SqlError>;
    /// Deletes the alarm, if one is set.
    fn delete(&self) -> Result<(), SqlError>;
}

/// No alarm: for stores that are not a Durable Object's (the simulation's
/// model of the object's store). Nothing is woken through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAlarm;

impl Alarm for NoAlarm {
    fn set(&self, _at_ms: i64) -> Result<(), SqlError> {
        Ok(())
    }

    fn delete(&self) -> Result<(), SqlError> {
        Ok(())
    }
}
