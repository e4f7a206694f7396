//! MUNIX makes each write to a shared file atomic across fyods; MASYNC does not.
//!
//! The tear is built, not waited for: fyod 0's first storage write to OSS 1 is held back in
//! flight (a fault hook), so writer A's write lands on OSS 0 at once and on OSS 1 late. Writer
//! B, on fyod 1, overwrites the same region meanwhile. Under MASYNC, B's bytes land between
//! A's two halves and the region ends half A, half B — torn. Under MUNIX, B waits for the
//! file's token until A's write is whole, and the region ends all B.
//!
//! A second test runs many writers on four fyods over one region, with readers checking
//! that under MUNIX every read and the final contents hold exactly one write's bytes.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{KIB, MIB, Options, Stack, stamped, writers_of};
use iopath_fabric::Nid;
use iopath_fabric::fault::{Fault, FaultHook};
use iopath_fabric::frame::{Header, Kind};
use iopath_forwarder::{CallKind, FileSystem, IoMode, OpenOptions};
use iopath_mds::StripeRequest;
use iopath_storage_server::service::{OST_PORTAL, opcode};

/// Holds back the first OST WRITE request sent to `server`.
#[derive(Debug)]
struct HoldFirstWrite {
    server: Nid,
    delay: Duration,
    fired: AtomicBool,
}

impl FaultHook for HoldFirstWrite {
    fn on_send(&self, header: &Header, _payload_len: usize) -> Fault {
        let write = header.kind == Kind::Put
            && header.portal == OST_PORTAL
            && header.hdr_data == u64::from(opcode::WRITE)
            && header.target == self.server;
        if write && !self.fired.swap(true, Ordering::AcqRel) {
            Fault::Delay(self.delay)
        } else {
            Fault::None
        }
    }
}

const STRIPE: u64 = 64 * KIB;
const REGION: u64 = 2 * STRIPE;

fn shared(io_mode: IoMode, create: bool) -> OpenOptions {
    OpenOptions {
        create,
        stripe: Some(StripeRequest {
            stripe_size_bytes: STRIPE,
            stripe_count: 2,
            stripe_offset: 0,
        }),
        io_mode,
        call: CallKind::Sync,
        ..OpenOptions::default()
    }
}

