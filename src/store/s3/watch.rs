//! Request bodies sent under watch: an attempt whose body stops moving ends after the client's
//! timeout (30 s), however the connection trickles.
//!
//! Why: ureq's per-write timeout bounds one write(2), and a write(2) that copies even a few
//! bytes before the timeout returns them as a partial write, after which the next one waits
//! the whole timeout again. With the store stopped (SIGSTOP), the store's kernel still takes
//! a few more KiB now and then (its zero-window probes), so each attempt of an 8 MiB
//! UploadPart took three writes, about 92 s (strace: a write that filled the send buffer and
//! waited 30 s, one that copied 29 KiB in its 30 s, one that copied nothing), not 30 s. `c`
//! to a store stopped 0.6 s into a 200 MB upload exited after 446 s: the four parts in
//! flight, 32 + 4 × 92 s each (in parallel), then the abort's one attempt, 30 s. A peer that
//! reads a little every few seconds (a dying disk, a throttling middlebox) held an attempt
//! without end.
//!
//! So a body is handed to ureq through a reader, one piece per ureq output buffer ([`PIECE`],
//! asked for when the piece before it was written to the socket), and a watchdog thread shuts
//! the attempt's connection down when no piece was asked for during the timeout. The kernel
//! wakes a blocked writer when half its send buffer is free, so on a connection that moves
//! this is what the per-write timeout asked already (a wake within the timeout); what it no
//! longer allows is chaining such writes without end. After the last piece was asked for,
//! that piece's write and the wait for the answer get two timeouts (the wait alone is still
//! bounded by ureq's per-read timeout). The attempt then fails as a timeout, retried like any
//! other.
//!
//! Each watched attempt runs on an agent no other request uses meanwhile, since
//! `Agent::shutdown` closes every connection of the agent and its clones: the other parts'
//! connections must not go with it. The agent is leased for the attempt ([`super::agents`]),
//! and one that was not shut down is leased again with its open connection: a handshake per
//! body sent (one TCP and TLS handshake per 8 MiB part) was the cost of a fresh agent each.

use std::io::{self, Read};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of ureq's output buffer, set on the agent: one piece of a watched body.
pub(super) const PIECE: usize = 128 << 10;

/// What the watchdog watches.
struct State {
    /// When ureq last asked for a piece (or the attempt began).
    last: Instant,
    /// The whole body was handed over.
    handed_over: bool,
    /// The attempt ended (the watchdog is to stop).
    ended: bool,
    /// The watchdog shut the connection down, and when.
    stalled: Stall,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Whether, and when, the watchdog ended an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stall {
    /// It did not: the attempt ended on its own.
    No,
    /// No piece of the body was asked for during the timeout.
    Body,
    /// The whole body was handed over, and no answer came within two timeouts.
    Answer,
}

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    s.0.lock().unwrap_or_else(|p| p.into_inner())
}

/// A body given to ureq piece by piece, noting each piece for the watchdog.
struct Body<'a> {
    rest: &'a [u8],
    state: Shared,
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        let mut s = lock(&self.state);
        s.last = Instant::now();
        s.handed_over = self.rest.is_empty();
        Ok(n)
    }
}

