//! A recording loopback proxy between `fuseraft exec` and the live model server: each
//! request's JSON body is kept, in order, and the request goes on unchanged but for
//! `connection: close`, so every connection carries exactly one request and its answer
//! (streamed back byte for byte).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub struct Proxy {
    pub port: u16,
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || forward(stream, upstream, &kept));
            }
        });
        Proxy { port, bodies }
    }

    /// The JSON bodies of the requests so far, in the order they arrived.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.bodies.lock().expect("the record lock").clone()
    }
}

fn forward(client: TcpStream, upstream: u16, kept: &Mutex<Vec<serde_json::Value>>) {
    let Ok(reading) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("connection:") {
            continue;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    if let Ok(json) = serde_json::from_slice(&body) {
        kept.lock().expect("the record lock").push(json);
    }
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    head.push_str("connection: close\r\n\r\n");
    if server.write_all(head.as_bytes()).is_err() || server.write_all(&body).is_err() {
        return;
    }
    let mut client = client;
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Both);
}
