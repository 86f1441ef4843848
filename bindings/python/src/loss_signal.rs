//! A keep-alive's loss signal (`KeepAlive::loss_signal`): a connected pair of
//! sockets, so that `fencing.aio` waits on one end with its event loop's
//! `add_reader`, never holding a thread. A Unix socket pair on unix; on
//! Windows, whose selector loop watches sockets only, a TCP pair on the
//! loopback interface, made the way Python's own `socket.socketpair` makes it
//! there.

#[cfg(unix)]
pub type End = std::os::unix::net::UnixStream;
#[cfg(windows)]
pub type End = std::net::TcpStream;

/// (reader, writer), the writer non-blocking where it can be (a full buffer
/// drops a byte the reader needs no more of); none when the process has no
/// socket left.
pub fn pair() -> Option<(End, End)> {
    let (reader, writer) = connected().ok()?;
    let _ = writer.set_nonblocking(true);
    Some((reader, writer))
}

/// What the event loop is given to watch.
pub fn descriptor(end: &End) -> i64 {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        i64::from(end.as_raw_fd())
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawSocket;
        // A SOCKET is a small handle value, whatever its type's width.
        end.as_raw_socket() as i64
    }
}

#[cfg(unix)]
fn connected() -> std::io::Result<(End, End)> {
    End::pair()
}

/// Another local process may connect to the listener first: only the
/// connection from our own writer's address is taken.
#[cfg(windows)]
fn connected() -> std::io::Result<(End, End)> {
    use std::net::{Ipv4Addr, TcpListener};
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let writer = End::connect(listener.local_addr()?)?;
    let ours = writer.local_addr()?;
    loop {
        let (reader, from) = listener.accept()?;
        if from == ours {
            return Ok((reader, writer));
        }
    }
}
