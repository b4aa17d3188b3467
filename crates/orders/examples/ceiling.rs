//! The ceiling row of `scripts/bench` (not a test): plain hyper on 127.0.0.1:PORT answering
//! every request with the bytes of RESPONSE_FILE as `application/json`, on the same runtime,
//! accept loop settings (`TCP_NODELAY`, HTTP/1.1 keep-alive) and pinning as the servers
//! measured. What no MCP server on this stack can beat: the request is read, nothing parsed.
//!
//! ```text
//! ceiling PORT RESPONSE_FILE
//! ```
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [port, file] = args.as_slice() else {
        eprintln!("usage: ceiling PORT RESPONSE_FILE");
        std::process::exit(2);
    };
    let body = Bytes::from(std::fs::read(file).unwrap());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap()))
        .await
        .unwrap();
    eprintln!(
        "ceiling listening on http://{}",
        listener.local_addr().unwrap()
    );
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_nodelay(true).unwrap();
        let body = body.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let body = body.clone();
                    async move {
                        // Read the request to its end, as a server must, and ignore it.
                        let _ = request.into_body().collect().await;
                        let response = hyper::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(body))
                            .unwrap();
                        Ok::<_, Infallible>(response)
                    }
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
