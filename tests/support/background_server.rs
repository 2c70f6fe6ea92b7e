//! An actix-web server for the fakes (the scripted LLM and transcription backends, the
//! Telegram Bot API, the plugin server): on 127.0.0.1 at a free port, on a thread of its
//! own with its own actix system, so it serves async tests, the benchmarks and `hearth`
//! subprocesses alike. Answers go out at once, as a real server's do: no Nagle delay on
//! loopback.

// Each includer (integration tests, benches) uses a different part of the support folder.
#![allow(dead_code)]

use std::net::TcpListener;
use std::thread::JoinHandle;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpServer, web};

/// A server listening; stop it with `handle`, then join `thread`.
pub struct BackgroundServer {
    pub port: u16,
    pub handle: ServerHandle,
    pub thread: JoinHandle<()>,
}

/// Serves `routes` with `workers` workers from a thread named `<name>-<port>`; returns once
/// listening.
pub fn serve_in_background<F>(name: &str, workers: usize, routes: F) -> BackgroundServer
where
    F: Fn(&mut web::ServiceConfig) + Send + Clone + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .unwrap_or_else(|error| panic!("{name}: bind 127.0.0.1:0: {error}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|error| panic!("{name}: local addr: {error}"))
        .port();
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    let what = name.to_string();
    let thread = std::thread::Builder::new()
        .name(format!("{name}-{port}"))
        .spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || App::new().configure(routes.clone()))
                    .on_connect(|connection, _| {
                        if let Some(tcp) =
                            connection.downcast_ref::<actix_web::rt::net::TcpStream>()
                        {
                            let _ = tcp.set_nodelay(true);
                        }
                    })
                    .workers(workers)
                    // The benchmark opens many connections at once.
                    .backlog(4096)
                    .disable_signals()
                    .shutdown_timeout(1)
                    .listen(listener)
                    .unwrap_or_else(|error| panic!("{what}: listen: {error}"))
                    .run();
                handle_tx
                    .send(server.handle())
                    .unwrap_or_else(|_| panic!("{what}: report handle"));
                let _ = server.await;
            });
        })
        .unwrap_or_else(|error| panic!("{name}: spawn thread: {error}"));
    let handle = handle_rx
        .recv()
        .unwrap_or_else(|_| panic!("{name}: thread died before listening"));
    BackgroundServer {
        port,
        handle,
        thread,
    }
}
