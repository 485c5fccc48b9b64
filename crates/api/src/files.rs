//! Output files written whole under a temporary name beside the target, then renamed over it:
//! a failure (a full disk, a killed process) never leaves a truncated file in place of an
//! earlier, complete one.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (a temporary file in the same folder, flushed to disk,
/// then renamed). A link is followed (its target replaced); what is not a regular file (a
/// device such as `/dev/null`, a pipe) is written through instead.
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-write-{}.bin", std::process::id()));
/// zkmha_api::files::write_file(&path, b"first, longer")?;
/// zkmha_api::files::write_file(&path, b"second")?;
/// assert_eq!(std::fs::read(&path)?, b"second");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Write`] naming `path` when the folder cannot be written (the I/O error kept as its
/// source: a full disk is [`crate::ErrorKind::OutOfResources`]), [`Error::NotAFileName`]; the
/// temporary file is removed and any earlier file at `path` is left as it was.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, bytes, false)
}

/// [`write_file`] for a secret: on Unix the file is created readable and writable by its
/// owner only (mode 0600).
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-private-{}.secret", std::process::id()));
/// zkmha_api::files::write_private_file(&path, b"blinds")?;
/// # #[cfg(unix)]
/// # {
/// use std::os::unix::fs::PermissionsExt;
/// assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
/// # }
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`write_file`].
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, bytes, true)
}

/// Whether two paths name one file (the same path, or one existing file by two names).
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Refuses a run that would write one of the files it reads, or two of its outputs to one
/// file: `reads` and `writes` are each file's name as the user knows it (`--out`, `the model
/// file`) and its path.
///
/// ```
/// use std::path::Path;
/// let (model, proof) = (Path::new("model.gguf"), Path::new("layer.proof"));
/// zkmha_api::files::check_distinct_files(&[("the model file", model)], &[("--out", proof)])?;
/// let error = zkmha_api::files::check_distinct_files(&[("the model file", model)], &[("--out", model)])
///     .unwrap_err();
/// assert_eq!(error.kind(), zkmha_api::ErrorKind::Usage);
/// # Ok::<(), zkmha_api::Error>(())
/// ```
///
/// # Errors
/// [`Error::SameFile`] naming the two.
pub fn check_distinct_files(reads: &[(&str, &Path)], writes: &[(&str, &Path)]) -> Result<()> {
    for (name, path) in writes {
        check_writable(name, path)?;
    }
    for (index, (name, path)) in writes.iter().enumerate() {
        for (earlier, earlier_path) in writes.iter().take(index) {
            if same_file(path, earlier_path) {
                return Err(Error::SameFile {
                    what: format!("{earlier} and {name} name the same file, {}", path.display()),
                });
            }
        }
        for (read, read_path) in reads {
            if same_file(path, read_path) {
                return Err(Error::SameFile {
                    what: format!("{name} names {read}, {}, which this run reads", path.display()),
                });
            }
        }
    }
    Ok(())
}

/// Refuses an output path that cannot be a file before any work: a folder, or a path in a
/// folder that does not exist (found after proving, the work was lost).
///
/// # Errors
/// [`Error::UnwritablePath`] ([`crate::ErrorKind::Usage`]).
pub fn check_writable(name: &str, path: &Path) -> Result<()> {
    let problem = if path.is_dir() {
        Some("is a folder, not a file".to_string())
    } else {
        match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(folder) if !folder.is_dir() => {
                Some(format!("is in {}, which does not exist", folder.display()))
            }
            _ => None,
        }
    };
    match problem {
        Some(problem) => Err(Error::UnwritablePath { what: format!("{name} {} {problem}", path.display()) }),
        None => Ok(()),
    }
}

/// Writes a `rows × columns` tensor as a .npy file (row-major, the element type's own dtype),
/// through [`write_file`].
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-{}.npy", std::process::id()));
/// zkmha_api::files::write_npy(&path, 2, 3, &[1i64, 2, 3, 4, 5, 6])?;
/// assert!(std::fs::read(&path)?.starts_with(b"\x93NUMPY"));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::EncodeNpy`] or, from [`write_file`], [`Error::Write`], naming the file.
pub fn write_npy<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    rows: usize,
    columns: usize,
    values: &[T],
) -> Result<()> {
    let bytes = encode_npy(&[rows as u64, columns as u64], values)
        .map_err(|source| Error::EncodeNpy { path: path.to_path_buf(), source })?;
    write_file(path, &bytes)
}