/// Runs the constructed race in `io_mode`; returns who holds each stripe of the region at
/// the end, and how many token waits the token home counted.
async fn race(io_mode: IoMode) -> (Vec<(u16, u16)>, u64) {
    let hold = Arc::new(HoldFirstWrite {
        server: Nid::mem(11, 0),
        delay: Duration::from_secs(2),
        fired: AtomicBool::new(false),
    });
    let stack = Stack::start(Options {
        fyods: 2,
        fyod_faults: vec![Some(hold as Arc<dyn FaultHook>)],
        ..Options::default()
    })
    .await;
    let a = stack.client(0, 1).await;
    let b = stack.client(1, 2).await;
    let watcher = stack.client(1, 3).await;
    let file_a = a.open("/shared", shared(io_mode, true)).await.unwrap();
    let file_b = b.open("/shared", shared(io_mode, false)).await.unwrap();
    // The watcher reads without the token, so it can see a write half done.
    let watch = watcher
        .open("/shared", shared(IoMode::Masync, false))
        .await
        .unwrap();
    assert_eq!(
        file_a.layout().objects()[1].target,
        1,
        "stripe 1 lives on OSS 1"
    );

    let writer_a = tokio::spawn(async move { file_a.write_at(0, stamped(1, 0, REGION)).await });
    // Wait (bounded) until A's first half is on OSS 0; its second half is held in flight.
    let mut landed = false;
    for _ in 0..500 {
        let now = watch.read_at(0, STRIPE).await.unwrap();
        if !now.is_empty() && writers_of(&now)[0] == (1, 0) {
            landed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(landed, "A's first stripe reached OSS 0");
    assert!(
        !writer_a.is_finished(),
        "A's second stripe is still held back"
    );
    file_b.write_at(0, stamped(2, 0, REGION)).await.unwrap();
    if io_mode == IoMode::Masync {
        // B is done while A is still half written. (Under MUNIX B could only start once A's
        // write was whole: the token home counts the wait.)
        assert!(!writer_a.is_finished(), "B finished inside A's write");
    }
    writer_a.await.unwrap().unwrap();
    let region = watch.read_at(0, REGION).await.unwrap();
    let words = writers_of(&region);
    let per_stripe = (STRIPE / 8) as usize;
    let stripes = vec![words[0], words[per_stripe]];
    for (i, stripe) in words.chunks(per_stripe).enumerate() {
        assert!(
            stripe.iter().all(|w| *w == stripes[i]),
            "each stripe is one storage write"
        );
    }
    (stripes, stack.fyods[0].stats().token_waits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masync_writes_to_a_shared_file_can_be_torn() {
    let (stripes, _) = race(IoMode::Masync).await;
    assert_eq!(
        stripes,
        [(2, 0), (1, 0)],
        "stripe 0 from B, stripe 1 from A: the region is torn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn munix_writes_to_a_shared_file_are_never_torn() {
    let (stripes, token_waits) = race(IoMode::Munix).await;
    assert_eq!(stripes, [(2, 0), (2, 0)], "B's write, whole, after A's");
    assert!(token_waits >= 1, "B waited for the token");
}

/// Many writers on four fyods overwrite one region (four stripes, over both OSSs), while
/// readers check it: under MUNIX every read and the end state hold exactly one write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn munix_holds_under_many_writers_and_readers_on_four_fyods() {
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        let stack = Stack::start(Options {
            fyods: 4,
            mode,
            ..Options::default()
        })
        .await;
        let region = if mode == FileSystem::Pfs {
            4 * STRIPE
        } else {
            300 * KIB
        };
        let stripe = (mode == FileSystem::Pfs).then_some(StripeRequest {
            stripe_size_bytes: STRIPE,
            stripe_count: -1,
            stripe_offset: -1,
        });
        let options = move |create| OpenOptions {
            create,
            stripe,
            io_mode: IoMode::Munix,
            call: CallKind::Async,
            ..OpenOptions::default()
        };
        let creator = stack.client(0, 99).await;
        creator
            .open("/hot", options(true))
            .await
            .unwrap()
            .close()
            .await
            .unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for w in 0..8u16 {
            let client = stack.client(usize::from(w % 4), u32::from(w) + 1).await;
            tasks.spawn(async move {
                let file = client.open("/hot", options(false)).await.unwrap();
                for round in 0..4u16 {
                    file.write_at(0, stamped(w + 1, round, region))
                        .await
                        .unwrap();
                    let seen = file.read_at(0, region).await.unwrap();
                    let writers = writers_of(&seen);
                    assert!(
                        writers.iter().all(|x| *x == writers[0]),
                        "a MUNIX read sees one whole write, not a mix: {:?}",
                        writers.iter().collect::<std::collections::BTreeSet<_>>()
                    );
                }
                file.close().await.unwrap();
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        let file = creator.open("/hot", options(false)).await.unwrap();
        let end = writers_of(&file.read_at(0, region).await.unwrap());
        assert!(
            end.iter().all(|x| *x == end[0]) && end[0].0 != 0,
            "{mode}: one write's bytes"
        );
        let waits: u64 = stack.fyods[0].stats().token_waits;
        println!("{mode}: token waits at the token home {waits}");
    }
}

/// MUNIX tokens come from one fyod: a fyod whose token home is gone cannot write MUNIX, but
/// MASYNC needs no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masync_needs_no_token_home() {
    let stack = Stack::start(Options {
        fyods: 2,
        ..Options::default()
    })
    .await;
    let client = stack.client(1, 1).await;
    let file = client
        .open("/free", shared(IoMode::Masync, true))
        .await
        .unwrap();
    stack.fyod_nodes[0].shutdown(); // the token home
    file.write_at(0, stamped(1, 0, MIB)).await.unwrap();
    assert_eq!(writers_of(&file.read_at(0, MIB).await.unwrap())[0], (1, 0));
}

/// Drops the first MUNIX token acquire sent to `home`: as if it was on its way when the home
/// died.
#[derive(Debug)]
struct LoseFirstAcquire {
    home: Nid,
    fired: AtomicBool,
}

impl FaultHook for LoseFirstAcquire {
    fn on_send(&self, header: &Header, _payload_len: usize) -> Fault {
        let acquire = header.kind == Kind::Put
            && header.portal == iopath_forwarder::service::FYOD_PORTAL
            && header.hdr_data == u64::from(iopath_forwarder::service::opcode::TOKEN_ACQUIRE)
            && header.target == self.home;
        if acquire && !self.fired.swap(true, Ordering::AcqRel) {
            Fault::Drop
        } else {
            Fault::None
        }
    }
}

/// Found in a soak through fyods: a fyod killed and started again at once, and the path it
/// was on served again 60.5 s later. The killed fyod was the token home; another fyod's MUNIX
/// token acquire was on its way to it, and an acquire waits a whole lease (60 s) for its
/// answer before it is sent again. The other fyods now watch the home for restarts, and send
/// what waits on it again as soon as its new start answers a ping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_lost_to_a_token_home_that_restarts_is_sent_to_its_next_start_at_once() {
    let home = Nid::mem(20, 0);
    let lose: Arc<dyn FaultHook> = Arc::new(LoseFirstAcquire {
        home,
        fired: AtomicBool::new(false),
    });
    let s = Stack::start(Options {
        fyods: 2,
        fyod_faults: vec![None, Some(lose)],
        ..Options::default()
    })
    .await;
    let client = s.client(1, 1).await;
    let file = client
        .open("/shared", shared(IoMode::Munix, true))
        .await
        .unwrap();
    // The fyods have run a while: fyod 1 knows the home's start.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let write = tokio::spawn(async move { file.write_at(0, stamped(1, 1, STRIPE)).await });
    // The acquire is lost on its way; the home dies and comes back.
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.stack.restart_fyod(0).await.unwrap();
    // A lease is 60 s: well before it, the acquire has reached the home's new start.
    let written = tokio::time::timeout(Duration::from_secs(30), write)
        .await
        .expect("the write waited out the token lease: the acquire was not sent again")
        .unwrap()
        .unwrap();
    assert_eq!(written, STRIPE);
}

/// The same soak's other tail: a path through fyods served again 53 s after a kill. A fail
/// point on the token home had dropped its answer to another fyod's acquire, and the acquire
/// waited a whole lease (60 s) before it asked again. It asks again every second now, and the
/// home answers a copy of an acquire it has served from its saved reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_grant_was_lost_asks_again_within_seconds() {
    let s = Stack::start(Options {
        fyods: 2,
        ..Options::default()
    })
    .await;
    // The home's first reply — the grant of fyod 1's acquire — is lost.
    s.fyod_nodes[0]
        .fail_points()
        .arm(&"fyod.reply:drop:once".parse().unwrap());
    let client = s.client(1, 1).await;
    let file = client
        .open("/shared", shared(IoMode::Munix, true))
        .await
        .unwrap();
    let write = file.write_at(0, stamped(1, 1, STRIPE));
    let written = tokio::time::timeout(Duration::from_secs(30), write)
        .await
        .expect("the write waited out the token lease: the acquire was not asked again")
        .unwrap();
    assert_eq!(written, STRIPE);
    assert_eq!(
        s.fyod_nodes[0].fail_points().injected(),
        1,
        "the grant was dropped"
    );
}
