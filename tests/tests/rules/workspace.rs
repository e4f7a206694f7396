//! The workspace as the source-reading tests see it: its root and its members' folders.

use std::path::{Path, PathBuf};

/// The workspace root: the tests crate's parent folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// The workspace's member folders, from the root `Cargo.toml`'s `members = [...]`.
pub fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the root manifest");
    let list = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the workspace lists its members");
    list.lines()
        .filter_map(|line| line.split('#').next()?.trim().strip_prefix('"'))
        .filter_map(|name| name.split('"').next())
        .map(|name| root.join(name))
        .collect()
}
