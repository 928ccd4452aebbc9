//! The counting TCP proxy the object-storage tests put between krypta and the server: it
//! counts bytes, connections and requests, and can answer `503 SlowDown`, slow a transfer,
//! lose the answer to one request ([`Lose`]: the request reaches the server, which carries it
//! out and answers, and krypta's connection is closed before the answer reaches it), change
//! one byte of one request's body on its way to the server ([`Flip`]), or one byte of an
//! object read on its way to krypta ([`FlipDown`]).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy saw, and how it behaves.
#[derive(Default)]
pub struct ProxyState {
    /// Bytes from the server to krypta.
    pub down: AtomicU64,
    /// Bytes from krypta to the server.
    pub up: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Request heads seen (`\r\n\r\n` in krypta's bytes: exact when requests have no body).
    pub requests: AtomicU64,
    /// The next this many connections get `503 SlowDown` instead of the server.
    pub slow_down: AtomicU32,
    /// Bytes per second per connection and direction (0: unlimited).
    pub rate: AtomicU64,
    /// The request whose answer is lost (taken when it is met).
    pub lose: Mutex<Option<Lose>>,
    /// Every request line (`METHOD TARGET`, the target with its signed query), in order.
    pub seen: Mutex<Vec<String>>,
    /// The request lines whose answers were lost.
    pub lost: Mutex<Vec<String>>,
    /// The request whose body gets one byte changed (taken when it is met).
    pub flip: Mutex<Option<Flip>>,
    /// The request lines whose bodies had a byte changed.
    pub flipped: Mutex<Vec<String>>,
    /// The object byte changed in the answer to the GET that reads it (taken when met).
    pub flip_down: Mutex<Option<FlipDown>>,
    /// The Range headers of the GETs whose answers had a byte changed.
    pub flipped_down: Mutex<Vec<String>>,
}

/// Which answer the proxy changes on its way to krypta: the `nth` (1-based) GET whose
/// `Range: bytes=A-B` holds object byte `at` gets that byte of its answer's body inverted
/// (the stored object is not changed: a GET of it again reads it as stored).
#[derive(Debug, Clone)]
pub struct FlipDown {
    pub at: u64,
    pub nth: u32,
}

/// Which request's body the proxy changes, and where: the `nth` (1-based) request whose
/// method is `method` and whose target contains `target` gets its body byte `at` inverted
/// on the way to the server (a body shorter than that is left alone).
#[derive(Debug, Clone)]
pub struct Flip {
    pub method: &'static str,
    pub target: &'static str,
    pub nth: u32,
    pub at: u64,
}

/// Which request's answer the proxy loses: the `nth` (1-based) request whose method is
/// `method` and whose target (path and query) contains `target`; an empty `method` or
/// `target` matches any.
#[derive(Debug, Clone)]
pub struct Lose {
    pub method: &'static str,
    pub target: &'static str,
    pub nth: u32,
}

impl Lose {
    /// The answer to the first `method` request whose target contains `target`.
    pub fn first(method: &'static str, target: &'static str) -> Lose {
        Lose {
            method,
            target,
            nth: 1,
        }
    }

    /// The answer to the `nth` request of all.
    pub fn nth(nth: u32) -> Lose {
        Lose {
            method: "",
            target: "",
            nth,
        }
    }
}

/// A counting TCP proxy on a free loopback port in front of `upstream`.
pub struct Proxy {
    pub addr: SocketAddr,
    pub state: Arc<ProxyState>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let state = Arc::new(ProxyState::default());
        let st = Arc::clone(&state);
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(client) = c else { continue };
                st.connections.fetch_add(1, Ordering::SeqCst);
                let st = Arc::clone(&st);
                std::thread::spawn(move || serve(client, upstream, st));
            }
        });
        Proxy { addr, state }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn down(&self) -> u64 {
        self.state.down.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Connections krypta opened.
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Loses the answer to the request `rule` names (see [`Lose`]).
    pub fn lose(&self, rule: Lose) {
        *self.state.lose.lock().unwrap() = Some(rule);
    }

    /// Changes one byte of the body of the request `rule` names (see [`Flip`]).
    pub fn flip(&self, rule: Flip) {
        *self.state.flip.lock().unwrap() = Some(rule);
    }

    /// Changes one object byte in the answer `rule` names (see [`FlipDown`]).
    pub fn flip_down(&self, rule: FlipDown) {
        *self.state.flip_down.lock().unwrap() = Some(rule);
    }

    /// The Range headers of the GETs whose answers had a byte changed.
    pub fn flipped_down(&self) -> Vec<String> {
        self.state.flipped_down.lock().unwrap().clone()
    }

    /// The request lines whose bodies had a byte changed.
    pub fn flipped(&self) -> Vec<String> {
        self.state.flipped.lock().unwrap().clone()
    }

    /// The request lines whose answers were lost.
    pub fn lost(&self) -> Vec<String> {
        self.state.lost.lock().unwrap().clone()
    }

    /// Every request line seen (`METHOD TARGET`).
    pub fn seen(&self) -> Vec<String> {
        self.state.seen.lock().unwrap().clone()
    }

    pub fn reset(&self) {
        self.state.down.store(0, Ordering::SeqCst);
        self.state.up.store(0, Ordering::SeqCst);
        self.state.requests.store(0, Ordering::SeqCst);
        self.state.connections.store(0, Ordering::SeqCst);
    }
}

