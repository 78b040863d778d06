//! Behind a reverse proxy every connection comes from the proxy; the
//! client's address is in `X-Forwarded-For`, which anyone can write. It is
//! believed only from the proxies named in `RECKON_TRUSTED_PROXIES`, and
//! read from the right: each trusted hop added the address before it, so
//! the first address from the right that is not a trusted proxy is the
//! client. Sign-ins, the lock-out by address and the audit log then see it.

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The client of a request that reached Reckon from `peer`.
pub fn client(peer: IpAddr, forwarded_for: &str, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let mut client = peer;
    for hop in forwarded_for.rsplit(',').map(str::trim) {
        // A hop that is no address: nothing left of it can be believed.
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

/// The request's peer address replaced by its client's, when it came
/// through a trusted proxy.
pub async fn real_peer(
    State(trusted): State<Arc<Vec<IpNet>>>,
    mut req: Request,
    next: Next,
) -> Response {
    if !trusted.is_empty()
        && let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied()
    {
        let forwarded: Vec<&str> = req
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let ip = client(peer.ip(), &forwarded.join(","), &trusted);
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(ip, peer.port())));
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::client;

    fn ip(s: &str) -> std::net::IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_proxys_word_is_taken_from_the_right() {
        let trusted = ["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        // Not through a trusted proxy: the header is anyone's.
        assert_eq!(
            client(ip("203.0.113.9"), "1.2.3.4", &trusted),
            ip("203.0.113.9")
        );
        // One trusted proxy: the address it added.
        assert_eq!(
            client(ip("10.0.0.5"), "198.51.100.7", &trusted),
            ip("198.51.100.7")
        );
        // A forged first hop stays left of the client the proxy saw.
        assert_eq!(
            client(ip("10.0.0.5"), "1.2.3.4, 198.51.100.7, 10.0.0.6", &trusted),
            ip("198.51.100.7")
        );
        // Garbage stops the walk at the last address believed.
        assert_eq!(
            client(ip("::1"), "evil, 10.0.0.6", &trusted),
            ip("10.0.0.6")
        );
        // No header: the proxy itself.
        assert_eq!(client(ip("10.0.0.5"), "", &trusted), ip("10.0.0.5"));
    }
}
