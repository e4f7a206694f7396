//! The mount's write-back: small writes reach the storage servers gathered into full RPCs,
//! at close, and are seen by `stat` and by reads before then.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::SystemTime;

use iopath_client::{Client, ClientConfig};
use iopath_mount::Mount;
use iopath_ost_client::OscStats;
use iopath_stack::testing::{TestStack, TestStackConfig};

/// Write RPCs this client's OST clients completed, every target together.
fn write_rpcs(stats: &OscStats) -> u64 {
    stats
        .targets()
        .iter()
        .map(|t| t.counters().bytes[1].samples)
        .sum()
}

/// The byte the test's `i`th 4 KiB write fills its block with.
fn byte_of_block(i: usize) -> u8 {
    (i % 251) as u8
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn small_writes_are_sent_as_full_rpcs_at_close_and_read_back_before() {
    assert!(
        std::path::Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: this machine cannot mount FUSE file systems"
    );
    let stack = TestStack::start(TestStackConfig::default()).await.unwrap();
    let (node, id) = stack.client_node().await.unwrap();
    let stats = Arc::new(OscStats::new(0..stack.targets_count(), SystemTime::now()));
    let mut config = ClientConfig::new(node, stack.mds_nid(), id);
    config.osc_stats = Some(Arc::clone(&stats));
    let client = Client::connect(config).await.unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let mount = Mount::new(client.clone(), tokio::runtime::Handle::current(), &dir).unwrap();

    let path = dir.join("small-writes");
    let counted = Arc::clone(&stats);
    let seen = tokio::task::spawn_blocking(move || {
        // 512 writes of 4 KiB, each its own write call (a File is unbuffered): 2 MiB, two
        // stripes of 1 MiB.
        let mut file = std::fs::File::create(&path).unwrap();
        for i in 0..512 {
            file.write_all(&[byte_of_block(i); 4096]).unwrap();
        }
        let before_close = write_rpcs(&counted);
        // `stat` sees the file's whole length while its bytes are still here.
        let size = std::fs::metadata(&path).unwrap().len();
        drop(file);
        let after_close = write_rpcs(&counted);
        // Dirty bytes a read touches are sent before it.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.write_all_at(&[7; 100], 4000).unwrap();
        let mut at = [0u8; 200];
        file.read_exact_at(&mut at, 3950).unwrap();
        let after_read = write_rpcs(&counted);
        drop(file);
        let mut whole = Vec::new();
        let mut file = std::fs::File::open(&path).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut whole).unwrap();
        (before_close, size, after_close, at, after_read, whole)
    })
    .await
    .unwrap();
    let (before_close, size, after_close, at, after_read, whole) = seen;
    assert_eq!(before_close, 0, "small writes were sent before the close");
    assert_eq!(size, 2 << 20, "stat before the close");
    // A full RPC per 1 MiB stripe, not 512: the writes were gathered.
    assert!(
        after_close <= 4,
        "{after_close} write RPCs for 512 writes of 4 KiB"
    );
    assert!(
        after_read > after_close,
        "the read did not send the write it touches first"
    );
    assert_eq!(&at[..50], &[byte_of_block(0); 50][..]);
    assert_eq!(&at[50..150], &[7u8; 100][..]);
    assert_eq!(&at[150..], &[byte_of_block(1); 50][..]);
    assert_eq!(whole.len(), 2 << 20);
    for (at, byte) in whole.iter().enumerate() {
        let want = if (4000..4100).contains(&at) {
            7
        } else {
            byte_of_block(at / 4096)
        };
        assert_eq!(*byte, want, "byte {at}");
    }
    mount.unmount().unwrap();
    client.close().await.unwrap();
}
