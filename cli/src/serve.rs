//! `fencing metrics --serve ADDR`: the handle's Prometheus text over a
//! minimal HTTP/1.1 server (std only: one small endpoint does not need an
//! HTTP stack). One connection at a time, each closed after its answer; a
//! client that stalls is dropped after `CLIENT_TIMEOUT`, so it holds up
//! other scrapes for that long at most.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use fencing::Store;

use crate::exit::Failure;
use crate::verbs;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a request head read: a scrape's is a few hundred bytes.
const MAX_HEAD: u64 = 16 * 1024;

pub fn main(url_arg: Option<&str>, addr: &str) -> Result<u8, Failure> {
    let store = verbs::open(&verbs::url(url_arg)?)?;
    let listener = TcpListener::bind(addr)
        .map_err(|e| Failure::Other(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::Other(format!("cannot read the bound address: {e}")))?;
    // The bound address, so that port 0 is usable (tests, scripts).
    eprintln!(
        "fencing: serving metrics of {} on http://{bound}/metrics",
        store.location()
    );
    // A failed accept or a client gone mid-answer concerns that client only.
    for conn in listener.incoming().flatten() {
        let _ = answer(&store, conn);
    }
    Ok(0)
}

fn answer(store: &Store, conn: TcpStream) -> std::io::Result<()> {
    conn.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    conn.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut head = BufReader::new((&conn).take(MAX_HEAD));
    let mut request_line = String::new();
    head.read_line(&mut request_line)?;
    // Read the rest of the head (the headers are not needed) so that closing
    // does not reset a connection whose request is still unread.
    let mut header = String::new();
    while head.read_line(&mut header)? > 0 && header != "\r\n" && header != "\n" {
        header.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, extra, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", "", store.metrics_text()),
        ("GET" | "HEAD", _) => ("404 Not Found", "", "not found: try /metrics\n".to_owned()),
        _ => (
            "405 Method Not Allowed",
            "Allow: GET, HEAD\r\n",
            "only GET and HEAD\n".to_owned(),
        ),
    };
    let content_type = if status.starts_with("200") {
        "text/plain; version=0.0.4; charset=utf-8"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut out = &conn;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         {extra}Connection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        out.write_all(body.as_bytes())?;
    }
    out.flush()
}