/// A `rows × columns` matrix as the bytes [`write_npy`] writes, for [`write_files`].
///
/// # Errors
/// [`Error::EncodeNpy`] naming `path` (the file the bytes are for).
pub fn npy_bytes<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    rows: usize,
    columns: usize,
    values: &[T],
) -> Result<Vec<u8>> {
    encode_npy(&[rows as u64, columns as u64], values)
        .map_err(|source| Error::EncodeNpy { path: path.to_path_buf(), source })
}

/// A tensor of `shape` as .npy bytes (row-major, the element type's own dtype).
fn encode_npy<T: npyz::AutoSerialize + Copy>(shape: &[u64], values: &[T]) -> std::io::Result<Vec<u8>> {
    use npyz::WriterBuilder;
    let mut bytes = Vec::with_capacity(128 + 8 * values.len());
    let mut writer =
        npyz::WriteOptions::<T>::new().default_dtype().shape(shape).writer(&mut bytes).begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()?;
    Ok(bytes)
}

/// Checks an .npy file's bytes against its header: the data after the header must be exactly
/// `elements` values of `item_size` bytes (numpy writes no more; a longer file is not the
/// array its header describes).
///
/// ```
/// let path = std::env::temp_dir().join(format!("zkmha-doc-npy-length-{}.npy", std::process::id()));
/// zkmha_api::files::write_npy(&path, 2, 3, &[1.0f64; 6])?;
/// let mut bytes = std::fs::read(&path)?;
/// assert_eq!(zkmha_api::files::check_npy_length(&bytes, 6, 8), Ok(()));
/// bytes.extend_from_slice(&[0; 8]);
/// assert!(zkmha_api::files::check_npy_length(&bytes, 6, 8).unwrap_err().contains("8 bytes more"));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// A sentence saying how many bytes more or fewer the file holds.
pub fn check_npy_length(bytes: &[u8], elements: u64, item_size: u64) -> std::result::Result<(), String> {
    let header_end = match (bytes.get(6), bytes.get(8..12)) {
        (Some(1), Some(&[a, b, _, _])) => 10 + u64::from(u16::from_le_bytes([a, b])),
        (Some(_), Some(&[a, b, c, d])) => 12 + u64::from(u32::from_le_bytes([a, b, c, d])),
        _ => return Err("has no complete .npy header".into()),
    };
    let data = (bytes.len() as u64).saturating_sub(header_end);
    let expected = elements.saturating_mul(item_size);
    match data.cmp(&expected) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(format!(
            "holds {} bytes more than its header's shape and type ({expected} bytes of values): it is not the array its header describes",
            data - expected
        )),
        std::cmp::Ordering::Less => Err(format!(
            "holds {data} bytes of values, fewer than its header's shape and type need ({expected})"
        )),
    }
}

/// An .npy parser's complaint in one line (npyz's spans several, quoting the header).
pub fn npy_header_problem(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    let first = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("unreadable header");
    format!("is not a valid .npy file: its header does not parse ({})", first.trim_end_matches(':'))
}

/// An array of an .npz file: its name and its values.
#[derive(Debug, Clone, PartialEq)]
pub enum NpzArray<'a> {
    /// `rows × columns` float64, row-major.
    Float64 {
        /// Rows.
        rows: usize,
        /// Columns.
        columns: usize,
        /// The values.
        values: &'a [f64],
    },
    /// `rows × columns` int64, row-major.
    Int64 {
        /// Rows.
        rows: usize,
        /// Columns.
        columns: usize,
        /// The values.
        values: &'a [i64],
    },
    /// A vector of uint64 (token ids, positions).
    UInt64(&'a [u64]),
}

