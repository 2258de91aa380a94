//! The mirror's query socket: a Unix stream socket where each client writes read-only
//! commands of the batch language, one per line, and reads one JSON line per command
//! ([`Query::answer`]). A thread per client; each command reads the router as last published,
//! renders its answer, lets go of the router, and only then writes, so that a slow reader of
//! its answers never keeps a copy from the mirror (a render does, for as long as it takes: a
//! full table's listing delays the next publication by that much). Renders run at most one
//! per core at once, so that the answers held in memory stay bounded however many clients ask
//! for full listings.
use fibre::io::iproute2::Query;
use fibre::io::netlink::MirrorReader;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

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
            Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path) {
                // Refused: nobody listens; the file is a leftover.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    std::fs::remove_file(path)?
                }
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("{}: a mirror already listens there", path.display()),
                    ))
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            },
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
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let renders = Arc::new(Renders::new(cores));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = match stream {
                    Ok(s) => s,
                    Err(_) => {
                        // Out of descriptors, say: wait for some to be given back.
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    }
                };
                let slot = Slot::take(&stats);
                if slot.over(max_clients) {
                    let _ = writeln!(
                        stream,
                        r#"{{"error":"EBUSY","errno":16,"message":"Error: {max_clients} clients already connected."}}"#
                    );
                    continue;
                }
                let (reader, renders) = (reader.clone(), Arc::clone(&renders));
                std::thread::spawn(move || {
                    let _ = serve_client(stream, &reader, &slot.stats, &renders);
                    drop(slot);
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

/// A client's place among those served, given back when dropped (even by a panic).
struct Slot {
    stats: Arc<ServeStats>,
    count: usize,
}

impl Slot {
    fn take(stats: &Arc<ServeStats>) -> Slot {
        Slot {
            count: stats.clients.fetch_add(1, Ordering::SeqCst) + 1,
            stats: Arc::clone(stats),
        }
    }
    fn over(&self, max: usize) -> bool {
        self.count > max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A counting semaphore: renders under way, at most `limit`.
struct Renders {
    busy: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

impl Renders {
    fn new(limit: usize) -> Self {
        Renders {
            busy: Mutex::new(0),
            freed: Condvar::new(),
            limit: limit.max(1),
        }
    }
    /// The count (never left wrong by a panic: it is only changed under this lock).
    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Runs `f` once fewer than `limit` renders are under way.
    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut busy = self.lock();
        while *busy >= self.limit {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy += 1;
        drop(busy);
        // Given back however `f` ends.
        struct Done<'r>(&'r Renders);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                *self.0.lock() -= 1;
                self.0.freed.notify_one();
            }
        }
        let _done = Done(self);
        f()
    }
}

/// Answers one client's lines until it closes. Answers are flushed once no more of the
/// client's lines are waiting, so a client that sends many commands at once gets their
/// answers in few writes. A line that is too long or not UTF-8 gets an error line, as every
/// line gets one; too long ends the connection (the rest of the line cannot be told apart).
fn serve_client(
    stream: UnixStream,
    reader: &MirrorReader,
    stats: &ServeStats,
    renders: &Renders,
) -> io::Result<()> {
    let mut input = BufReader::new(stream.try_clone()?);
    let mut output = BufWriter::new(stream);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let read = (&mut input)
            .take(LINE_LIMIT)
            .read_until(b'\n', &mut bytes)?;
        if read == 0 {
            return output.flush();
        }
        if !bytes.ends_with(b"\n") && read as u64 == LINE_LIMIT {
            writeln!(
                output,
                r#"{{"error":"E2BIG","errno":7,"message":"Error: a command longer than {LINE_LIMIT} bytes."}}"#
            )?;
            return output.flush();
        }
        let answer = match std::str::from_utf8(&bytes) {
            Ok(line) => renders.run(|| {
                let router = reader.load();
                Query::new(&router, true).answer(line)
            }),
            Err(_) => {
                r#"{"error":"EINVAL","errno":22,"message":"Error: a command that is not UTF-8."}"#
                    .to_string()
            }
        };
        output.write_all(answer.as_bytes())?;
        output.write_all(b"\n")?;
        stats.answers.fetch_add(1, Ordering::Relaxed);
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}
