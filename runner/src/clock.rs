//! The runner's clock: the real one, the real one corrected to a shared
//! store's clock (PostgreSQL and Redis judge leases by their own), or an accelerated
//! one for demos and tests.
//!
//! Every duration of the system (leases, heartbeats, command timeouts,
//! retry backoff, poll intervals) is in *clock* time: the coordinator only
//! ever sees `clock.now()`. Only sleeping touches real time, so sleeping is
//! the one place that converts: at `--speed 60` a 30 s clock-time sleep is
//! half a real second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cronslot_stores::AnyStore;
use jiff::{SignedDuration, Timestamp};

/// The fastest clock accepted: at 100 000 a real millisecond is 100 s of
/// clock time, already coarser than a command can start in.
pub const MAX_SPEED: f64 = 100_000.0;

/// No single real sleep is longer than this; the caller re-reads the clock
/// and sleeps again. It keeps far-future deadlines away from timer
/// overflow, and bounds how long a wall-clock jump can mislead a sleeper.
const MAX_REAL_SLEEP: Duration = Duration::from_secs(60);

/// A `--speed` that is not in `(0, MAX_SPEED]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedError {
    /// The speed that was asked for.
    pub speed: f64,
}

impl std::fmt::Display for SpeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "speed {} is out of range: it must be greater than 0 and at most {MAX_SPEED} \
             (1 is real time, 60 makes a minute pass per second)",
            self.speed
        )
    }
}

impl std::error::Error for SpeedError {}

/// Where `now` comes from. Cheap to clone; shared by every worker thread.
#[derive(Debug, Clone)]
pub struct Clock {
    kind: Kind,
}

/// How far a store's clock is ahead of this machine's, as last measured
/// (`None` before the first measurement).
pub type OffsetSource = Arc<dyn Fn() -> Option<SignedDuration> + Send + Sync>;

#[derive(Clone)]
enum Kind {
    /// The system clock, as cron daemons use it.
    Real,
    /// The system clock plus the store's offset from it.
    Corrected(OffsetSource),
    /// `start` at the real instant `origin`, then `speed` clock seconds per
    /// real second (measured on the monotonic clock, so it never jumps).
    Scaled {
        origin: Instant,
        start: Timestamp,
        speed: f64,
    },
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Real => f.write_str("Real"),
            Kind::Corrected(offset) => f.debug_tuple("Corrected").field(&offset()).finish(),
            Kind::Scaled {
                origin,
                start,
                speed,
            } => f
                .debug_struct("Scaled")
                .field("origin", origin)
                .field("start", start)
                .field("speed", speed)
                .finish(),
        }
    }
}

impl Clock {
    /// The system clock.
    pub fn real() -> Clock {
        Clock { kind: Kind::Real }
    }

    /// The system clock corrected by `offset`: how far the store's clock
    /// is ahead of this machine's, as the store last measured it. A fleet
    /// whose store judges leases by its own clock (PostgreSQL) times its
    /// runs by the same clock, so that a machine whose clock is off by
    /// minutes still stops a run when the store says its lease ends.
    pub fn corrected(offset: OffsetSource) -> Clock {
        Clock {
            kind: Kind::Corrected(offset),
        }
    }

    /// The clock runs on `store` are timed by: where the store's server
    /// clock judges its leases (PostgreSQL, Redis), the system clock
    /// corrected by the offset the store measures on every read (see
    /// [`Clock::corrected`]); else this clock itself. A store opened for an
    /// accelerated clock judges by the caller's (that clock), so it stays.
    pub fn timed_by(&self, store: &AnyStore) -> Clock {
        if !store.judges_by_server_clock() {
            return self.clone();
        }
        let offset_of = store.clone();
        Clock::corrected(Arc::new(move || offset_of.clock_offset()))
    }

    /// A clock that starts at the real now and runs `speed` times faster.
    pub fn accelerated(speed: f64) -> Result<Clock, SpeedError> {
        Clock::accelerated_from(Timestamp::now(), speed)
    }

