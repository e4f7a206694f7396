//! Compiles every `.proto` file under `proto/` with protox, a protobuf compiler written in
//! Rust, so a fresh machine needs only cargo — no system `protoc`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from("proto");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
        .collect();
    files.sort();
    println!("cargo:rerun-if-changed={}", dir.display());
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let descriptors = protox::compile(&files, [&dir])?;
    tonic_prost_build::configure()
        // Bulk-carrying `bytes` fields decode into `bytes::Bytes`: a slice of the received
        // frame, not a copy.
        .bytes(".")
        .compile_fds(descriptors)?;
    Ok(())
}
