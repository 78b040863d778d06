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
             (max_bill_bytes); the rest was not downloaded"
        )),
        BodyError::Read(e) => call_error(e),
        BodyError::Write(e) => CallError::Refused(format!("{what} could not be written down: {e}")),
    })?;
    Ok((status, body))
}

/// The longest API answer read (a status, a refund, a page of balance
/// transactions are kilobytes): past it the answer is not read on, so an
/// endless answer costs no more memory than this.
pub(crate) const MAX_ANSWER: usize = 16 << 20;

/// An API answer's body, read as it arrives up to [`MAX_ANSWER`]; longer,
/// it is unknown (a provider's fault or a stranger's), never read whole.
pub(crate) async fn answer(mut res: reqwest::Response) -> Result<Vec<u8>, CallError> {
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(call_error)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(CallError::Network(format!(
                "the answer is longer than {MAX_ANSWER} bytes, longer than any answer of the API; not read on"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server answering every connection `len` bytes of 'x' in chunks.
    async fn answering(len: usize) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\n\r\n");
                    if s.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = vec![b'x'; 1 << 16];
                    let mut left = len;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if s.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        left -= n;
                    }
                });
            }
        });
        format!("http://{addr}/")
    }

    #[tokio::test]
    async fn an_answer_is_read_up_to_its_limit_and_no_further() {
        let http = client(std::time::Duration::from_secs(30));
        let url = answering(1000).await;
        let res = http.get(&url).send().await.unwrap();
        assert_eq!(answer(res).await.unwrap().len(), 1000);
        let url = answering(MAX_ANSWER + 1).await;
        let res = http.get(&url).send().await.unwrap();
        let err = answer(res).await.unwrap_err().to_string();
        assert!(err.contains("longer than"), "{err}");
    }
}