/// Writes named arrays as one .npz file (numpy's zip of .npy files, stored uncompressed:
/// `numpy.load(path)["name"]`), through [`write_file`].
///
/// ```
/// use zkmha_api::files::{NpzArray, write_npz};
/// let path = std::env::temp_dir().join(format!("zkmha-doc-{}.npz", std::process::id()));
/// let logits = [0.5, -1.0, 2.0];
/// write_npz(&path, &[("logits", NpzArray::Float64 { rows: 1, columns: 3, values: &logits }), ("positions", NpzArray::UInt64(&[4]))])?;
/// assert!(std::fs::read(&path)?.starts_with(b"PK"));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::EncodeNpy`], or as [`write_file`].
pub fn write_npz(path: &Path, arrays: &[(&str, NpzArray<'_>)]) -> Result<()> {
    let encode_error = |source: std::io::Error| Error::EncodeNpy { path: path.to_path_buf(), source };
    let zip_error = |e: zip::result::ZipError| encode_error(std::io::Error::other(e));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(false);
    for (name, array) in arrays {
        let bytes = match array {
            NpzArray::Float64 { rows, columns, values } => {
                encode_npy(&[*rows as u64, *columns as u64], values)
            }
            NpzArray::Int64 { rows, columns, values } => encode_npy(&[*rows as u64, *columns as u64], values),
            NpzArray::UInt64(values) => encode_npy(&[values.len() as u64], values),
        }
        .map_err(encode_error)?;
        zip.start_file(format!("{name}.npy"), options).map_err(zip_error)?;
        zip.write_all(&bytes).map_err(encode_error)?;
    }
    let bytes = zip.finish().map_err(zip_error)?.into_inner();
    write_file(path, &bytes)
}

/// One file of a set written together by [`write_files`].
#[derive(Debug, Clone, Copy)]
pub struct FileToWrite<'a> {
    /// Where it goes.
    pub path: &'a Path,
    /// Its whole content.
    pub bytes: &'a [u8],
    /// Readable by its owner only ([`write_private_file`]).
    pub private: bool,
}

impl<'a> FileToWrite<'a> {
    /// A file anyone may read.
    pub fn public(path: &'a Path, bytes: &'a [u8]) -> Self {
        Self { path, bytes, private: false }
    }

    /// A file its owner only may read (a secret).
    pub fn private(path: &'a Path, bytes: &'a [u8]) -> Self {
        Self { path, bytes, private: true }
    }
}

/// Writes files that belong together (a key and its secret, a key made for a proof and the
/// proof, a proof and its outputs): every one is first written whole under its temporary name
/// and flushed; only then are they renamed over their targets, in the order given (put the
/// one the others depend on first: the key). A failure while writing any of them (a full
/// disk, a folder that cannot be written, a file-size limit) leaves every earlier file as it
/// was — never a new key beside an old secret or proof — and removes every temporary file.
///
/// ```
/// use zkmha_api::files::{FileToWrite, write_files};
/// let dir = std::env::temp_dir().join(format!("zkmha-doc-pair-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let (key, secret) = (dir.join("m.vk"), dir.join("m.vk.secret"));
/// write_files(&[FileToWrite::public(&key, b"key 1"), FileToWrite::private(&secret, b"secret 1")])?;
/// // The secret's folder does not exist: neither file is replaced.
/// let elsewhere = dir.join("missing").join("m.vk.secret");
/// let failed = write_files(&[FileToWrite::public(&key, b"key 2"), FileToWrite::private(&elsewhere, b"secret 2")]);
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read(&key)?, b"key 1");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`write_file`], naming the file that failed.
pub fn write_files(files: &[FileToWrite<'_>]) -> Result<()> {
    let mut staged = Vec::with_capacity(files.len());
    for file in files {
        match stage(file.path, file.bytes, file.private) {
            Ok(one) => staged.push(one),
            Err(error) => {
                staged.iter().for_each(Staged::discard);
                return Err(error);
            }
        }
    }
    let mut staged = staged.into_iter();
    while let Some(one) = staged.next() {
        if let Err(error) = one.commit() {
            staged.for_each(|rest| rest.discard());
            return Err(error);
        }
    }
    Ok(())
}

fn write_with(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    stage(path, bytes, private)?.commit()
}

/// A file written whole under its temporary name, not yet renamed over its target; or a
/// target that is not a regular file (a device, a pipe), written through when committed.
enum Staged<'a> {
    Temporary { temporary: PathBuf, path: PathBuf },
    Through { path: PathBuf, bytes: &'a [u8] },
}

impl Staged<'_> {
    fn commit(self) -> Result<()> {
        match self {
            Staged::Temporary { temporary, path } => std::fs::rename(&temporary, &path).map_err(|source| {
                let _ = std::fs::remove_file(&temporary);
                Error::Write { path, source }
            }),
            Staged::Through { path, bytes } => std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut file| file.write_all(bytes))
                .map_err(|source| Error::Write { path, source }),
        }
    }

    fn discard(&self) {
        if let Staged::Temporary { temporary, .. } = self {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

/// The temporary name of `name` for process `pid`: `.NAME.PID.tmp`, beside it.
fn temporary_name(name: &std::ffi::OsStr, pid: u32) -> OsString {
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".{pid}.tmp"));
    temporary
}

