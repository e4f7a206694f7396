//! What the fail points cost when nobody armed them: the disarmed check every site makes, and
//! an in-memory RPC round trip (which passes `client.send`) beside it for scale.
//!
//! ```sh
//! cargo run --release -p iopath-fabric --example fail_point_cost
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_fabric::fail::{FailPoints, Site};
use iopath_fabric::rpc::{Reply, Request, Service};
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};

/// Checks timed per measurement.
const CHECKS: u64 = 100_000_000;
/// Round trips timed per measurement.
const CALLS: u32 = 20_000;

struct Echo;

impl Service for Echo {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        Box::pin(async move { Ok(request.body) })
    }
}

/// Nanoseconds per check.
fn per_check(points: &FailPoints) -> f64 {
    let points = black_box(points);
    let started = Instant::now();
    let mut fired = 0u64;
    for _ in 0..CHECKS {
        fired += u64::from(points.check(Site::OssBeforeReply).is_some());
    }
    let elapsed = started.elapsed();
    black_box(fired);
    elapsed.as_secs_f64() * 1e9 / CHECKS as f64
}

async fn per_call(client: &Node, server: Nid) -> Duration {
    let started = Instant::now();
    for _ in 0..CALLS {
        client
            .call(server, 40, 1, Bytes::from_static(b"ping"))
            .await
            .expect("echo");
    }
    started.elapsed() / CALLS
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let disarmed = FailPoints::new();
    let other_armed = FailPoints::new();
    other_armed.set_fail_loc("mds.after_log:delay=1ms")?;
    let check_off = per_check(&disarmed);
    let check_other = per_check(&other_armed);

    let network = MemNetwork::new();
    let start = |n: u32| {
        Node::start(NodeConfig {
            interfaces: vec![Interface::Mem {
                nid: Nid::mem(n, 0),
                network: network.clone(),
            }],
            ..Default::default()
        })
    };
    let (client, server) = (start(1).await?, start(2).await?);
    server.register_service(40, Arc::new(Echo))?;
    per_call(&client, server.nid()).await; // warm up
    let call = per_call(&client, server.nid()).await;

    println!("disarmed check:                    {check_off:>8.2} ns");
    println!("check with another site armed:     {check_other:>8.2} ns");
    println!(
        "in-memory RPC round trip:          {:>8.2} us",
        call.as_secs_f64() * 1e6
    );
    // A routed 1 MiB write passes at most a dozen sites end to end.
    let share = 12.0 * check_off * 1e-9 / call.as_secs_f64();
    println!(
        "12 disarmed checks per round trip: {:>8.4} % of it",
        share * 100.0
    );
    Ok(())
}
