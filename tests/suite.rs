//! The crate's integration tests as one test binary: one link, and the generic provers and
//! verifiers the files share compiled once instead of once per file (the README's test command
//! builds in minutes, not tens of minutes). Each file is a module; run one with
//! `cargo test --test suite FILE::`.

mod chain_cli;
mod cli;
mod files_and_resources;
mod model_cli;

/// The bytes of `name` in the .npz file at `path` (what `zkmha verify --output` writes).
#[allow(clippy::unwrap_used)]
pub fn npz_member(path: &std::path::Path, name: &str) -> Vec<u8> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut bytes = Vec::new();
    archive.by_name(name).unwrap().read_to_end(&mut bytes).unwrap();
    bytes
}

/// The names in the .npz file at `path`, in order.
#[allow(clippy::unwrap_used)]
pub fn npz_names(path: &std::path::Path) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..archive.len()).map(|i| archive.by_index(i).unwrap().name().unwrap().to_string()).collect()
}
