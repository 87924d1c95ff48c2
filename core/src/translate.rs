//! Translation of schedules to platform cron dialects.
