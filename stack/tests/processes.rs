//! The stack as a process per server node on loopback TCP: spider-mini starts (each node a
//! child process that says READY), a client in this process writes and reads back through
//! the client library, the demo runs through fyod processes, and everything stops cleanly.
//! (IOR over node processes is tested beside IOR, in `bench/tests/processes.rs`.)
//!
//! `suite` runs the whole path's suite over such stacks.
//!
//! The node processes are this test program itself: run as `processes node --stack FILE
//! --name NODE --dir DIR`, it is `iopath node` (the same library function). So this file has
//! a harness of its own (libtest-mimic, which nextest understands).

use std::process::ExitCode;

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::StackFile;
use iopath_stack::schema::file::{NetworkEntry, NodeEntry, RoleName};
use iopath_stack::testing::processes::{self, launcher};
use iopath_stack::up::NodeProcessConfig;
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "processes/suite.rs"]
mod suite;

fn main() -> ExitCode {
    if let Some(code) = processes::run_node_if_asked() {
        return code;
    }
    let trials = vec![
        Trial::test("spider_mini_on_loopback_tcp_serves_and_stops", || {
            block_on(spider_mini_on_loopback_tcp_serves_and_stops())
        }),
        Trial::test("the_demo_runs_through_fyod_processes", || {
            block_on(the_demo_runs_through_fyod_processes())
        }),
        Trial::test("a_node_refuses_in_memory_addresses", || {
            block_on(a_node_refuses_in_memory_addresses())
        }),
        Trial::test(
            "a_torus_crossed_hop_by_hop_is_modeled_once_for_every_node_process",
            || block_on(a_torus_crossed_hop_by_hop_is_modeled_once_for_every_node_process()),
        ),
        Trial::test("suite::round_trips", || block_on(suite::round_trips())),
        Trial::test("suite::sixty_four_nodes_through_four_fyods", || {
            block_on(suite::sixty_four_nodes_through_four_fyods())
        }),
        Trial::test("suite::a_storage_server_killed_mid_run", || {
            block_on(suite::a_storage_server_killed_mid_run())
        }),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

fn block_on(test: impl Future<Output = Result<(), String>>) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(e.to_string()))?;
    runtime.block_on(test).map_err(Failed::from)
}

macro_rules! check {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

async fn spider_mini_on_loopback_tcp_serves_and_stops() -> Result<(), String> {
    let stack = iopath_stack::preset("spider-mini")
        .map_err(|e| e.to_string())?
        .stack()
        .map_err(|e| e.to_string())?;
    let storage = StorageDir::temporary("test-processes", None).map_err(|e| e.to_string())?;
    let root = storage.path().to_path_buf();
    let running = RunningStack::start(stack, Mode::Processes, storage, Some(&launcher()?))
        .await
        .map_err(|e| e.to_string())?;
    let RunningStack::Processes { servers, clients } = &running else {
        return Err("not a process stack".into());
    };
    // Two storage servers and the metadata service, each a process that said READY.
    check!(
        servers.children().len() == 3,
        "children: {:?}",
        servers.children()
    );
    check!(servers.stack().is_tcp(), "the resolved stack is all TCP");
    check!(
        servers.stack_file().exists(),
        "the resolved stack file is written"
    );
    check!(clients.len() == 8, "8 client nodes in this process");
    for child in servers.children() {
        let admin = iopath_admin::Client::connect(child.admin)
            .await
            .map_err(|e| e.to_string())?;
        let nis = admin.get_param("nis").await.map_err(|e| e.to_string())?;
        check!(
            !nis.is_empty(),
            "{} answers on its admin service",
            child.name
        );
        // Changes need the stack's secret, which each node process was given by its file.
        if child.name.starts_with("oss") {
            let refused = admin
                .set_param("obdfilter.*.sync_journal", "1")
                .await
                .err()
                .ok_or(format!("{} set a parameter without the secret", child.name))?
                .to_string();
            check!(
                refused.contains("set_param refused: no admin secret was sent"),
                "{refused}"
            );
            admin
                .with_secret(servers.admin_secret().clone())
                .set_param("obdfilter.*.sync_journal", "1")
                .await
                .map_err(|e| format!("{}: {e}", child.name))?;
        }
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(servers.admin_secret_file())
            .map_err(|e| e.to_string())?
            .permissions(),
    );
    check!(mode & 0o777 == 0o600, "the secret file's mode: {mode:o}");
    let client = running
        .connect(&clients[0])
        .await
        .map_err(|e| e.to_string())?;
    client.mkdir("/t").await.map_err(|e| e.to_string())?;
    let file = client
        .create("/t/f", StripeRequest::INHERIT)
        .await
        .map_err(|e| e.to_string())?;
    let data: Bytes = (0..(5 << 20) + 3)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    file.write_at(0, data.clone())
        .await
        .map_err(|e| e.to_string())?;
    file.fsync().await.map_err(|e| e.to_string())?;
    // Another client node reads it back over TCP.
    let other = running
        .connect(&clients[5])
        .await
        .map_err(|e| e.to_string())?;
    let back = other
        .open("/t/f")
        .await
        .map_err(|e| e.to_string())?
        .read_at(0, data.len() as u64)
        .await
        .map_err(|e| e.to_string())?;
    check!(
        back == data,
        "the data read back over TCP is the data written"
    );
    let journals = iopath_stack::journal::targets(&running)
        .await
        .map_err(|e| e.to_string())?;
    check!(journals.len() == 4, "four targets: {journals:?}");
    check!(
        journals.iter().any(|j| j.last_committed > 0),
        "fsync committed: {journals:?}"
    );
    file.close().await.map_err(|e| e.to_string())?;
    running.stop().await.map_err(|e| e.to_string())?;
    check!(!root.exists(), "the temporary storage is removed");
    Ok(())
}

async fn the_demo_runs_through_fyod_processes() -> Result<(), String> {
    // asci-red-mini with every server a process: fyods, storage servers, the MDS. The demo
    // starts node processes from this program (`Launcher::this_program`).
    let args = iopath_stack::demo::DemoConfig {
        size: 2 << 20,
        processes: true,
        ..iopath_stack::demo::DemoConfig::default()
    };
    let mut out = Vec::new();
    let report = iopath_stack::demo::run(&args, &mut out)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    check!(report.stack == "asci-red-mini", "{text}");
    check!(report.verified_bytes == 4 << 20, "{text}");
    check!(
        report.journals.len() == 4,
        "journals over the admin services: {text}"
    );
    check!(text.contains("mode: processes"), "{text}");
    Ok(())
}

async fn a_node_refuses_in_memory_addresses() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("stack.toml");
    std::fs::write(
        &file,
        iopath_stack::preset("spider-mini")
            .map_err(|e| e.to_string())?
            .text,
    )
    .map_err(|e| e.to_string())?;
    let args = NodeProcessConfig {
        stack: file,
        name: "oss0".into(),
        dir: dir.path().join("oss0"),
        admin: "127.0.0.1:0"
            .parse()
            .map_err(|e: std::net::AddrParseError| e.to_string())?,
        metrics: None,
        secret_file: None,
        watch_stdin: true,
        torus_switches: Vec::new(),
    };
    let error = iopath_stack::up::run_node(&args)
        .await
        .err()
        .ok_or("accepted")?
        .to_string();
    check!(error.contains("host:port"), "{error}");
    Ok(())
}

