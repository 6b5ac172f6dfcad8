//! The HTTP transport's table of legacy sessions: bounded in number, in
//! total and per principal, and forgetting sessions left idle too long.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::session::Session;

/// The open sessions, by `Mcp-Session-Id`.
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
    max_per_principal: Option<usize>,
    idle_timeout: Duration,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("open", &self.len())
            .field("max", &self.max)
            .field("max_per_principal", &self.max_per_principal)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// Why a session was not added.
#[derive(Debug, PartialEq, Eq)]
pub enum Full {
    /// The table is full of sessions that are in use.
    Table {
        /// The most sessions open at once.
        max: usize,
    },
    /// The session's principal has as many sessions open as it may.
    Principal {
        /// The most sessions one principal may have open.
        max: usize,
    },
}

impl Sessions {
    /// An empty table of at most `max` sessions, each forgotten once idle
    /// for `idle_timeout`.
    pub fn new(max: usize, idle_timeout: Duration) -> Self {
        Sessions {
            open: Mutex::default(),
            max,
            max_per_principal: None,
            idle_timeout,
        }
    }

    /// The same table, where one principal may have at most `max` sessions
    /// open (`None`: as many as the table holds).
    pub fn with_max_per_principal(mut self, max: Option<usize>) -> Self {
        self.max_per_principal = max;
        self
    }

    /// How long a session may stay idle.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// Adds a session. A principal with as many sessions as it may have is
    /// refused (its expired sessions end first): only ending one (DELETE) or
    /// letting one expire makes room. When the table is full, expired
    /// sessions end first, then the one idle the longest (its client gets
    /// 404 and initializes again); a session with a request running or its
    /// stream open is never ended to make room, so when every session is in
    /// use the new one is refused.
    pub fn insert(&self, session: Arc<Session>) -> Result<(), Full> {
        let mut open = self.lock();
        if let Some(max) = self.max_per_principal {
            let principal = session.principal();
            let held = |open: &HashMap<String, Arc<Session>>| {
                open.values().filter(|s| s.principal() == principal).count()
            };
            if held(&open) >= max {
                self.expire_in(&mut open);
            }
            if held(&open) >= max {
                crate::metrics::limit_hit(crate::metrics::Limit::SessionsPerPrincipal);
                return Err(Full::Principal { max });
            }
        }
        if open.len() >= self.max {
            self.expire_in(&mut open);
        }
        if open.len() >= self.max {
            let longest_idle = open
                .iter()
                .filter_map(|(id, s)| s.idle_for().map(|idle| (idle, id.clone())))
                .max();
            let Some((idle, id)) = longest_idle else {
                return Err(Full::Table { max: self.max });
            };
            tracing::warn!(session = %id, idle_secs = idle.as_secs(), max = self.max,
                "session ended to make room for a new one (--max-sessions)");
            if let Some(evicted) = open.remove(&id) {
                evicted.close();
            }
        }
        open.insert(session.id().to_owned(), session);
        crate::metrics::sessions_open(open.len());
        Ok(())
    }

    /// The session with this id, if it is open and belongs to `principal`
    /// (another principal's session is reported as unknown, like a dead one).
    pub fn get(&self, id: &str, principal: &str) -> Option<Arc<Session>> {
        let session = self.lock().get(id).cloned()?;
        (session.principal() == principal).then(|| {
            session.touch();
            session
        })
    }

    /// Ends the session with this id if it belongs to `principal`; false
    /// when there is no such session.
    pub fn end(&self, id: &str, principal: &str) -> bool {
        let mut open = self.lock();
        let Some(session) = open.get(id).filter(|s| s.principal() == principal) else {
            return false;
        };
        session.close();
        open.remove(id);
        crate::metrics::sessions_open(open.len());
        true
    }

    /// Ends every session idle for longer than the idle timeout; returns
    /// how many.
    pub fn expire(&self) -> usize {
        self.expire_in(&mut self.lock())
    }

    fn expire_in(&self, open: &mut HashMap<String, Arc<Session>>) -> usize {
        let before = open.len();
        open.retain(|id, session| {
            let expired = session
                .idle_for()
                .is_some_and(|idle| idle > self.idle_timeout);
            if expired {
                tracing::info!(session = %id, "session expired (idle)");
                session.close();
            }
            !expired
        });
        crate::metrics::sessions_open(open.len());
        before - open.len()
    }

    /// Ends every session, letting running requests finish (the server is
    /// shutting down).
    pub fn end_all(&self) {
        for (_, session) in self.lock().drain() {
            session.stop_waiting();
        }
        crate::metrics::sessions_open(0);
    }

    /// How many sessions are open.
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn session(principal: &str) -> Arc<Session> {
        Arc::new(Session::new(principal, "2025-11-25", json!({})))
    }

    #[test]
    fn sessions_belong_to_their_principal() {
        let sessions = Sessions::new(4, Duration::from_secs(60));
        let a = session("alice");
        sessions.insert(a.clone()).unwrap();
        assert!(sessions.get(a.id(), "alice").is_some());
        assert!(sessions.get(a.id(), "mallory").is_none());
        assert!(!sessions.end(a.id(), "mallory"));
        assert!(sessions.end(a.id(), "alice"));
        assert!(sessions.get(a.id(), "alice").is_none());
        assert!(!sessions.end(a.id(), "alice"));
    }

    #[test]
    fn a_full_table_makes_room_only_from_idle_sessions() {
        let sessions = Sessions::new(2, Duration::from_secs(3600));
        let (a, b) = (session("p"), session("p"));
        sessions.insert(a.clone()).unwrap();
        sessions.insert(b.clone()).unwrap();
        let busy_a = a.in_flight().register(&json!(1));
        let busy_b = b.open_stream().unwrap();
        assert!(sessions.insert(session("p")).is_err(), "both in use");
        drop(busy_a);
        sessions.insert(session("p")).unwrap();
        assert!(
            sessions.get(a.id(), "p").is_none(),
            "the idle one made room"
        );
        assert!(sessions.get(b.id(), "p").is_some(), "the busy one stays");
        assert_eq!(sessions.len(), 2);
        drop(busy_b);
    }

    #[test]
    fn a_principal_may_hold_only_its_share() {
        let sessions = Sessions::new(8, Duration::from_secs(3600)).with_max_per_principal(Some(2));
        let (a, b) = (session("alice"), session("alice"));
        sessions.insert(a.clone()).unwrap();
        sessions.insert(b).unwrap();
        assert_eq!(
            sessions.insert(session("alice")),
            Err(Full::Principal { max: 2 })
        );
        sessions.insert(session("bob")).unwrap();
        assert!(sessions.end(a.id(), "alice"));
        sessions.insert(session("alice")).unwrap();
        assert_eq!(sessions.len(), 3);
    }

    #[test]
    fn expired_sessions_free_their_principals_share() {
        let sessions = Sessions::new(8, Duration::ZERO).with_max_per_principal(Some(1));
        sessions.insert(session("alice")).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        sessions.insert(session("alice")).unwrap();
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn expiry_ends_only_sessions_idle_too_long() {
        let sessions = Sessions::new(4, Duration::ZERO);
        let (idle, busy) = (session("p"), session("p"));
        sessions.insert(idle.clone()).unwrap();
        sessions.insert(busy.clone()).unwrap();
        let _running = busy.in_flight().register(&json!(1));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(sessions.expire(), 1);
        assert!(sessions.get(idle.id(), "p").is_none());
        assert!(sessions.get(busy.id(), "p").is_some());
    }
}
