//! Staged removals: a single-use token per staged action, bound to the user who staged it and
//! valid for a limited time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone)]
pub(crate) struct StagedRemoval {
    pub(crate) user: String,
    pub(crate) item_id: String,
    pub(crate) expires: tokio::time::Instant,
}

/// Single-use confirmation tokens, bound to the user who staged them.
#[derive(Debug, Default)]
pub(crate) struct Confirmations {
    pub(crate) pending: Mutex<HashMap<String, StagedRemoval>>,
}

/// Why a confirmation token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenRefusal {
    Unknown,
    OtherUser,
    Expired,
}

impl Confirmations {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StagedRemoval>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn stage(&self, user: &str, item_id: &str, ttl: Duration) -> String {
        let token = uuid::Uuid::new_v4().to_string();
        let now = tokio::time::Instant::now();
        let mut pending = self.lock();
        pending.retain(|_, staged| staged.expires > now);
        pending.insert(
            token.clone(),
            StagedRemoval {
                user: user.to_owned(),
                item_id: item_id.to_owned(),
                expires: now + ttl,
            },
        );
        token
    }

    /// Take the token out (so it is spent even when the checks fail), then check it.
    pub(crate) fn redeem(&self, token: &str, user: &str) -> Result<StagedRemoval, TokenRefusal> {
        let now = tokio::time::Instant::now();
        let staged = {
            let mut pending = self.lock();
            let staged = pending.remove(token.trim());
            pending.retain(|_, s| s.expires > now);
            staged
        };
        let staged = staged.ok_or(TokenRefusal::Unknown)?;
        if staged.user != user {
            return Err(TokenRefusal::OtherUser);
        }
        if staged.expires <= now {
            return Err(TokenRefusal::Expired);
        }
        Ok(staged)
    }
}
