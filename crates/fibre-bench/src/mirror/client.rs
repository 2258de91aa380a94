//! A client of `fibre mirror`'s socket, and the mirror process it talks to.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One connection: a command out, one JSON line back.
pub struct Client {
    out: UnixStream,
    input: BufReader<UnixStream>,
    line: String,
}

impl Client {
    pub fn connect(path: &Path) -> Result<Client, String> {
        let out = UnixStream::connect(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let input = BufReader::new(out.try_clone().map_err(|e| e.to_string())?);
        Ok(Client {
            out,
            input,
            line: String::new(),
        })
    }

    /// The answer's line, without its newline.
    pub fn ask(&mut self, command: &str) -> Result<&str, String> {
        writeln!(self.out, "{command}").map_err(|e| format!("send: {e}"))?;
        self.line.clear();
        self.input
            .read_line(&mut self.line)
            .map_err(|e| format!("receive: {e}"))?;
        if !self.line.ends_with('\n') {
            return Err(format!("{command}: the mirror closed the connection"));
        }
        Ok(self.line.trim_end())
    }
}

/// A `fibre mirror` process answering on a socket, stopped (SIGTERM) when dropped.
pub struct MirrorProcess {
    child: Child,
    pub socket: PathBuf,
    log: Option<std::thread::JoinHandle<String>>,
}

impl MirrorProcess {
    /// Starts `fibre mirror` and waits (up to `wait`) until its socket answers (it listens
    /// before its first sync, and answers after it).
    pub fn start(
        fibre: &Path,
        netns: &str,
        socket: PathBuf,
        extra: &[String],
        wait: Duration,
    ) -> Result<MirrorProcess, String> {
        let mut child = Command::new(fibre)
            .args(["mirror", "--netns", netns])
            .arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", fibre.display()))?;
        let mut err = child.stderr.take().expect("piped");
        let log = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        let mut process = MirrorProcess {
            child,
            socket,
            log: Some(log),
        };
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(Some(status)) = process.child.try_wait() {
                return Err(format!(
                    "fibre mirror exited ({status}): {}",
                    process.stop().1
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("fibre mirror did not answer within {wait:?}"));
            }
            if let Ok(mut client) = Client::connect(&process.socket) {
                client.ask("link show")?;
                return Ok(process);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the mirror: SIGTERM, then SIGKILL if it has not exited within 10 s. Returns how
    /// it exited on SIGTERM (`None`: it had to be killed, or had gone before), and what it
    /// logged.
    pub fn stop(&mut self) -> (Option<ExitStatus>, String) {
        let mut status = None;
        // A child already reaped is not signalled: its pid may be another process's by now.
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: a signal to our own child, not yet reaped; no memory is touched.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            status = loop {
                match self.child.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => break None,
                }
            };
        }
        if status.is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let log = self
            .log
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (status, log)
    }
}

impl MirrorProcess {
    /// Kills the mirror at once (SIGKILL: no clean-up, as a crash); what it had logged.
    pub fn kill(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for MirrorProcess {
    fn drop(&mut self) {
        if self.log.is_some() {
            self.stop();
        }
    }
}
