//! A reference row of `scripts/bench` (not a test): plain hyper on 127.0.0.1:PORT passing every
//! request to UPSTREAM (an origin, `http://HOST:PORT`) on pooled keep-alive connections and its
//! answer back, headers and bodies copied, nothing parsed. What a gateway written on this stack
//! costs before it does any MCP work: the floor under `mcp-gateway`'s ratio to direct.
//!
//! ```text
//! passthrough PORT UPSTREAM
//! ```
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [port, upstream] = args.as_slice() else {
        eprintln!("usage: passthrough PORT UPSTREAM");
        std::process::exit(2);
    };
    let upstream: hyper::Uri = upstream.parse().unwrap();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap()))
        .await
        .unwrap();
    eprintln!(
        "passthrough listening on http://{}",
        listener.local_addr().unwrap()
    );
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let (client, upstream) = (client.clone(), upstream.clone());
                    async move {
                        let (mut head, body) = request.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        let mut uri = upstream.into_parts();
                        uri.path_and_query = head.uri.path_and_query().cloned();
                        head.uri = hyper::Uri::from_parts(uri).unwrap();
                        head.headers.remove(hyper::header::HOST);
                        let request = hyper::Request::from_parts(head, Full::new(body));
                        let (head, body) = client.request(request).await.unwrap().into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        Ok::<_, Infallible>(hyper::Response::from_parts(head, Full::new(body)))
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