    /// A clock that reads `start` now and runs `speed` times faster: tests
    /// pick `start` to place slots where they want them.
    pub fn accelerated_from(start: Timestamp, speed: f64) -> Result<Clock, SpeedError> {
        if !(speed.is_finite() && speed > 0.0 && speed <= MAX_SPEED) {
            return Err(SpeedError { speed });
        }
        Ok(Clock {
            kind: Kind::Scaled {
                origin: Instant::now(),
                start,
                speed,
            },
        })
    }

    /// Clock seconds per real second (1 for the real clock).
    pub fn speed(&self) -> f64 {
        match self.kind {
            Kind::Real | Kind::Corrected(_) => 1.0,
            Kind::Scaled { speed, .. } => speed,
        }
    }

    /// The clock's current reading: the system time, or for an accelerated
    /// clock its start plus the real time elapsed since times its speed.
    pub fn now(&self) -> Timestamp {
        match &self.kind {
            Kind::Real => Timestamp::now(),
            Kind::Corrected(offset) => {
                let now = Timestamp::now();
                offset()
                    .and_then(|d| now.checked_add(d).ok())
                    .unwrap_or(now)
            }
            Kind::Scaled {
                origin,
                start,
                speed,
            } => {
                let elapsed = origin.elapsed().as_secs_f64() * speed;
                let elapsed = Duration::try_from_secs_f64(elapsed).unwrap_or(Duration::MAX);
                let elapsed = SignedDuration::try_from(elapsed).unwrap_or(SignedDuration::MAX);
                start.checked_add(elapsed).unwrap_or(Timestamp::MAX)
            }
        }
    }

    /// The real time that `clock_time` takes to pass.
    pub fn to_real(&self, clock_time: Duration) -> Duration {
        let real = clock_time.as_secs_f64() / self.speed();
        Duration::try_from_secs_f64(real).unwrap_or(Duration::MAX)
    }

    /// The real time until the clock reads `t` (zero if it already does).
    pub fn real_until(&self, t: Timestamp) -> Duration {
        let ahead = t.duration_since(self.now());
        if ahead <= SignedDuration::ZERO {
            return Duration::ZERO;
        }
        self.to_real(Duration::try_from(ahead).unwrap_or(Duration::MAX))
    }

    /// Sleeps for `clock_time` of clock time.
    pub async fn sleep(&self, clock_time: Duration) {
        let until = add(self.now(), clock_time);
        self.sleep_until(until).await;
    }

    /// Sleeps until the clock reads `t` (at least; timers round up).
    pub async fn sleep_until(&self, t: Timestamp) {
        loop {
            let real = self.real_until(t);
            if real.is_zero() {
                return;
            }
            tokio::time::sleep(real.min(MAX_REAL_SLEEP)).await;
        }
    }
}

/// `t + d`, saturating at the end of time.
pub(crate) fn add(t: Timestamp, d: Duration) -> Timestamp {
    let d = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_speeds_out_of_range() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, MAX_SPEED * 2.0] {
            assert!(Clock::accelerated(bad).is_err(), "{bad}");
        }
        assert!(Clock::accelerated(MAX_SPEED).is_ok());
    }

    #[test]
    fn accelerated_time_runs_faster_and_converts_sleeps() {
        let start: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let clock = Clock::accelerated_from(start, 1000.0).unwrap();
        assert_eq!(
            clock.to_real(Duration::from_secs(60)),
            Duration::from_millis(60)
        );
        std::thread::sleep(Duration::from_millis(20));
        let passed = clock.now().duration_since(start);
        assert!(passed >= SignedDuration::from_secs(20), "{passed}");
        assert!(clock.real_until(start).is_zero());
    }

    #[test]
    fn a_corrected_clock_reads_the_store_clock() {
        let ahead = SignedDuration::from_mins(7);
        let offset = Arc::new(std::sync::Mutex::new(None));
        let source = Arc::clone(&offset);
        let clock = Clock::corrected(Arc::new(move || *source.lock().unwrap()));
        let drift = |clock: &Clock| clock.now().duration_since(Timestamp::now());
        assert!(
            drift(&clock).abs() < SignedDuration::from_secs(1),
            "no offset yet"
        );
        *offset.lock().unwrap() = Some(ahead);
        let d = drift(&clock);
        assert!((d - ahead).abs() < SignedDuration::from_secs(1), "{d}");
        assert_eq!(clock.speed(), 1.0);
    }
}
