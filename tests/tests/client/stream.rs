//! stdio-like buffered streams: full buffers go out as one write, large writes bypass the
//! buffer, reads refill a buffer at a time, `setvbuf` changes the size mid-stream, and the
//! bytes always come back as written.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use common::{KIB, MIB, Pattern, check, seed, stack, stripe};
use iopath_client::ClientError;
use iopath_client::config::{STREAM_BUFFER_DEFAULT_BYTES, STREAM_BUFFER_MAX_BYTES};

/// Many small writes through buffers of several sizes: the number of writes sent is exactly
/// the number of full buffers plus the final flush, and the file holds every byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_writes_go_out_as_full_buffers() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let record = 1000u64;
    let records = 700u64;
    let total = record * records;
    for buffer in [1usize, 4096, STREAM_BUFFER_DEFAULT_BYTES, 64 << 10, 1 << 20] {
        let path = format!("/s{buffer}");
        let file = client
            .create(&path, stripe(64 * KIB, -1, -1))
            .await
            .unwrap();
        let mut stream = client.stream(file, buffer).unwrap();
        for r in 0..records {
            let data = pattern.bytes(r * record, record);
            assert_eq!(stream.write(&data).await.unwrap(), record as usize);
        }
        assert_eq!(stream.position(), total);
        stream.flush().await.unwrap();
        let buffer = buffer as u64;
        // Writes of 1000 bytes into a 1-byte buffer bypass it: one write each.
        let expected_writes = if buffer <= record {
            records
        } else {
            total.div_ceil(buffer)
        };
        assert_eq!(stream.writes_issued(), expected_writes, "{path}");
        let file = stream.close().await.unwrap();
        // Read back through a fresh stream (at least 64 KiB: 1-byte reads would take long).
        let read_buffer = buffer.max(64 * KIB);
        let mut reader = client.stream(file.clone(), read_buffer as usize).unwrap();
        reader.seek(0).await.unwrap();
        let mut back = vec![0u8; total as usize + 10];
        let n = reader.read(&mut back).await.unwrap();
        check(&path, &back[..n], &pattern.bytes(0, total));
        // Reads refill one whole buffer at a time, plus the one that finds the end.
        assert_eq!(
            reader.reads_issued(),
            total.div_ceil(read_buffer) + 1,
            "{path}"
        );
        assert_eq!(file.size().await.unwrap(), total, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_issued_are_counted_per_full_buffer() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let file = client.create("/count", stripe(MIB, 2, -1)).await.unwrap();
    let mut stream = client.stream(file, 64 * 1024).unwrap();
    // 100 writes of 1000 bytes fill one 64 KiB buffer once (65,536 < 100,000 < 131,072).
    for r in 0..100u64 {
        stream.write(&pattern.bytes(r * 1000, 1000)).await.unwrap();
    }
    assert_eq!(stream.writes_issued(), 1, "one full buffer sent");
    stream.flush().await.unwrap();
    assert_eq!(stream.writes_issued(), 2, "the rest on flush");
    // A write larger than the buffer bypasses it: flushed first (nothing here), then sent.
    stream
        .write(&pattern.bytes(100_000, 200_000))
        .await
        .unwrap();
    assert_eq!(stream.writes_issued(), 3);
    // Buffered bytes go out before a bypassing write, in order.
    stream.write(&pattern.bytes(300_000, 10)).await.unwrap();
    stream
        .write_bytes(pattern.bytes(300_010, 100_000))
        .await
        .unwrap();
    assert_eq!(stream.writes_issued(), 5);
    let file = stream.close().await.unwrap();
    check(
        "/count",
        &file.read_at(0, 400_010).await.unwrap(),
        &pattern.bytes(0, 400_010),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setvbuf_mid_stream_and_switching_between_reading_and_writing() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let file = client
        .create("/mixed", stripe(64 * KIB, -1, -1))
        .await
        .unwrap();
    let mut stream = client.stream(file, 0).unwrap();
    // Unbuffered: every write is sent.
    stream.write(&pattern.bytes(0, 10)).await.unwrap();
    stream.write(&pattern.bytes(10, 10)).await.unwrap();
    assert_eq!(stream.writes_issued(), 2);
    stream.setvbuf(4096).await.unwrap();
    for r in 0..50u64 {
        stream
            .write(&pattern.bytes(20 + r * 100, 100))
            .await
            .unwrap();
    }
    stream.setvbuf(1 << 20).await.unwrap(); // flushes what the 4 KiB buffer held
    assert_eq!(stream.position(), 5020);
    // Read the start again: the read buffer reads ahead, then a write at the stream's
    // position lands right after what was handed out, not after the read-ahead.
    stream.seek(0).await.unwrap();
    let mut head = vec![0u8; 1000];
    assert_eq!(stream.read(&mut head).await.unwrap(), 1000);
    check("head", &head, &pattern.bytes(0, 1000));
    assert_eq!(stream.position(), 1000);
    stream.write(&[0xab; 5]).await.unwrap();
    // Reading flushes the write first.
    let mut next = vec![0u8; 10];
    stream.read(&mut next).await.unwrap();
    check("after the write", &next, &pattern.bytes(1005, 10));
    let file = stream.close().await.unwrap();
    let mut expected = pattern.bytes(0, 5020).to_vec();
    expected[1000..1005].copy_from_slice(&[0xab; 5]);
    check("/mixed", &file.read_at(0, 6000).await.unwrap(), &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_sizes_beyond_the_limit_are_refused() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let file = client
        .create("/big-buffer", stripe(0, 1, -1))
        .await
        .unwrap();
    assert!(matches!(
        client.stream(file.clone(), STREAM_BUFFER_MAX_BYTES + 1),
        Err(ClientError::TooLarge { .. })
    ));
    let mut stream = client.stream(file, 16).unwrap();
    stream.write(b"kept").await.unwrap();
    assert!(matches!(
        stream.setvbuf(usize::MAX).await,
        Err(ClientError::TooLarge { .. })
    ));
    // Refused without losing what was buffered or changing the size.
    assert_eq!(stream.buffer_size_bytes(), 16);
    let file = stream.close().await.unwrap();
    assert_eq!(&file.read_at(0, 10).await.unwrap()[..], b"kept");
}
