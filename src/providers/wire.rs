//! What every adapter shares on the wire: the HTTP client provider calls go
//! through, what a failed call means, and reading a required header.

use super::{CallError, VerifyError};
use http::HeaderMap;

/// The HTTP client provider calls go through: a whole call that takes
/// longer than `timeout` is an unknown result.
pub(crate) fn client(timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .expect("an HTTP client")
}

/// A configured call's time limit: `timeout_ms` (default 10 s), kept
/// between 50 ms and 2 minutes.
pub fn timeout(ms: Option<u64>) -> std::time::Duration {
    std::time::Duration::from_millis(ms.unwrap_or(10_000).clamp(50, 120_000))
}

/// A failed request: a timeout or a broken connection, both unknown.
pub(crate) fn call_error(e: reqwest::Error) -> CallError {
    if e.is_timeout() {
        CallError::Timeout
    } else {
        CallError::Network(e.without_url().to_string())
    }
}

/// A download (a bill): its status and body, written to a temporary file
/// as it arrives, at most `limit` bytes (`what` names it in the refusal).
/// A server error is unknown, as a broken connection is: the caller may
/// try again.
pub(crate) async fn download(
    call: reqwest::RequestBuilder,
    limit: u64,
    what: &str,
) -> Result<(http::StatusCode, super::spool::Spooled), CallError> {
    use super::spool::BodyError;
    let res = call.send().await.map_err(call_error)?;
    let status = res.status();
    if status.is_server_error() {
        return Err(CallError::Network(format!(
            "the bill download answered {status}"
        )));
    }
    let body = super::spool::body(res, limit).await.map_err(|e| match e {
        BodyError::TooLong => CallError::Refused(format!(
            "{what} is longer than {limit} bytes, the most this account takes \
             (max_bill_bytes); the rest was not downloaded and nothing was read"
        )),
        BodyError::Read(e) => call_error(e),
        BodyError::Write(e) => CallError::Refused(format!("{what} could not be written down: {e}")),
    })?;
    Ok((status, body))
}

/// A required header as text.
pub(crate) fn header<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
) -> Result<&'a str, VerifyError> {
    headers
        .get(name)
        .ok_or(VerifyError::MissingHeader(name))?
        .to_str()
        .map_err(|_| VerifyError::MalformedHeader(format!("{name} is not text")))
}
