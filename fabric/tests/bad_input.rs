//! Bad input: malformed frames, unknown regions, descriptors out of range or too long. Each
//! gets an error, nothing panics, nothing large is allocated, and the node keeps serving.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use common::{OP_COUNT, OP_PULL, PORTAL, TestService, Transport, encode_desc, nodes, pattern};
use iopath_fabric::frame::{HEADER_BYTES, Header, Kind};
use iopath_fabric::{BufferDescriptor, ChecksumKind, FabricError, Limits};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_close_the_connection_and_the_node_keeps_serving() {
    let all = nodes(Transport::Tcp, 2, Limits::default(), None).await;
    let server = &all[1];
    TestService::install(server);
    let addr = server.nid().socket_addr().unwrap();
    let me: iopath_fabric::Nid = "127.0.0.1:1@tcp0".parse().unwrap();

    let mut hello = Vec::new();
    Header::new(Kind::Hello, me, server.nid()).encode(&mut hello);
    let mut oversized = Vec::new();
    let mut header = Header::new(Kind::Put, me, server.nid());
    header.portal = PORTAL;
    header.length = u32::MAX;
    header.payload_len = u32::MAX;
    header.encode(&mut oversized);
    let mut wrong_target = Vec::new();
    Header::new(Kind::Hello, me, "127.0.0.1:9@tcp0".parse().unwrap()).encode(&mut wrong_target);

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", vec![0xAB; 4 * HEADER_BYTES]),
        ("no hello", oversized.clone()),
        ("hello for someone else", wrong_target),
        (
            "4 GiB payload after hello",
            [hello.clone(), oversized].concat(),
        ),
        (
            "truncated header after hello",
            [hello.clone(), vec![0x69, 0x50, 1]].concat(),
        ),
        (
            "garbage after hello",
            [hello, vec![0xFF; HEADER_BYTES]].concat(),
        ),
    ];
    for (what, bytes) in cases {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // The node may close the connection before all of it is written: that is a refusal too.
        let written = stream
            .write_all(&bytes)
            .and_then(|()| stream.shutdown(std::net::Shutdown::Write));
        if written.is_err() {
            continue;
        }
        // The node closes the connection: the read ends (EOF or reset) instead of timing out.
        let mut sink = Vec::new();
        let closed = match stream.read_to_end(&mut sink) {
            Ok(_) => true,
            Err(e) => {
                e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut
            }
        };
        assert!(closed, "{what}: connection left open");
    }
    // Still serving.
    let reply = all[0]
        .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap();
    assert_eq!(reply.len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_regions_and_out_of_range_descriptors_get_errors() {
    let all = nodes(Transport::Mem, 2, Limits::default(), None).await;
    let (client, server) = (&all[0], &all[1]);
    TestService::install(server);
    let region = client
        .regions()
        .register_source(Bytes::from(pattern(4096, 0)))
        .unwrap();
    let good = region.describe_all(ChecksumKind::Crc32);
    let cases = [
        (
            "unknown region",
            BufferDescriptor {
                region: 999_999,
                ..good
            },
            "no region",
        ),
        (
            "past the end",
            BufferDescriptor { offset: 1, ..good },
            "outside the region",
        ),
        (
            "longer than the region",
            BufferDescriptor {
                length: 4097,
                ..good
            },
            "outside the region",
        ),
        (
            "huge",
            BufferDescriptor {
                length: 1 << 40,
                ..good
            },
            "exceeds the maximum",
        ),
        (
            "wrong checksum",
            BufferDescriptor {
                checksum: good.checksum.map(|c| c ^ 1),
                ..good
            },
            "checksum mismatch",
        ),
        (
            "on another network",
            BufferDescriptor {
                owner: "1@mem7".parse().unwrap(),
                ..good
            },
            "no route",
        ),
    ];
    for (what, desc, expected) in cases {
        let err = client
            .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
            .await
            .unwrap_err();
        assert!(matches!(err, FabricError::Remote { .. }), "{what}: {err}");
        assert!(
            err.to_string().contains(expected),
            "{what}: {err:?} lacks {expected:?}"
        );
    }
    // A sink is not a source.
    let sink = client.regions().register_sink(4096).unwrap();
    let desc = sink.describe(0, 4096, ChecksumKind::Crc32).unwrap();
    let err = client
        .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("wrong direction"), "{err}");
    // Body that is not a descriptor at all.
    let err = client
        .call(
            server.nid(),
            PORTAL,
            OP_PULL,
            Bytes::from_static(&[0xFF; 7]),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, FabricError::Remote { code: 71, .. }), "{err}");
    // The good descriptor still works: nothing was harmed.
    client
        .call(server.nid(), PORTAL, OP_PULL, encode_desc(&good))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_is_bounded() {
    let limits = Limits {
        regions_max: 2,
        region_max_bytes: 1024,
        ..Limits::default()
    };
    let node = nodes(Transport::Mem, 1, limits, None).await.remove(0);
    assert!(matches!(
        node.regions().register_sink(1025),
        Err(FabricError::TooLarge { .. })
    ));
    let _a = node.regions().register_sink(10).unwrap();
    let _b = node
        .regions()
        .register_source(Bytes::from_static(b"x"))
        .unwrap();
    assert!(matches!(
        node.regions().register_sink(1),
        Err(FabricError::LimitReached { .. })
    ));
}
