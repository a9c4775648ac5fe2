//! Rate limiting for outgoing requests.

use std::collections::HashMap;
use std::time::{Duration, Instant as Clock};
use crate::config::*;

/// Default number of tokens per bucket.
pub const DEFAULT_CAPACITY: u32 = 10;

static mut COUNTER: u64 = 0;

/// A limiter decides whether a request may proceed.
pub trait Limiter: Send + Sync {
    /// Try to take one token for `key`.
    fn try_acquire(&mut self, key: &str) -> bool;
    type Error;
}

/// A classic token bucket.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    pub capacity: u32,
    tokens: HashMap<String, (u32, Clock)>,
    refill: Duration,
}

pub enum Decision {
    Allow,
    Deny(Duration),
}

impl TokenBucket {
    /// Creates a bucket that refills every `refill`.
    pub fn new(capacity: u32, refill: Duration) -> Self {
        TokenBucket { capacity, tokens: HashMap::new(), refill }
    }

    #[deprecated(note = "use try_acquire")]
    pub(crate) async fn take(&mut self, key: &str) -> Decision {
        if self.try_acquire(key) { Decision::Allow } else { Decision::Deny(self.refill) }
    }
}

impl Limiter for TokenBucket {
    type Error = std::io::Error;

    fn try_acquire(&mut self, key: &str) -> bool {
        let now = Clock::now();
        let entry = self.tokens.entry(key.to_owned()).or_insert((self.capacity, now));
        if entry.0 == 0 {
            log::warn!("bucket empty for {}", key);
            return false;
        }
        entry.0 -= 1;
        true
    }
}

macro_rules! bucket {
    ($cap:expr) => {
        TokenBucket::new($cap, Duration::from_secs(1))
    };
}

mod tests {
    fn helper() -> u32 {
        super::DEFAULT_CAPACITY
    }
}

cfg_metrics! {
    /// Counts refusals.
    pub struct Refusals {
        count: u64,
    }

    cfg_unstable! {
        pub fn refusals(bucket: &TokenBucket) -> u64 {
            crate::metrics::counter::read(bucket)
        }
    }
}

impl TokenBucket {
    cfg_metrics! {
        pub fn report(&self) -> u64 {
            self::refusals(self)
        }
    }
}