/// Removes the temporary files of `name` that runs killed before renaming them left behind
/// (`.NAME.PID.tmp` whose process no longer runs, where the system lists its processes in
/// /proc; elsewhere none is removed).
fn remove_stale_temporaries(folder: &Path, name: &std::ffi::OsStr) {
    let processes = Path::new("/proc/self");
    if !processes.exists() {
        return;
    }
    let Some(name) = name.to_str() else { return };
    let Ok(entries) = std::fs::read_dir(if folder.as_os_str().is_empty() { Path::new(".") } else { folder })
    else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if !alive && pid != std::process::id() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn stage<'a>(path: &Path, bytes: &'a [u8], private: bool) -> Result<Staged<'a>> {
    let fail = |source: std::io::Error| Err(Error::Write { path: path.to_path_buf(), source });
    // A link is followed: its target is replaced (in the target's folder), not the link.
    let resolved = match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => std::fs::canonicalize(path).ok(),
        _ => None,
    };
    let path = resolved.as_deref().unwrap_or(path);
    // What is not a regular file (a device such as /dev/null, a pipe) is written through: a
    // rename would replace it with a file.
    match std::fs::metadata(path) {
        // A folder cannot be renamed over: found now, before any of its set is renamed.
        Ok(metadata) if metadata.is_dir() => {
            return fail(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a folder"));
        }
        Ok(metadata) if !metadata.is_file() => {
            return Ok(Staged::Through { path: path.to_path_buf(), bytes });
        }
        _ => {}
    }
    let name = path.file_name().ok_or_else(|| Error::NotAFileName { path: path.to_path_buf() })?;
    let temporary = path.with_file_name(temporary_name(name, std::process::id()));
    remove_stale_temporaries(path.parent().unwrap_or(Path::new(".")), name);
    // A file or link left at the temporary name (a killed run, or planted) is removed, and the
    // temporary is created new: never written through a link, never with a stale file's
    // permissions.
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return fail(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    let written =
        options.open(&temporary).and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()));
    match written {
        Ok(()) => Ok(Staged::Temporary { temporary, path: path.to_path_buf() }),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            fail(e)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir = std::env::temp_dir().join(format!("zkmha-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.bin");
        write_file(&path, b"first, longer content").unwrap();
        write_file(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A folder that does not exist: one sentence, nothing written.
        let missing = dir.join("missing").join("out.bin");
        let error = write_file(&missing, b"x").unwrap_err();
        let source = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
        assert!(source.contains("No such file"), "the I/O error is kept: {source}");
        let error = error.to_string();
        assert!(error.starts_with("could not write") && !error.contains('\n'), "{error}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_that_belong_together_are_replaced_together_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("zkmha-files-pair-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (key, secret, proof) = (dir.join("m.vk"), dir.join("m.vk.secret"), dir.join("m.proof"));
        write_files(&[FileToWrite::public(&key, b"key 1"), FileToWrite::private(&secret, b"secret 1")])
            .unwrap();
        write_file(&proof, b"proof 1").unwrap();
        // The last of three cannot be written (a folder at its path): none is replaced.
        let folder = dir.join("folder");
        std::fs::create_dir_all(&folder).unwrap();
        let error = write_files(&[
            FileToWrite::public(&key, b"key 2"),
            FileToWrite::private(&secret, b"secret 2"),
            FileToWrite::public(&folder, b"proof 2"),
        ])
        .unwrap_err();
        assert!(matches!(&error, Error::Write { path, .. } if path == &folder), "{error}");
        assert_eq!(std::fs::read(&key).unwrap(), b"key 1");
        assert_eq!(std::fs::read(&secret).unwrap(), b"secret 1");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 4, "no temporary file is left: {names:?}");
        // All written: all replaced.
        write_files(&[FileToWrite::public(&key, b"key 3"), FileToWrite::public(&proof, b"proof 3")]).unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"key 3");
        assert_eq!(std::fs::read(&proof).unwrap(), b"proof 3");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_temporary_files_of_killed_runs_are_removed_and_a_running_ones_kept() {
        let dir = std::env::temp_dir().join(format!("zkmha-files-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Process ids above the kernel's largest (2^22) run nowhere; process 1 always runs.
        let dead = dir.join(".out.bin.4999999.tmp");
        let running = dir.join(".out.bin.1.tmp");
        let other = dir.join(".other.bin.4999999.tmp");
        for path in [&dead, &running, &other] {
            std::fs::write(path, b"partial").unwrap();
        }
        write_file(&dir.join("out.bin"), b"whole").unwrap();
        assert!(!dead.exists(), "a killed run's temporary file is removed");
        assert!(running.exists(), "a running process's is kept");
        assert!(other.exists(), "another file's is not this write's to remove");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_followed_and_a_pipe_is_written_through_not_replaced() {
        let dir = std::env::temp_dir().join(format!("zkmha-files-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (target, link) = (dir.join("target.bin"), dir.join("link.bin"));
        write_file(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "no temporary file is left");
        // A link to nothing is replaced by the file (there is no target to keep).
        let dangling = dir.join("dangling.bin");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        write_file(&dangling, b"file").unwrap();
        assert_eq!(std::fs::read(&dangling).unwrap(), b"file");
        std::fs::remove_file(&dangling).unwrap();
        // A named pipe, with its reader open (non-blocking, so a regression fails, not hangs).
        let pipe = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&pipe).status();
        if made.is_ok_and(|status| status.success()) {
            use std::io::Read;
            use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
            const O_NONBLOCK: i32 = 0o4000; // Linux
            let mut reader =
                std::fs::OpenOptions::new().read(true).custom_flags(O_NONBLOCK).open(&pipe).unwrap();
            write_file(&pipe, b"through").unwrap();
            let mut received = Vec::new();
            let _ = reader.read_to_end(&mut received);
            assert_eq!(received, b"through");
            assert!(std::fs::metadata(&pipe).unwrap().file_type().is_fifo(), "the pipe is still a pipe");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("zkmha-private-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("model.secret");
        write_private_file(&path, b"blinds").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"blinds");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The review's case: a temporary file already at the predictable name (mode 0644) must not
    /// lend the secret its permissions, and a link there is not written through.
    #[cfg(unix)]
    #[test]
    fn a_stale_temporary_file_or_link_does_not_leak_the_secret() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("zkmha-review-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("model.secret");
        let stale = dir.join(format!(".model.secret.{}.tmp", std::process::id()));
        std::fs::write(&stale, b"").unwrap();
        std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private_file(&path, b"blinds").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the secret was written with mode {mode:o}");
        // A link at the temporary name to a file elsewhere: that file is left untouched.
        let elsewhere = dir.join("elsewhere");
        std::fs::write(&elsewhere, b"untouched").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &stale).unwrap();
        write_private_file(&path, b"blinds 2").unwrap();
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"untouched");
        assert_eq!(std::fs::read(&path).unwrap(), b"blinds 2");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(mode, 0o600);
    }
}
