//! The HTTP agents (ureq connection pools) of a run: one set per endpoint, shared by every
//! client of that endpoint (the probe, the sink, the archive's and the base's sources), so
//! that requests and multipart parts reuse open connections instead of making a TCP (and
//! TLS) handshake each.
//!
//! Why two kinds: a request with a body is sent under watch ([`super::watch`]), whose
//! watchdog ends a stalled attempt with `Agent::shutdown`, and that closes every connection
//! of the agent and its clones, the ones other threads are using included. So such a request
//! leases an agent of its own from [`Agents::lease`] for its attempt (until its answer's body
//! is dropped): no other request runs on it meanwhile, and an agent that was shut down is
//! dropped, never returned ([`Lease::spoil`]). An attempt that ended on its own returns the
//! agent, with its open connection, for the next part. Requests without a body (GET, HEAD,
//! DELETE, an empty POST) are never shut down and share one agent ([`Agents::shared`]).
//!
//! Measured (2026-12-07, loopback SeaweedFS, `c -s` of 200 MiB of random data: 25 parts of
//! 8 MiB, 4 in flight; `connect(2)` counted with strace): 28 connections for 28 requests
//! before (one per part, one per client), 5 after (one per part in flight, one shared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Agents kept for leases at most (the parts in flight, `sink::MAX_IN_FLIGHT`, and a few
/// more); an agent returned beyond that is dropped with its connection.
const IDLE_AGENTS: usize = 8;

/// The agents of one endpoint and configuration (module doc).
pub(super) struct Agents {
    config: ureq::config::Config,
    shared: ureq::Agent,
    idle: Mutex<Vec<ureq::Agent>>,
}

/// An agent leased for one attempt of a request with a body; returned to its [`Agents`] when
/// dropped, unless spoiled.
pub(crate) struct Lease {
    agent: Option<ureq::Agent>,
    home: Arc<Agents>,
}

impl Agents {
    /// New agents of `config`, shared by no one else (tests with their own timeouts).
    pub(super) fn new(config: ureq::config::Config) -> Arc<Agents> {
        Arc::new(Agents {
            shared: ureq::Agent::new_with_config(config.clone()),
            config,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The agents of this run for `key` (the endpoint and what else makes the configuration:
    /// CA bundle, timeouts), made with `config` the first time.
    pub(super) fn for_endpoint(key: String, config: ureq::config::Config) -> Arc<Agents> {
        static RUN: OnceLock<Mutex<HashMap<String, Arc<Agents>>>> = OnceLock::new();
        let mut m = RUN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Arc::clone(m.entry(key).or_insert_with(|| Agents::new(config)))
    }

    /// The agent of requests without a body.
    pub(super) fn shared(&self) -> &ureq::Agent {
        &self.shared
    }

    /// The configuration of every agent here.
    #[cfg(test)]
    pub(super) fn config(&self) -> &ureq::config::Config {
        &self.config
    }

    /// An agent no other request uses until the lease is dropped: an idle one (with its open
    /// connection) or a new one.
    pub(super) fn lease(self: &Arc<Self>) -> Lease {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        Lease {
            agent: Some(idle.unwrap_or_else(|| ureq::Agent::new_with_config(self.config.clone()))),
            home: Arc::clone(self),
        }
    }

    /// Agents idle now (tests).
    #[cfg(test)]
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Lease {
    /// The leased agent.
    pub(super) fn agent(&self) -> &ureq::Agent {
        self.agent
            .as_ref()
            .expect("a lease holds its agent until dropped")
    }

    /// Drops the agent instead of returning it: it was shut down (its connections closed,
    /// new requests on it fail).
    pub(super) fn spoil(mut self) {
        self.agent = None;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(a) = self.agent.take() {
            let mut idle = self.home.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < IDLE_AGENTS {
                idle.push(a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_agent_is_leased_again_and_a_spoiled_one_is_not() {
        let a = Agents::new(ureq::Agent::config_builder().build());
        let l1 = a.lease();
        let l2 = a.lease();
        assert_eq!(a.idle(), 0);
        drop(l1);
        assert_eq!(a.idle(), 1);
        l2.spoil();
        assert_eq!(a.idle(), 1);
        let _l3 = a.lease();
        assert_eq!(a.idle(), 0);
        // At most IDLE_AGENTS are kept.
        let many: Vec<Lease> = (0..IDLE_AGENTS + 3).map(|_| a.lease()).collect();
        drop(many);
        assert_eq!(a.idle(), IDLE_AGENTS);
    }

    #[test]
    fn one_endpoint_has_one_set_of_agents_per_run() {
        let c = || ureq::Agent::config_builder().build();
        let x = Agents::for_endpoint("http://127.0.0.1:1\0test-a".into(), c());
        let y = Agents::for_endpoint("http://127.0.0.1:1\0test-a".into(), c());
        let z = Agents::for_endpoint("http://127.0.0.1:2\0test-a".into(), c());
        assert!(Arc::ptr_eq(&x, &y));
        assert!(!Arc::ptr_eq(&x, &z));
    }
}