fn serve(mut client: TcpStream, upstream: SocketAddr, st: Arc<ProxyState>) {
    let injected = st
        .slow_down
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if injected {
        let mut head = Vec::new();
        let mut b = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match client.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&b[..n]),
            }
        }
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
        let _ = write!(
            client,
            "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let st2 = Arc::clone(&st);
    // Set by the upward pump when it forwards the request whose answer is lost; HTTP/1.1
    // without pipelining (ureq) sends a request only after reading the previous answer, so
    // every byte the server sends after that belongs to the lost answer.
    let swallow = Arc::new(AtomicBool::new(false));
    let swallow2 = Arc::clone(&swallow);
    // Likewise the answer to the GET a FlipDown names is the next one the server sends: the
    // upward pump sets where in its body the byte to change is.
    let down_flip = Arc::new(Mutex::new(None::<u64>));
    let down_flip2 = Arc::clone(&down_flip);
    let up = std::thread::spawn(move || pump(c2, s2, &st2, true, &swallow2, &down_flip2));
    pump(server, client, &st, false, &swallow, &down_flip);
    let _ = up.join();
}

/// Where the downward pump is in the answer whose body gets a byte changed.
#[derive(Default)]
struct Answer {
    /// The last bytes of the head seen so far (to find `\r\n\r\n` across reads).
    tail: Vec<u8>,
    /// Body bytes still to pass before the one to change; None while in the head.
    left: Option<u64>,
}

impl Answer {
    /// Changes the byte of `data` (the next bytes of the answer) the rule names; true once
    /// it is changed.
    fn feed(&mut self, data: &mut [u8], at: u64) -> bool {
        let mut i = 0;
        while self.left.is_none() && i < data.len() {
            self.tail.push(data[i]);
            i += 1;
            if self.tail.ends_with(b"\r\n\r\n") {
                self.left = Some(at);
            }
            if self.tail.len() > 3 {
                self.tail.remove(0);
            }
        }
        let Some(left) = self.left else {
            return false;
        };
        let rest = (data.len() - i) as u64;
        if left < rest {
            data[i + left as usize] ^= 0xff;
            return true;
        }
        self.left = Some(left - rest);
        false
    }
}

/// Finds the request lines in one direction of an HTTP/1.1 connection: request heads, and
/// bodies skipped by their Content-Length (krypta's requests are never chunked).
#[derive(Default)]
struct Requests {
    head: Vec<u8>,
    body_left: u64,
    /// Where in the rest of the current body the byte to change is ([`Flip`]).
    flip_at: Option<u64>,
    /// Where in the body of the answer to the request just seen the byte to change is
    /// ([`FlipDown`]), for the downward pump.
    down_at: Option<u64>,
}

impl Requests {
    /// The request lines that start in `data`; changes the byte a [`Flip`] in `st` names.
    fn feed(&mut self, data: &mut [u8], st: &ProxyState) -> Vec<String> {
        let mut lines = Vec::new();
        let mut i = 0;
        while i < data.len() {
            if self.body_left > 0 {
                let k = (data.len() - i).min(usize::try_from(self.body_left).unwrap_or(usize::MAX));
                if let Some(at) = self.flip_at {
                    if at < k as u64 {
                        data[i + at as usize] ^= 0xff;
                        self.flip_at = None;
                    } else {
                        self.flip_at = Some(at - k as u64);
                    }
                }
                self.body_left -= k as u64;
                i += k;
                continue;
            }
            let data_i = data[i];
            i += 1;
            self.head.push(data_i);
            if self.head.ends_with(b"\r\n\r\n") {
                let text = String::from_utf8_lossy(&self.head).into_owned();
                self.head.clear();
                let mut it = text.split("\r\n");
                let line = it.next().unwrap_or_default();
                self.body_left = it
                    .filter_map(|h| h.split_once(':'))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse().ok())
                    .unwrap_or(0);
                let line = line.strip_suffix(" HTTP/1.1").unwrap_or(line);
                self.flip_at = flips(st, line);
                if let Some(at) = flips_down(st, line, &text) {
                    self.down_at = Some(at);
                }
                lines.push(line.to_string());
            }
        }
        lines
    }
}

/// Where in its body request `line` gets a byte changed, when it is the one the [`Flip`]
/// rule names (the rule is then taken).
fn flips(st: &ProxyState, line: &str) -> Option<u64> {
    let mut rule = st.flip.lock().unwrap();
    let r = rule.as_mut()?;
    if !nth_met(line, r.method, r.target, &mut r.nth) {
        return None;
    }
    let at = r.at;
    *rule = None;
    st.flipped.lock().unwrap().push(line.to_string());
    Some(at)
}

