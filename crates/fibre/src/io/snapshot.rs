//! Snapshots: a router's whole state in one file, to start again from where a batch, an MRT
//! load or a mirror sync left off.
//!
//! The file is a 24-byte header and a body: `FIBRESNP`, the format version (u32), the body's
//! length (u64) and its CRC-32 (u32), all little-endian; the body is the router's image
//! (`router::image`) in postcard, serde's compact binary form. The version changes whenever
//! the image's shape does: a file of another version is refused by name, never misread.
//!
//! Loading never trusts the file: a short, altered or foreign file is an error naming it, and
//! a body that decodes is still checked (devices, rules, objects, route order) before it
//! becomes a router.
use crate::router::{Router, RouterImage};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the first eight bytes say.
const MAGIC: &[u8; 8] = b"FIBRESNP";
/// The version of the image's shape this fibre writes and reads.
pub const FORMAT_VERSION: u32 = 4;
const HEADER: usize = 24;

/// Why a snapshot could not be written or read.
#[derive(Debug)]
pub struct SnapshotError {
    /// The file, when there is one.
    pub path: Option<PathBuf>,
    /// What went wrong.
    pub kind: SnapshotErrorKind,
}

/// What went wrong with a snapshot.
#[derive(Debug)]
pub enum SnapshotErrorKind {
    /// Reading or writing the file failed.
    Io(std::io::Error),
    /// The file does not start as a snapshot does.
    NotASnapshot,
    /// A snapshot of another format version.
    Version(u32),
    /// Shorter than its header says.
    Truncated {
        /// Bytes the header announces (header included).
        expected: u64,
        /// Bytes there are.
        found: u64,
    },
    /// Longer than its header says.
    TrailingBytes,
    /// The body's checksum is not the header's: the file was altered or damaged.
    Checksum,
    /// The body does not decode as an image.
    Corrupt(String),
    /// The body decodes but does not describe a router that can be (a device missing, routes
    /// out of order, ...).
    Inconsistent(String),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "snapshot {}: ", p.display())?,
            None => write!(f, "snapshot: ")?,
        }
        match &self.kind {
            SnapshotErrorKind::Io(e) => write!(f, "{e}"),
            SnapshotErrorKind::NotASnapshot => write!(f, "not a fibre snapshot"),
            SnapshotErrorKind::Version(v) => write!(
                f,
                "format version {v}; this fibre reads version {FORMAT_VERSION}"
            ),
            SnapshotErrorKind::Truncated { expected, found } => {
                write!(f, "truncated: {found} bytes of {expected}")
            }
            SnapshotErrorKind::TrailingBytes => write!(f, "bytes after the end of the snapshot"),
            SnapshotErrorKind::Checksum => write!(f, "checksum mismatch: the file is damaged"),
            SnapshotErrorKind::Corrupt(e) => write!(f, "corrupt: {e}"),
            SnapshotErrorKind::Inconsistent(e) => write!(f, "inconsistent: {e}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

fn error(kind: SnapshotErrorKind) -> SnapshotError {
    SnapshotError { path: None, kind }
}

/// The snapshot of `router`, as bytes.
pub fn to_bytes(router: &Router) -> Vec<u8> {
    let body = postcard::to_allocvec(&router.image()).expect("an image always serialises");
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The router a snapshot holds.
pub fn from_bytes(bytes: &[u8]) -> Result<Router, SnapshotError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(error(SnapshotErrorKind::NotASnapshot));
    }
    let found = bytes.len() as u64;
    let header = bytes
        .get(..HEADER)
        .ok_or(error(SnapshotErrorKind::Truncated {
            expected: HEADER as u64,
            found,
        }))?;
    let field = |at: usize, n: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&header[at..at + n]);
        u64::from_le_bytes(b)
    };
    let version = field(8, 4) as u32;
    if version != FORMAT_VERSION {
        return Err(error(SnapshotErrorKind::Version(version)));
    }
    let (len, crc) = (field(12, 8), field(20, 4) as u32);
    let expected = (HEADER as u64).saturating_add(len);
    if found < expected {
        return Err(error(SnapshotErrorKind::Truncated { expected, found }));
    }
    if found > expected {
        return Err(error(SnapshotErrorKind::TrailingBytes));
    }
    let body = &bytes[HEADER..];
    if crc32fast::hash(body) != crc {
        return Err(error(SnapshotErrorKind::Checksum));
    }
    let image: RouterImage =
        postcard::from_bytes(body).map_err(|e| error(SnapshotErrorKind::Corrupt(e.to_string())))?;
    Router::from_image(image).map_err(|e| error(SnapshotErrorKind::Inconsistent(e)))
}

/// Writes the snapshot of `router` to `path`, whole or not at all: it goes to a temporary file
/// beside `path` first, which then takes its name.
pub fn save(router: &Router, path: &Path) -> Result<(), SnapshotError> {
    let named = |kind| SnapshotError {
        path: Some(path.to_path_buf()),
        kind,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&to_bytes(router))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        named(SnapshotErrorKind::Io(e))
    })
}

/// Reads the router a snapshot file holds.
pub fn load(path: &Path) -> Result<Router, SnapshotError> {
    let bytes = std::fs::read(path).map_err(|e| SnapshotError {
        path: Some(path.to_path_buf()),
        kind: SnapshotErrorKind::Io(e),
    })?;
    from_bytes(&bytes).map_err(|e| SnapshotError {
        path: Some(path.to_path_buf()),
        ..e
    })
}