/// Sends `body` with the request `req` makes on `agent`, which no other request uses until
/// the answer is dropped (module doc), the connection shut down when the body does not move
/// for `timeout`. Returns ureq's answer and whether the watchdog ended the attempt (then the
/// agent is shut down: never to be used again).
pub(super) fn send(
    agent: &ureq::Agent,
    timeout: Duration,
    req: impl FnOnce(&ureq::Agent) -> ureq::RequestBuilder<ureq::typestate::WithBody>,
    body: &[u8],
) -> (Result<ureq::http::Response<ureq::Body>, ureq::Error>, Stall) {
    let state: Shared = Arc::new((
        Mutex::new(State {
            last: Instant::now(),
            handed_over: body.is_empty(),
            ended: false,
            stalled: Stall::No,
        }),
        Condvar::new(),
    ));
    let b = req(agent).header("content-length", body.len().to_string());
    let dog = {
        let (state, mut agent) = (Arc::clone(&state), Some(agent.clone()));
        std::thread::Builder::new()
            .name("krypta-s3-watch".into())
            .spawn(move || {
                let mut s = lock(&state);
                while !s.ended {
                    let limit = if s.handed_over { 2 * timeout } else { timeout };
                    let left = limit.saturating_sub(s.last.elapsed());
                    if left.is_zero() {
                        // Shut down under the lock: `stalled` set means the connection was
                        // shut down by the watchdog, before the attempt was seen to end.
                        s.stalled = if s.handed_over {
                            Stall::Answer
                        } else {
                            Stall::Body
                        };
                        if let Some(a) = agent.take() {
                            a.shutdown();
                        }
                        return;
                    }
                    s = state
                        .1
                        .wait_timeout(s, left)
                        .map_or_else(|p| p.into_inner().0, |r| r.0);
                }
            })
    };
    let mut reader = Body {
        rest: body,
        state: Arc::clone(&state),
    };
    // A watchdog the OS refuses is done without: the attempt is bounded by ureq's timeouts
    // alone, as before.
    let r = b.send(ureq::SendBody::from_reader(&mut reader));
    let stalled = {
        let mut s = lock(&state);
        s.ended = true;
        state.1.notify_all();
        s.stalled
    };
    if let Ok(d) = dog {
        let _ = d.join();
    }
    (r, stalled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    fn config(t: Duration) -> ureq::config::Config {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(t))
            .timeout_per_read(Some(t))
            .timeout_per_write(Some(t))
            .output_buffer_size(PIECE)
            .build()
    }

    /// A server that takes 2 KiB of the request every 100 ms (20 KiB/s) for 5 s and never
    /// answers: each write(2) moves, so ureq's per-write timeout never ends the request.
    fn trickle() -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 2048];
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        });
        (addr, h)
    }

    #[test]
    fn a_trickling_upload_ends_after_the_timeout_without_a_piece_moving() {
        let (addr, server) = trickle();
        let t = Duration::from_millis(800);
        let body = vec![7u8; 64 << 20];
        let t0 = Instant::now();
        let (r, stalled) = send(
            &ureq::Agent::new_with_config(config(t)),
            t,
            |a| a.put(format!("http://{addr}/b/k")),
            &body,
        );
        let took = t0.elapsed();
        assert!(r.is_err());
        assert_eq!(stalled, Stall::Body);
        // The socket buffers fill at once, then no piece moves: the timeout and a little
        // (0.80 s measured; per-write timeouts alone, restarted by each write that moved a
        // few bytes: 3.4 s).
        assert!(took < 2 * t, "{took:?}");
        server.join().unwrap();
    }

    /// Through the client: each attempt of an UploadPart to a trickling store ends after about
    /// the timeout (without the watch: never, each write moving), reported as a timeout.
    #[test]
    fn an_upload_part_to_a_trickling_store_gives_up_within_its_attempts_timeouts() {
        let (addr, server) = trickle();
        let url = super::super::ObjectUrl::parse("s3://b/k.kry").unwrap();
        let s = super::super::config::Settings {
            keys: super::super::config::Keys {
                access_key_id: "AKIDWATCHTEST".into(),
                secret_access_key: "secretwatchtest".into(),
                session_token: None,
            },
            credentials_from: "the test".into(),
            region: "us-east-1".into(),
            endpoint: Some(format!("http://{addr}")),
            path_style: Some(true),
            // One connection: the trickling server serves one, the second attempt meets a
            // refused connection (the listener is gone), which is retryable too.
            max_attempts: 1,
            ca_bundle: None,
        };
        let t = Duration::from_millis(800);
        let c = super::super::client::Client::with_settings(&url, s)
            .unwrap()
            .with_timeout(t);
        let t0 = Instant::now();
        let e = c.upload_part("id", 1, &vec![7u8; 64 << 20]).unwrap_err();
        let took = t0.elapsed();
        let msg = e.to_string();
        assert!(took < 2 * t, "{took:?}: {msg}");
        assert!(
            msg.contains("no answer from")
                && msg.contains("the request body did not move for 0.8 s")
                && msg.contains("gave up after 1 attempt(s)"),
            "{msg}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_body_that_moves_is_sent_whole() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let body: Vec<u8> = (0..16_000_000u32).map(|i| (i % 251) as u8).collect();
        let want = body.clone();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0u8; 256 << 10];
            // Head, then the body: 256 KiB per 50 ms for its first 8 MiB (the kernel wakes the
            // writer when half its send buffer, up to 4 MiB on loopback, is free: every 0.4 s,
            // under the timeout), then as fast as it comes.
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let head = String::from_utf8_lossy(&got[..head_end]).to_lowercase();
            assert!(head.contains("content-length: 16000000\r\n"), "{head}");
            assert!(!head.contains("transfer-encoding"), "{head}");
            let mut data = got[head_end..].to_vec();
            while data.len() < 16_000_000 {
                if data.len() < 8 << 20 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0);
                data.extend_from_slice(&buf[..n]);
            }
            c.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
            data
        });
        let t = Duration::from_secs(2);
        let (r, stalled) = send(
            &ureq::Agent::new_with_config(config(t)),
            t,
            |a| a.put(format!("http://{addr}/b/k")),
            &body,
        );
        assert_eq!(r.unwrap().status(), 200);
        assert_eq!(stalled, Stall::No);
        assert!(server.join().unwrap() == want);
    }
}