/// A line of five torus routers: the MDS at x=3, a client at x=0, the OSS at x=2, links of
/// 640 MB/s at time scale 8 (80 MB/s here).
fn line() -> StackFile {
    StackFile::named("line")
        .time_scale(8)
        .network(
            NetworkEntry::named("torus0")
                .torus([5, 1, 1])
                .bandwidth(640 << 20)
                .latency_us(1)
                .hop_by_hop(),
        )
        .node(
            NodeEntry::new("mds", RoleName::Mds)
                .nid("torus0", 1)
                .torus([3, 0, 0]),
        )
        .node(
            NodeEntry::new("c", RoleName::Client)
                .nid("torus0", 100)
                .torus([0, 0, 0]),
        )
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .nid("torus0", 10)
                .torus([2, 0, 0]),
        )
}

/// The OSS and the MDS are processes of their own, the client is here, and the torus is
/// modeled here once: what the OSS process sends (a read's bytes, X- from 2 to 0) crosses
/// the same modeled links as what the client sends (a write's, X+ from 0 to 2), at the
/// model's pace.
async fn a_torus_crossed_hop_by_hop_is_modeled_once_for_every_node_process() -> Result<(), String> {
    let running = processes::start(&line(), "line").await?;
    let RunningStack::Processes { servers, clients } = &running else {
        return Err("not a process stack".into());
    };
    check!(
        servers.children().len() == 2,
        "the MDS and the OSS run as processes"
    );
    let client = running
        .connect(&clients[0])
        .await
        .map_err(|e| e.to_string())?;
    let file = client
        .create("/f", StripeRequest::INHERIT)
        .await
        .map_err(|e| e.to_string())?;
    let bytes = 8u64 << 20;
    let data = Bytes::from(vec![3u8; bytes as usize]);
    file.write_at(0, data.clone())
        .await
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let read = file.read_at(0, bytes).await.map_err(|e| e.to_string())?;
    let took = started.elapsed().as_secs_f64();
    check!(read == data, "read back what was written");
    // The read's bytes left the OSS process through the switch, paced by the model: at
    // least their time on a link of 80 MB/s here.
    let wire = bytes as f64 / (640e6 / 8.0);
    let paced = took >= 0.95 * wire;
    check!(
        paced,
        "{bytes} bytes read through the modeled torus in {took:.3} s; its links alone take {wire:.3} s"
    );
    file.close().await.map_err(|e| e.to_string())?;
    client.close().await.map_err(|e| e.to_string())?;
    let loads = running
        .torus(0)
        .ok_or("the launcher runs the torus's model")?
        .link_loads();
    let carried = |plus: bool, x: u32| {
        loads
            .iter()
            .find(|l| {
                l.link.direction.axis() == iopath_topology::Axis::X
                    && l.link.direction.is_plus() == plus
                    && l.link.from.x == x
            })
            .map_or(0, |l| l.bytes)
    };
    for x in [0, 1] {
        check!(carried(true, x) >= bytes, "the write crossed X+ from {x}");
    }
    for x in [2, 1] {
        check!(
            carried(false, x) >= bytes,
            "the read crossed X- from {x} (sent by the OSS process, modeled here)"
        );
    }
    check!(
        carried(true, 2) < bytes,
        "nothing written went past the OSS"
    );
    running.stop().await.map_err(|e| e.to_string())
}
