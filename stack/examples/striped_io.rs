//! Lesson: one striped file, written and read back through the direct-attached path.
//!
//! An in-process stack (a metadata service, two storage servers with two targets each, on
//! the in-memory network, storage in a temporary directory) and one client. The client asks
//! the metadata service for a layout, creates the objects, then writes the file in calls of
//! `--transfer` bytes: each call is cut into 4 MiB packets per object, every packet one OST
//! RPC carrying a buffer descriptor that the server pulls from. Then it reads the file back,
//! checks every byte, and prints what each phase moved per second.
//!
//! With `--fyod`, the client sends every call to a PFS fyod instead (ASCI Red's path): the
//! fyod splits it by the layout and the storage servers pull from the client's memory.
//!
//! ```text
//! cargo run --release -p iopath-stack --example striped_io -- --mib 256
//! ```

use std::time::Instant;

use anyhow::{Context as _, ensure};
use bytes::Bytes;
use clap::Parser;
use iopath_client::StripeRequest;
use iopath_fabric::units::parse_size;
use iopath_stack::testing::{TestStack, TestStackConfig};

#[derive(Parser, Debug)]
struct Args {
    /// File size in MiB.
    #[arg(long, default_value_t = 256)]
    mib: u64,
    /// Bytes per write and read call (k, m, g suffixes).
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    transfer: u64,
    /// Stripe count (-1: every target).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    stripe_count: i64,
    /// Stripe size (k, m suffixes).
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    stripe_size: u64,
    /// Commit every write before replying (sync journal) instead of after (async).
    #[arg(long)]
    sync: bool,
    /// Go through a PFS fyod instead of straight to the storage servers.
    #[arg(long)]
    fyod: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(args.transfer > 0, "--transfer must be positive");
    let stack = TestStack::start(TestStackConfig {
        sync_journal: args.sync,
        fyods: u32::from(args.fyod),
        ..TestStackConfig::default()
    })
    .await
    .context("start the stack")?;
    let client = if args.fyod {
        stack.client_through_fyod(0).await
    } else {
        stack.client().await
    }
    .context("connect a client")?;
    let file = client
        .create(
            "/striped",
            StripeRequest {
                stripe_size_bytes: args.stripe_size,
                stripe_count: args.stripe_count,
                stripe_offset: -1,
            },
        )
        .await
        .context("create /striped")?;
    println!("layout: {}", file.layout());
    let total = args.mib << 20;
    // One buffer of the call size, its bytes a function of the offset they are written at.
    let fill = |offset: u64, len: u64| -> Bytes {
        (0..len)
            .map(|i| ((offset + i) % 251) as u8)
            .collect::<Vec<u8>>()
            .into()
    };

    let mut kept_peak = 0;
    let mut offset = 0;
    let mut data_time = std::time::Duration::ZERO;
    // Bounded by the file size.
    while offset < total {
        let len = args.transfer.min(total - offset);
        let data = fill(offset, len);
        let call = Instant::now();
        file.write_at(offset, data).await.context("write")?;
        data_time += call.elapsed();
        kept_peak = kept_peak.max(client.kept_bytes());
        offset += len;
    }
    let write_s = data_time.as_secs_f64();
    let call = Instant::now();
    file.fsync().await.context("fsync")?;
    let fsync_s = write_s + call.elapsed().as_secs_f64();

    let mut read_s = 0.0;
    offset = 0;
    while offset < total {
        let len = args.transfer.min(total - offset);
        let call = Instant::now();
        let data = file.read_at(offset, len).await.context("read")?;
        read_s += call.elapsed().as_secs_f64();
        ensure!(
            data == fill(offset, len),
            "bytes at {offset} did not read back"
        );
        offset += len;
    }
    ensure!(file.size().await? == total, "size after the write");

    let mib = total as f64 / f64::from(1 << 20);
    println!(
        "write: {mib:.0} MiB in {write_s:.3} s = {:.0} MiB/s (kept for replay at most {} MiB)",
        mib / write_s,
        kept_peak >> 20
    );
    println!("write + fsync: {:.0} MiB/s", mib / fsync_s);
    println!(
        "read:  {mib:.0} MiB in {read_s:.3} s = {:.0} MiB/s (every byte checked)",
        mib / read_s
    );
    Ok(())
}
