//! What a test process's Synapse servers share on the machine: a loopback port each, at most
//! one start per core at a time, and the probe saying that a server answers.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The HTTP status of `GET /_matrix/client/versions`, or `None` when nothing answers yet.
pub(super) fn versions_status(address: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    stream
        .write_all(
            b"GET /_matrix/client/versions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .ok()?;
    // The status line is all that is needed: "HTTP/1.1 200 OK".
    let mut head = [0u8; 64];
    let mut filled = 0;
    while filled < head.len() {
        match stream.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(_) => return None,
        }
        if head[..filled].contains(&b'\n') {
            break;
        }
    }
    let line = std::str::from_utf8(&head[..filled]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Ports handed to servers of this process and not yet released.
static TAKEN_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

fn taken_ports() -> MutexGuard<'static, BTreeSet<u16>> {
    TAKEN_PORTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A loopback port free right now for a server of this process. Chosen below the kernel's
/// ephemeral range, so that no outgoing connection (of which a test suite makes thousands)
/// takes it between this probe and Synapse's bind, nor while it is stopped for a restart.
pub(super) fn reserve_port() -> Result<u16, String> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let mut taken = taken_ports();
    if ephemeral_low > 12000 {
        for _ in 0..200 {
            let port = fastrand::u16(10000..ephemeral_low);
            if !taken.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                taken.insert(port);
                return Ok(port);
            }
        }
    }
    // An unusual kernel setting: let the OS pick one.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|err| format!("synapse: no free loopback port: {err}"))?;
    taken.insert(port);
    Ok(port)
}

pub(super) fn release_port(port: u16) {
    taken_ports().remove(&port);
}

/// At most one Synapse start per core at a time in this process: a start is a second of
/// Python imports and schema creation at full CPU, and a dozen at once on 2 cores would each
/// take far longer than starting them in turn.
pub(super) struct StartPermit;

static STARTS_RUNNING: Mutex<usize> = Mutex::new(0);
static START_FREED: Condvar = Condvar::new();

impl StartPermit {
    pub(super) fn acquire() -> StartPermit {
        let limit = std::thread::available_parallelism()
            .map(|cores| cores.get())
            .unwrap_or(1)
            .clamp(1, 4);
        let mut running = STARTS_RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while *running >= limit {
            running = START_FREED
                .wait(running)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *running += 1;
        StartPermit
    }
}

impl Drop for StartPermit {
    fn drop(&mut self) {
        let mut running = STARTS_RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *running -= 1;
        START_FREED.notify_one();
    }
}
