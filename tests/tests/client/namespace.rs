//! The namespace through the client: objects are created with the file and destroyed with it
//! (unlink, and a rename that replaces a file), layouts follow directory defaults, stat
//! glimpses the size.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use bytes::Bytes;
use common::{KIB, MIB, stack, stripe};
use iopath_client::{Layout, StripeInfo, StripeRequest};
use iopath_fabric::FabricError;
use iopath_ost_client::OstClient;
use iopath_stack::testing::TestStack;

/// Asks the servers directly whether each object of `layout` exists, by getattr; the test
/// stack deals targets to servers in turn (OST n is on server n % 2, under its index n).
async fn objects_exist(stack: &TestStack, layout: &Layout) -> Vec<bool> {
    let (node, id) = stack.client_node().await.unwrap();
    let servers = stack.oss_nids();
    let mut out = Vec::new();
    for object in layout.objects() {
        let server = servers[object.target as usize % servers.len()];
        let oss = OstClient::connect(node.clone(), server, id).await.unwrap();
        match oss.getattr(object.target, object.object_id).await {
            Ok(_) => out.push(true),
            Err(FabricError::Remote { code: 2, .. }) => out.push(false),
            Err(other) => panic!("getattr: {other}"),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_makes_the_objects_and_unlink_destroys_them() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let file = client.create("/f", stripe(MIB, -1, 2)).await.unwrap();
    let layout = file.layout().clone();
    assert_eq!(layout.stripe_count(), 4);
    assert_eq!(layout.stripe_offset(), 2);
    assert_eq!(objects_exist(&stack, &layout).await, vec![true; 4]);
    file.write_at(0, Bytes::from(vec![1u8; 3 * MIB as usize]))
        .await
        .unwrap();
    client.unlink("/f").await.unwrap();
    assert_eq!(objects_exist(&stack, &layout).await, vec![false; 4]);
    assert!(client.readdir("/").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_over_a_file_destroys_the_replaced_objects() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let a = client.create("/a", stripe(0, 2, -1)).await.unwrap();
    a.write_at(0, Bytes::from_static(b"from a")).await.unwrap();
    let b = client.create("/b", stripe(0, 1, -1)).await.unwrap();
    let b_layout = b.layout().clone();
    client.rename("/a", "/b").await.unwrap();
    assert_eq!(objects_exist(&stack, &b_layout).await, vec![false]);
    let moved = client.open("/b").await.unwrap();
    assert_eq!(moved.layout(), a.layout());
    assert_eq!(&moved.read_at(0, 100).await.unwrap()[..], b"from a");
    assert_eq!(client.readdir("/").await.unwrap(), vec!["b".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_defaults_are_inherited_and_reported() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    client.mkdir("/wide").await.unwrap();
    client
        .setstripe("/wide", stripe(256 * KIB, -1, -1))
        .await
        .unwrap();
    match client.stripe_info("/wide").await.unwrap() {
        StripeInfo::Directory {
            default_stripe,
            set_here,
        } => {
            assert!(set_here);
            assert_eq!(default_stripe, stripe(256 * KIB, -1, -1));
        }
        other => panic!("{other:?}"),
    }
    let file = client
        .create("/wide/f", StripeRequest::INHERIT)
        .await
        .unwrap();
    assert_eq!(
        (
            file.layout().stripe_size_bytes(),
            file.layout().stripe_count()
        ),
        (256 * KIB, 4)
    );
    // setstripe on a new path makes an empty file with that layout.
    client
        .setstripe("/wide/g", stripe(128 * KIB, 2, 1))
        .await
        .unwrap();
    let g = client.getstripe("/wide/g").await.unwrap();
    assert_eq!(
        (g.stripe_size_bytes(), g.stripe_count(), g.stripe_offset()),
        (128 * KIB, 2, 1)
    );
    assert_eq!(client.stat("/wide/g").await.unwrap().size_bytes, 0);
    // stat glimpses the size from the objects.
    file.write_at(5 * MIB, Bytes::from_static(b"xyz"))
        .await
        .unwrap();
    let stat = client.stat("/wide/f").await.unwrap();
    assert_eq!(stat.size_bytes, 5 * MIB + 3);
    assert!(!stat.is_dir);
    assert_eq!(stat.layout.as_ref(), Some(file.layout()));
    let dir = client.stat("/wide").await.unwrap();
    assert!(dir.is_dir && dir.layout.is_none());
    assert_eq!(dir.entries_count, 2);
    assert_eq!(
        client.readdir("/wide").await.unwrap(),
        vec!["f".to_string(), "g".to_string()]
    );
    client.unlink("/wide/f").await.unwrap();
    client.unlink("/wide/g").await.unwrap();
    client.rmdir("/wide").await.unwrap();
    assert!(client.readdir("/").await.unwrap().is_empty());
}
