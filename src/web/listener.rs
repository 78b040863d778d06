//! The listener: the router served over HTTP/1.1 with the limits
//! `axum::serve` leaves out, so slow or idle clients cannot hold the
//! webhooks down. Headers must arrive within `header_read`; a connection
//! with no request in progress that moves no bytes for `idle` is closed; a
//! body that stalls for `body_read` ends its request (408); and at most
//! `max_connections` are open: at the limit the connection idle longest
//! makes room for the new one, and only when none is idle is the new one
//! shed. Shedding is logged (at most once a second) and counted.

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tower::ServiceExt;
use tower_http::timeout::{TimeoutBody, TimeoutError};

/// The listener's limits, a setting's shape (the config owns it).
pub use crate::config::Limits;

/// Raises the soft limit on open files to the hard limit (a default soft
/// limit of 1,024 is soon reached by idle clients); returns the limit now
/// in force.
pub fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    Some(lim.rlim_cur)
}

/// Connections the file-descriptor limit leaves room for, keeping some for
/// the database, the log and outgoing calls.
pub fn connection_cap(configured: usize, fd_limit: Option<u64>) -> usize {
    const RESERVED: u64 = 256;
    match fd_limit {
        Some(limit) => configured.min(limit.saturating_sub(RESERVED).max(16) as usize),
        None => configured,
    }
}

/// One open connection, as the registry sees it.
struct Conn {
    /// Requests being answered (a response body may still be streaming).
    in_flight: AtomicUsize,
    /// Milliseconds since the registry's start when bytes last moved.
    last_active: AtomicU64,
    /// Told when the registry takes this connection's place for another.
    evicted: Notify,
}

struct Registry {
    start: Instant,
    max: usize,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    emptied: Notify,
    metrics: Metrics,
    last_shed_log: AtomicU64,
    shed_since_log: AtomicU64,
}

enum Admission {
    Admitted(u64, Arc<Conn>),
    Shed,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn admit(&self) -> Admission {
        let now = self.now_ms();
        let mut open = self.open.lock().expect("registry lock");
        if open.len() >= self.max {
            // The longest-idle connection with no request in progress.
            let idlest = open
                .iter()
                .filter(|(_, c)| c.in_flight.load(Ordering::Acquire) == 0)
                .min_by_key(|(_, c)| c.last_active.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            match idlest {
                Some(id) => {
                    if let Some(conn) = open.remove(&id) {
                        conn.evicted.notify_one();
                    }
                    self.shed("idle_closed");
                }
                None => {
                    drop(open);
                    self.shed("refused");
                    return Admission::Shed;
                }
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            last_active: AtomicU64::new(now),
            evicted: Notify::new(),
        });
        open.insert(id, conn.clone());
        self.metrics.connections_open(open.len() as i64);
        Admission::Admitted(id, conn)
    }

    fn remove(&self, id: u64) {
        let mut open = self.open.lock().expect("registry lock");
        open.remove(&id);
        self.metrics.connections_open(open.len() as i64);
        if open.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    fn is_empty(&self) -> bool {
        self.open.lock().expect("registry lock").is_empty()
    }

    fn shed(&self, how: &'static str) {
        self.metrics.connection_shed(how);
        self.shed_since_log.fetch_add(1, Ordering::Relaxed);
        let now = self.now_ms().max(1);
        let last = self.last_shed_log.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= 1000;
        if due
            && self
                .last_shed_log
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let shed = self.shed_since_log.swap(0, Ordering::Relaxed);
            tracing::warn!(
                max_connections = self.max,
                shed,
                latest = how,
                "connection limit reached: connections shed"
            );
        }
    }
}

/// The socket, noting when bytes move.
struct Watched {
    stream: TcpStream,
    conn: Arc<Conn>,
    registry: Arc<Registry>,
}

impl Watched {
    fn touch(&self) {
        self.conn
            .last_active
            .store(self.registry.now_ms(), Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        res
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Counts a request in progress on its connection until dropped.
struct InFlight(Arc<Conn>);

impl InFlight {
    fn new(conn: Arc<Conn>) -> InFlight {
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(conn)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn body_too_slow(limit: Duration) -> Response {
    (
        axum::http::StatusCode::REQUEST_TIMEOUT,
        axum::Json(serde_json::json!({
            "error": format!("the request body stopped arriving for {} s", limit.as_secs())
        })),
    )
        .into_response()
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the
/// requests in progress finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    metrics: Metrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let registry = Arc::new(Registry {
        start: Instant::now(),
        max: limits.max_connections.max(1),
        open: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        emptied: Notify::new(),
        metrics,
        last_shed_log: AtomicU64::new(0),
        shed_since_log: AtomicU64::new(0),
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors (or a connection reset while
                    // queued): wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (id, conn) = match registry.admit() {
            Admission::Admitted(id, conn) => (id, conn),
            Admission::Shed => {
                drop(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Watched {
            stream,
            conn: conn.clone(),
            registry: registry.clone(),
        });
        let (router, registry, http, mut stop_rx) = (
            router.clone(),
            registry.clone(),
            http.clone(),
            stop_rx.clone(),
        );
        let body_read = limits.body_read;
        let idle = limits.idle;
        tokio::spawn(async move {
            let served = conn.clone();
            let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                let guard = InFlight::new(served.clone());
                let stalled = Arc::new(AtomicBool::new(false));
                let seen = stalled.clone();
                let mut req = req.map(|body| {
                    axum::body::Body::new(TimeoutBody::new(body_read, body).map_err(move |e| {
                        if e.is::<TimeoutError>() {
                            seen.store(true, Ordering::Release);
                        }
                        e
                    }))
                });
                req.extensions_mut().insert(ConnectInfo(peer));
                let router = router.clone();
                async move {
                    let res = router.oneshot(req).await;
                    drop(guard);
                    // Whatever the handler made of a body that stopped
                    // arriving, the sender is told it was too slow.
                    if stalled.load(Ordering::Acquire) {
                        return Ok(body_too_slow(body_read));
                    }
                    res
                }
            });
            let connection = http.serve_connection(io, service);
            let mut connection = pin!(connection);
            let mut stopping = false;
            loop {
                let idle_at = conn.last_active.load(Ordering::Relaxed) + idle.as_millis() as u64;
                let wait = Duration::from_millis(idle_at.saturating_sub(registry.now_ms()));
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(%peer, error = %e, "connection ended");
                        }
                        break;
                    }
                    () = conn.evicted.notified() => {
                        if conn.in_flight.load(Ordering::Acquire) == 0 {
                            break;
                        }
                        // A request arrived since it was picked: finish it.
                        connection.as_mut().graceful_shutdown();
                    }
                    changed = stop_rx.changed(), if !stopping => {
                        stopping = true;
                        if changed.is_ok() {
                            connection.as_mut().graceful_shutdown();
                        }
                    }
                    () = tokio::time::sleep(wait) => {
                        let quiet = registry.now_ms()
                            .saturating_sub(conn.last_active.load(Ordering::Relaxed));
                        if quiet >= idle.as_millis() as u64
                            && conn.in_flight.load(Ordering::Acquire) == 0
                        {
                            tracing::debug!(%peer, "idle connection closed");
                            break;
                        }
                        if quiet >= idle.as_millis() as u64 {
                            // Busy but silent: look again in a while.
                            conn.last_active.store(registry.now_ms(), Ordering::Relaxed);
                        }
                    }
                }
            }
            registry.remove(id);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    loop {
        let emptied = registry.emptied.notified();
        if registry.is_empty() {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(200), emptied).await;
    }
    Ok(())
}
