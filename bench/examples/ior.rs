//! IOR on an emulated stack, what `iopath bench ior -w -r -F -t 1m -b 16m` does: every client
//! node of a preset (asci-red-mini unless named) runs one IOR task, each writing a file of
//! its own in 1 MiB transfers, then reading it back with every word checked — IOR's output,
//! beside the raw disk measured in the same run.
//!
//! `cargo run --release -p iopath-bench --example ior -- [PRESET]`

use iopath_bench::ior::phase::Progress;
use iopath_bench::ior::{IorOptions, measure};
use iopath_stack::StackChoice;

#[tokio::main]
async fn main() -> Result<(), iopath_bench::BenchError> {
    let options = IorOptions {
        choice: StackChoice {
            preset: std::env::args().nth(1),
            ..StackChoice::default()
        },
        write: true,
        read: true,
        file_per_proc: true,
        transfer_size_bytes: 1 << 20,
        block_size_bytes: 16 << 20,
        ..IorOptions::default()
    };
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let mut out = std::io::stdout();
    measure(&options, &command_line, &mut out, Progress::Stderr, None)
        .await
        .map(drop)
}
