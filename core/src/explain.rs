//! Plain-English descriptions of schedules.
