//! Accepting connections: HTTP/1.1 over hyper, with a cap on open connections, a timeout for
//! request headers (which also closes connections left idle), and graceful shutdown.
//!
//! A client that opens a connection and sends nothing, or half a request, holds a file
//! descriptor and a task. Here it holds them for at most the header timeout (the body timeout
//! is the handlers', see `http::guard`), and at most `max_connections` are open at once:
//! the accept loop waits for one to close before it accepts the next, so the rest wait in the
//! kernel's listen backlog, costing the server nothing.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// How connections are handled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NetConfig {
    /// Most time to receive a request's headers, and most idle time between requests.
    pub header_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `signal` completes, then stops accepting, lets the
/// open connections finish their requests (for up to `grace` and a little more), and
/// returns.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    config: NetConfig,
    metrics: Arc<Metrics>,
    signal: impl Future<Output = ()>,
    grace: Duration,
) {
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Some(config.header_timeout).filter(|t| !t.is_zero()));
    let mut signal = std::pin::pin!(signal);
    loop {
        let permit = tokio::select! {
            biased;
            () = &mut signal => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                // Never closed.
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            biased;
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a little rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Streamed tokens go out at once.
        let _ = stream.set_nodelay(true);
        let conn = builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let conn = graceful.watch(conn);
        let metrics = metrics.clone();
        metrics.connections_open.inc();
        tokio::spawn(async move {
            // An error is the client's doing (a timeout, a reset, a malformed request):
            // nothing to do but close.
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed");
            }
            metrics.connections_open.dec();
            drop(permit);
        });
    }
    drop(listener);
    let wait = grace + Duration::from_secs(5);
    if tokio::time::timeout(wait, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open {wait:?} after shutdown began: closing them");
    }
}