/// Where in the answer to request `line` (head `head`) a byte is changed, when it is the GET
/// the [`FlipDown`] rule names (the rule is then taken).
fn flips_down(st: &ProxyState, line: &str, head: &str) -> Option<u64> {
    if !line.starts_with("GET ") {
        return None;
    }
    let range = head
        .split("\r\n")
        .filter_map(|h| h.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("range"))
        .map(|(_, v)| v.trim().to_string())?;
    let (a, b) = range.strip_prefix("bytes=")?.split_once('-')?;
    let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
    let mut rule = st.flip_down.lock().unwrap();
    let r = rule.as_mut()?;
    if !(a..=b).contains(&r.at) {
        return None;
    }
    r.nth -= 1;
    if r.nth > 0 {
        return None;
    }
    let at = r.at - a;
    *rule = None;
    st.flipped_down.lock().unwrap().push(range);
    Some(at)
}

/// Whether request `line` (`METHOD TARGET`) matches a rule's `method` (empty: any) and
/// `target` (a part of it), counting `nth` down: true when it reaches 0.
fn nth_met(line: &str, method: &str, target: &str, nth: &mut u32) -> bool {
    let (m, t) = line.split_once(' ').unwrap_or((line, ""));
    if (method.is_empty() || method == m) && t.contains(target) {
        *nth -= 1;
        return *nth == 0;
    }
    false
}

/// Records the request lines of krypta's bytes; true when one of them is the request whose
/// answer is to be lost.
fn loses(st: &ProxyState, lines: Vec<String>) -> bool {
    let mut hit = false;
    for line in lines {
        let mut rule = st.lose.lock().unwrap();
        if let Some(r) = rule.as_mut()
            && nth_met(&line, r.method, r.target, &mut r.nth)
        {
            *rule = None;
            st.lost.lock().unwrap().push(line.clone());
            hit = true;
        }
        st.seen.lock().unwrap().push(line);
    }
    hit
}

/// Copies `from` to `to` (`upward`: krypta's bytes to the server). `swallow` is set upward
/// when the request whose answer is lost passes; downward, once it is set, the server's answer
/// is dropped and both connections are closed.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    st: &ProxyState,
    upward: bool,
    swallow: &AtomicBool,
    down_flip: &Mutex<Option<u64>>,
) {
    let mut b = vec![0u8; 64 << 10];
    let mut answer: Option<(Answer, u64)> = None;
    let mut tail = [0u8; 3];
    let mut broken = false;
    let mut requests = Requests::default();
    loop {
        let n = match from.read(&mut b) {
            Ok(0) => break,
            Err(_) => {
                broken = true;
                break;
            }
            Ok(n) => n,
        };
        if upward {
            let mut joined = tail.to_vec();
            joined.extend_from_slice(&b[..n]);
            let heads = joined.windows(4).filter(|w| *w == b"\r\n\r\n").count();
            st.requests.fetch_add(heads as u64, Ordering::SeqCst);
            let k = joined.len();
            tail.copy_from_slice(&joined[k - 3..]);
            st.up.fetch_add(n as u64, Ordering::SeqCst);
            let lines = requests.feed(&mut b[..n], st);
            if let Some(at) = requests.down_at.take() {
                *down_flip.lock().unwrap() = Some(at);
            }
            if loses(st, lines) {
                swallow.store(true, Ordering::SeqCst);
            }
        } else if swallow.load(Ordering::SeqCst) {
            // The server answered the request: it was carried out. krypta never sees the
            // answer, only its connection closing.
            break;
        } else {
            st.down.fetch_add(n as u64, Ordering::SeqCst);
            if answer.is_none()
                && let Some(at) = down_flip.lock().unwrap().take()
            {
                answer = Some((Answer::default(), at));
            }
            if let Some((a, at)) = &mut answer
                && a.feed(&mut b[..n], *at)
            {
                answer = None;
            }
        }
        if to.write_all(&b[..n]).is_err() {
            broken = true;
            break;
        }
        let rate = st.rate.load(Ordering::SeqCst);
        if rate > 0 {
            std::thread::sleep(Duration::from_secs_f64(n as f64 / rate as f64));
        }
    }
    if broken {
        // A connection that broke (the server was killed) breaks the other one too, with a
        // reset as the killed server's own sockets do, not a polite FIN: an orphaned socket
        // that half-closed with a full window would leave the writer waiting on its timeout.
        let _ = rustix::net::sockopt::set_socket_linger(&to, Some(Duration::ZERO));
        let _ = rustix::net::sockopt::set_socket_linger(&from, Some(Duration::ZERO));
        let _ = to.shutdown(std::net::Shutdown::Read);
        let _ = from.shutdown(std::net::Shutdown::Read);
    } else {
        let _ = to.shutdown(std::net::Shutdown::Both);
        let _ = from.shutdown(std::net::Shutdown::Both);
    }
}
