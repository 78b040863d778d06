//! A sink for Reckon's outbox inside the bench's process: an HTTP server on
//! 127.0.0.1 (HTTP/1.1, and HTTP/2 with prior knowledge) that answers 200 at
//! once to every POST and records, per request, when it arrived, its
//! `webhook-id` and the `payment_no` of its JSON body. Every hundredth
//! request's Standard-Webhooks signature is checked against the secret the
//! server was given, so a wrong signature fails the bench. It runs on a
//! runtime of its own, so the load's tasks do not queue ahead of it.
#![allow(dead_code)] // the intake bench only

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use reckon::providers::signing::{Secret, verify_headers};
use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request in this many has its signature checked (the first one too).
const VERIFY_EVERY: usize = 100;

/// A sink's signature must be this fresh (seconds), as a receiver would ask.
const TOLERANCE_SECS: i64 = 300;

/// The payments of the bench are `PAYB` and eight digits: the digits are
/// the payment's index.
pub fn payment_index(payment_no: &str) -> Option<usize> {
    payment_no.strip_prefix("PAYB")?.parse().ok()
}

#[derive(Default)]
struct Received {
    /// Every request as it came: arrival, webhook-id.
    arrivals: Vec<(Instant, String)>,
    /// The first arrival of each payment's message, by payment index.
    first: Vec<Option<Instant>>,
    /// Payments with a message so far.
    distinct: usize,
    /// Requests whose body named no bench payment.
    unknown: usize,
}

struct State {
    secret: Secret,
    received: Mutex<Received>,
    requests: AtomicUsize,
    verified: AtomicUsize,
    /// The first signature that failed, and how many did.
    bad: Mutex<(usize, Option<String>)>,
}

pub struct Sink {
    pub addr: SocketAddr,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Reads a sink's count from another task.
#[derive(Clone)]
pub struct Probe(Arc<State>);

impl Probe {
    /// Payments with at least one message so far.
    pub fn delivered(&self) -> usize {
        self.0.received.lock().unwrap().distinct
    }
}

/// What a sink received, read once its run is over.
pub struct Summary {
    /// The first arrival of each payment's message (index < the payments
    /// asked for); None: never arrived.
    pub first: Vec<Option<Instant>>,
    pub received: usize,
    pub distinct_ids: usize,
    pub unknown: usize,
    pub verified: usize,
}

impl Summary {
    /// When the last payment's first message arrived, if all did.
    pub fn last_delivery(&self) -> Option<Instant> {
        self.first
            .iter()
            .try_fold(None::<Instant>, |m, f| {
                f.map(|f| Some(m.map_or(f, |m| m.max(f))))
            })
            .flatten()
    }

    pub fn delivered(&self) -> usize {
        self.first.iter().filter(|f| f.is_some()).count()
    }
}

#[derive(serde::Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    payment_no: Option<&'a str>,
}

impl Sink {
    /// Listens on a free port of 127.0.0.1; `secret` is the one the
    /// messages must be signed with.
    pub fn start(secret: Secret) -> Sink {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sink")
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            secret,
            received: Mutex::new(Received::default()),
            requests: AtomicUsize::new(0),
            verified: AtomicUsize::new(0),
            bad: Mutex::new((0, None)),
        });
        let serving = state.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let state = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(state.take(req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
                });
            }
        });
        Sink {
            addr,
            state,
            runtime: Some(runtime),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    /// Payments with at least one message so far.
    pub fn delivered(&self) -> usize {
        self.state.received.lock().unwrap().distinct
    }

    pub fn probe(&self) -> Probe {
        Probe(self.state.clone())
    }

    /// Waits until `n` payments have a message, or until `deadline`;
    /// true if they all came.
    pub async fn wait_for(&self, n: usize, deadline: Instant) -> bool {
        loop {
            if self.delivered() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Panics if a checked signature failed, or if none was checked.
    pub fn assert_signed(&self) {
        let bad = self.state.bad.lock().unwrap();
        assert!(
            bad.0 == 0,
            "{} of the sink's checked requests were not signed right: first {}",
            bad.0,
            bad.1.as_deref().unwrap_or("")
        );
        let requests = self.state.requests.load(Ordering::Relaxed);
        assert!(
            requests == 0 || self.state.verified.load(Ordering::Relaxed) > 0,
            "the sink checked no signature"
        );
    }

    /// What came, for the first `n` payments; the sink keeps listening.
    pub fn summary(&self, n: usize) -> Summary {
        let r = self.state.received.lock().unwrap();
        let mut first = r.first.clone();
        first.resize(n, None);
        let ids: HashSet<&str> = r.arrivals.iter().map(|(_, id)| id.as_str()).collect();
        Summary {
            first,
            received: r.arrivals.len(),
            distinct_ids: ids.len(),
            unknown: r.unknown,
            verified: self.state.verified.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl State {
    async fn take(&self, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
            return answer(400);
        };
        let at = Instant::now();
        let k = self.requests.fetch_add(1, Ordering::Relaxed);
        if k.is_multiple_of(VERIFY_EVERY) {
            let now = jiff::Timestamp::now().as_second();
            match verify_headers(&self.secret, &parts.headers, &body, now, TOLERANCE_SECS) {
                Ok(()) => {
                    self.verified.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    let mut bad = self.bad.lock().unwrap();
                    bad.0 += 1;
                    bad.1.get_or_insert_with(|| e.to_string());
                }
            }
        }
        let id = parts
            .headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let payment = serde_json::from_slice::<Body>(&body)
            .ok()
            .and_then(|b| payment_index(b.payment_no?));
        let mut r = self.received.lock().unwrap();
        r.arrivals.push((at, id));
        match payment {
            Some(i) => {
                if r.first.len() <= i {
                    r.first.resize(i + 1, None);
                }
                if r.first[i].is_none() {
                    r.first[i] = Some(at);
                    r.distinct += 1;
                }
            }
            None => r.unknown += 1,
        }
        drop(r);
        answer(200)
    }
}

fn answer(status: u16) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .unwrap()
}
