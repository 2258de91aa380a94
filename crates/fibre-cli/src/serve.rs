//! The mirror's query socket: a Unix stream socket where each client writes read-only
//! commands of the batch language, one per line, and reads one JSON line per command
//! ([`Query::answer`]). A thread per client; each command reads the router as last published,
//! renders its answer, lets go of the router, and only then writes, so that a slow client
//! never keeps a copy from the mirror.
use fibre::io::iproute2::Query;
use fibre::io::netlink::MirrorReader;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A command line longer than this is refused (and the client dropped): no command of the
/// language comes near it, and a client must not make the mirror hold unbounded text.
const LINE_LIMIT: u64 = 64 * 1024;

/// What the clients are doing, for the status line.
#[derive(Default)]
pub struct ServeStats {
    /// Clients connected now.
    pub clients: AtomicUsize,
    /// Commands answered since the start.
    pub answers: AtomicU64,
}

/// A bound socket, removed from the file system when dropped.
pub struct Socket {
    path: PathBuf,
    listener: UnixListener,
}

impl Socket {
    /// Binds `path` with permissions `mode`. The socket is created under a umask that lets no
    /// one else in, then opened up to `mode`, so it is never reachable beyond what was asked.
    /// A socket file left by a mirror that is gone is replaced; a live one is an error.
    pub fn bind(path: &Path, mode: u32) -> io::Result<Socket> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                if UnixStream::connect(path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("{}: a mirror already listens there", path.display()),
                    ));
                }
                std::fs::remove_file(path)?;
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: exists and is not a socket", path.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        // SAFETY: umask only swaps the process's file mode mask; this runs before any other
        // thread starts, so no file created elsewhere sees the narrow one.
        let old = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(path);
        // SAFETY: as above; restores the mask.
        unsafe { libc::umask(old) };
        let listener =
            bound.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let socket = Socket {
            path: path.to_path_buf(),
            listener,
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        Ok(socket)
    }

    /// Accepts clients on a thread of its own, each served on its own thread, at most
    /// `max_clients` at once (the next ones get an error line and are closed).
    pub fn serve(
        &self,
        reader: MirrorReader,
        max_clients: usize,
        stats: Arc<ServeStats>,
    ) -> io::Result<()> {
        let listener = self.listener.try_clone()?;
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                if stats.clients.fetch_add(1, Ordering::SeqCst) >= max_clients {
                    stats.clients.fetch_sub(1, Ordering::SeqCst);
                    let _ = writeln!(
                        stream,
                        r#"{{"error":"EBUSY","errno":16,"message":"Error: {max_clients} clients already connected."}}"#
                    );
                    continue;
                }
                let (reader, stats) = (reader.clone(), Arc::clone(&stats));
                std::thread::spawn(move || {
                    let _ = serve_client(stream, &reader, &stats);
                    stats.clients.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answers one client's lines until it closes. Answers are flushed once no more of the
/// client's lines are waiting, so a client that sends many commands at once gets their
/// answers in few writes.
fn serve_client(stream: UnixStream, reader: &MirrorReader, stats: &ServeStats) -> io::Result<()> {
    let mut input = BufReader::new(stream.try_clone()?);
    let mut output = BufWriter::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        let read = (&mut input).take(LINE_LIMIT).read_line(&mut line)?;
        if read == 0 {
            return output.flush();
        }
        if !line.ends_with('\n') && read as u64 == LINE_LIMIT {
            writeln!(
                output,
                r#"{{"error":"E2BIG","errno":7,"message":"Error: a command longer than {LINE_LIMIT} bytes."}}"#
            )?;
            return output.flush();
        }
        let answer = {
            let router = reader.load();
            Query::new(&router, true).answer(&line)
        };
        output.write_all(answer.as_bytes())?;
        output.write_all(b"\n")?;
        stats.answers.fetch_add(1, Ordering::Relaxed);
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}
