//! Output files written whole under a temporary name beside the target, then renamed over it:
//! a failure (a full disk, a killed process) never leaves a truncated file in place of an
//! earlier, complete one.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

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
/// # Ok::<(), zkmha_api::Error>(())
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

fn write_with(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let fail = |source: std::io::Error| Err(Error::Write { path: path.to_path_buf(), source });
    // A link is followed: its target is replaced (in the target's folder), not the link.
    let resolved = match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => std::fs::canonicalize(path).ok(),
        _ => None,
    };
    let path = resolved.as_deref().unwrap_or(path);
    // What is not a regular file (a device such as /dev/null, a pipe) is written through: a
    // rename would replace it with a file.
    if let Ok(metadata) = std::fs::metadata(path)
        && !metadata.is_file()
        && !metadata.is_dir()
    {
        let written =
            std::fs::OpenOptions::new().write(true).open(path).and_then(|mut file| file.write_all(bytes));
        return written.or_else(fail);
    }
    let name = path.file_name().ok_or_else(|| Error::NotAFileName { path: path.to_path_buf() })?;
    let mut temporary_name = OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
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
    let written = options
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, path));
    written.or_else(|e| {
        let _ = std::fs::remove_file(&temporary);
        fail(e)
    })
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
