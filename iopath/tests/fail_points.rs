//! Fail points on running stacks of processes, armed as an operator arms them
//! (`iopath lctl set_param fail_loc=SITE:ACTION[:WHEN]`, `iopath lctl net_drop_add`), with
//! `iopath lfs` as the workload: every site on the path and every action, and what each must
//! leave behind — an errno named in the error, a lost message or reply the resend recovers,
//! a corrupted chunk the checksum catches, a stall, a process that aborts and whose clients
//! replay once it is started again. Every file put is read back and compared.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

mod common;
use common::{
    FyodModeName, JournalName, NodeEntry, RoleName, Stack, StackFile, crash_stack, iopath,
    lctl_with_secret, node_pid,
};

/// Bytes of each file put: several stripes over every target, not a multiple of a stripe.
const FILE_BYTES: usize = 5_000_000;

/// File `seed`'s bytes: distinct per file and never zero, so a hole is never taken for data.
fn content(seed: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (seed + 1);
    (0..FILE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as u8) | 1
        })
        .collect()
}

/// What every command here is run through: `lfs` with the arguments that reach the stack
/// (`--mds NID`, `--stack FILE`, a fyod), and the stack's nodes by name.
struct Harness {
    stack: Stack,
    lfs_args: Vec<String>,
}

impl Harness {
    fn lfs(&self, args: &[&str]) -> Output {
        iopath()
            .arg("lfs")
            .args(&self.lfs_args)
            .args(args)
            .output()
            .unwrap()
    }

    /// `lctl set_param fail_loc=SPEC` on `node`, with the stack's secret.
    fn arm(&self, node: &str, spec: &str) {
        self.lctl(node, &["set_param", &format!("fail_loc={spec}")]);
    }

    fn lctl(&self, node: &str, args: &[&str]) -> String {
        lctl_with_secret(self.stack.admin(node), &self.stack.secret_file(), args)
    }

    /// Faults `node` injected so far, from `get_param fail_injected`.
    fn fired(&self, node: &str) -> u64 {
        let text = common::lctl(
            self.stack.admin(node),
            &["get_param", "-n", "fail_injected"],
        );
        text.trim().parse().unwrap()
    }

    /// Puts file `seed` as `name`; its output.
    fn put(&self, seed: u64, name: &str) -> Output {
        let local = self.local(seed);
        self.lfs(&["put", local.to_str().unwrap(), name])
    }

    /// Puts file `seed` as `name` and reads it back: both must succeed and the bytes match.
    fn round_trip(&self, seed: u64, name: &str, what: &str) {
        let put = self.put(seed, name);
        assert!(put.status.success(), "{what}: put: {}", stderr(&put));
        self.read_back(seed, name, what);
    }

    fn read_back(&self, seed: u64, name: &str, what: &str) {
        let back = self.stack.dir.path().join(format!("back{seed}"));
        let _ = std::fs::remove_file(&back);
        let get = self.lfs(&["get", name, back.to_str().unwrap()]);
        assert!(get.status.success(), "{what}: get: {}", stderr(&get));
        assert!(
            std::fs::read(&back).unwrap() == content(seed),
            "{what}: {name} read back other bytes than were put"
        );
    }

    fn local(&self, seed: u64) -> PathBuf {
        let local = self.stack.dir.path().join(format!("local{seed}"));
        if !local.exists() {
            std::fs::write(&local, content(seed)).unwrap();
        }
        local
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// crash-test's stack (two servers of two targets, async commits only when forced) with a
/// PFS fyod beside them.
fn stack_with_a_fyod() -> StackFile {
    crash_stack(JournalName::Async).node(
        NodeEntry::new("fyod", RoleName::Fyod)
            .nid("o2ib0", 20)
            .fyod_mode(FyodModeName::Pfs),
    )
}

#[test]
fn storage_server_and_metadata_sites_fail_stall_lose_replies_and_corrupt_as_armed() {
    let stack = Stack::start(&crash_stack(JournalName::Async));
    let path = Harness {
        lfs_args: vec!["--mds".into(), stack.mds.clone()],
        stack,
    };

    // errno: the put fails, saying which fail point and which errno.
    path.arm("oss0", "oss.after_write:errno=ENOSPC:once");
    path.arm("oss1", "oss.after_write:errno=ENOSPC:once");
    let put = path.put(1, "/enospc");
    assert!(!put.status.success(), "an armed errno fails the put");
    assert!(
        stderr(&put).contains("fail point oss.after_write returned errno 28"),
        "{}",
        stderr(&put)
    );
    assert!(path.fired("oss0") + path.fired("oss1") >= 1);
    path.arm("oss0", "off");
    path.arm("oss1", "off");

    // drop at a server's site: the reply is lost, the resend answered from the saved reply.
    path.arm("oss0", "oss.before_reply:drop:once");
    path.arm("oss1", "oss.before_reply:delay=200ms:every=2");
    path.round_trip(2, "/lost-reply", "oss.before_reply drop and delay");
    let oss0 = path.lctl("oss0", &["get_param", "-n", "fail_loc"]);
    assert_eq!(oss0.trim(), "off", "once fired and disarmed itself");
    let oss1 = path.lctl("oss1", &["get_param", "-n", "fail_loc"]);
    assert!(!oss1.contains("fired=0"), "{oss1}");

    // corrupt: the server's pushes of a read have a byte flipped; the client's check catches
    // every one and the chunk comes again.
    path.arm("oss0", "off");
    path.arm("oss1", "off");
    path.arm("oss0", "bulk.send:corrupt:every=3");
    path.read_back(2, "/lost-reply", "bulk.send corrupt");
    assert!(path.fired("oss0") >= 2);
    path.arm("oss0", "off");

    // The commit's sites stall it; `oss.after_write` stalls the write itself.
    path.arm("oss0", "oss.before_commit:delay=300ms");
    path.arm("oss1", "oss.after_commit:delay=300ms:every=2");
    path.round_trip(3, "/slow-commit", "commit delays");
    path.arm("oss0", "oss.after_write:delay=50ms:every=4");
    path.round_trip(4, "/slow-write", "oss.after_write delay");
    path.arm("oss0", "off");
    path.arm("oss1", "off");

    // The metadata service: an errno after the log (the change is durable: the name exists),
    // and a lost reply the resend finds saved.
    path.arm("mds", "mds.after_log:errno=EIO:once");
    let mkdir = path.lfs(&["mkdir", "/d"]);
    assert!(!mkdir.status.success());
    assert!(
        stderr(&mkdir).contains("fail point mds.after_log returned errno 5"),
        "{}",
        stderr(&mkdir)
    );
    let again = path.lfs(&["mkdir", "/d"]);
    assert!(
        stderr(&again).contains("exists"),
        "the change itself was made: {}",
        stderr(&again)
    );
    path.arm("mds", "mds.after_log:drop:once");
    let mkdir = path.lfs(&["mkdir", "/e"]);
    assert!(mkdir.status.success(), "{}", stderr(&mkdir));
    assert_eq!(path.fired("mds"), 2);
    path.stack.stop();
}

#[test]
fn a_server_that_aborts_around_a_commit_is_started_again_and_every_put_reads_back() {
    let mut stack = Stack::start(&crash_stack(JournalName::Async));
    let lfs_args = vec!["--mds".to_owned(), stack.mds.clone()];
    let secret = stack.secret_file();
    let mut admin = stack.admin("oss1").to_owned();
    // oss1's targets each commit the put's create (commits before its reply), then its
    // writes when the put's close forces them.
    //  - After the first create's commit: the create is durable, its reply never leaves;
    //    sent again to the restarted server, it must find its own object, not EEXIST.
    //  - Before the third commit (the writes'): nothing of it is written; the writes were
    //    acknowledged, so the client must replay them into the restarted server.
    for (seed, spec) in [
        (5, "oss.after_commit:abort:once"),
        (12, "oss.before_commit:abort:every=3"),
    ] {
        lctl_with_secret(&admin, &secret, &["set_param", &format!("fail_loc={spec}")]);
        let local = stack.dir.path().join(format!("local{seed}"));
        std::fs::write(&local, content(seed)).unwrap();
        let name = format!("/aborted{seed}");
        let put = iopath()
            .arg("lfs")
            .args(&lfs_args)
            .args(["put", local.to_str().unwrap(), &name])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_death(&stack.storage(), "oss1");
        admin = stack.restart("oss1");
        let put = put.wait_with_output().unwrap();
        assert!(
            put.status.success(),
            "{spec}: the put rode through the abort and the restart: {}",
            stderr(&put)
        );
        let check = Harness {
            stack,
            lfs_args: lfs_args.clone(),
        };
        check.read_back(seed, &name, spec);
        stack = check.stack;
    }
    // The first oss1 logged into up's log; the one started again, to the test.
    let first = std::fs::read_to_string(stack.dir.path().join("up.log")).unwrap();
    let logs = stack.stop();
    let said = format!("{first}{logs}");
    for site in ["oss.after_commit", "oss.before_commit"] {
        assert!(
            said.contains(&format!("fail point {site} aborts the process")),
            "{said}"
        );
    }
    let replayed = logs
        .lines()
        .filter(|l| l.contains("recovery over"))
        .any(|l| !l.contains("replayed=0"));
    assert!(
        replayed,
        "the second restart replayed the put's writes: {logs}"
    );
}

/// Waits, bounded, until node `name`'s process is gone.
fn wait_for_death(storage: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while node_pid(storage, name).is_some() {
        assert!(Instant::now() < deadline, "{name} did not abort");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn fyod_sites_and_its_client_sends_fail_and_lose_as_armed() {
    let stack = Stack::start(&stack_with_a_fyod());
    let fyod = stack.nid("fyod").to_owned();
    let path = Harness {
        lfs_args: vec!["--mds".into(), stack.mds.clone(), "--fyod".into(), fyod],
        stack,
    };

    // The fyod's own calls to the servers: one request lost on the way out, sent again.
    path.arm("fyod", "client.send:drop:once");
    path.round_trip(6, "/via-fyod", "fyod client.send drop");
    assert_eq!(path.fired("fyod"), 1);

    // A lost fyod reply is answered again from the saved one; forwards stall.
    path.arm("fyod", "fyod.reply:drop:once");
    path.round_trip(7, "/lost-fyod-reply", "fyod.reply drop");
    path.arm("fyod", "fyod.forward:delay=100ms:every=2");
    path.round_trip(8, "/slow-fyod", "fyod.forward delay");
    path.arm("fyod", "off");

    // An errno at either site fails the call with it; so does one on the fyod's own sends
    // (on every one: the fyod's pinger sends too, every second, and could take a `once`).
    for (spec, says) in [
        (
            "client.send:errno=EIO",
            "fail point client.send returned errno 5",
        ),
        (
            "fyod.forward:errno=EIO:once",
            "fail point fyod.forward returned errno 5",
        ),
        (
            "fyod.reply:errno=ENOSPC:once",
            "fail point fyod.reply returned errno 28",
        ),
    ] {
        path.arm("fyod", spec);
        let put = path.put(9, "/refused");
        assert!(!put.status.success(), "{spec}");
        assert!(stderr(&put).contains(says), "{spec}: {}", stderr(&put));
        path.arm("fyod", "off");
        let _ = path.lfs(&["rm", "/refused"]);
    }
    path.stack.stop();
}

#[test]
fn router_sites_and_network_rules_lose_corrupt_and_stall_forwarded_messages() {
    let stack = Stack::start(
        &StackFile::parse(
            include_str!("../../stack/presets/spider-mini-routed.toml"),
            "spider-mini-routed",
        )
        .unwrap(),
    );
    let stack_file = stack.storage().join("stack.toml");
    let path = Harness {
        lfs_args: vec!["--stack".into(), stack_file.to_str().unwrap().into()],
        stack,
    };
    path.arm("rtr0", "router.forward:corrupt:every=3");
    path.arm("rtr1", "router.forward:drop:once");
    path.arm("rtr2", "router.forward:delay=20ms:every=2");
    // LNet's rules, as lctl writes them: one in 5 messages rtr3 forwards is held 10 ms.
    path.lctl(
        "rtr3",
        &[
            "net_delay_add",
            "-s",
            "*",
            "-d",
            "*",
            "-r",
            "5",
            "-l",
            "10ms",
        ],
    );
    path.round_trip(10, "/routed", "router fail points");
    let fired: u64 = ["rtr0", "rtr1", "rtr2"].iter().map(|r| path.fired(r)).sum();
    assert!(fired >= 2, "the routers' rules fired {fired} times");
    let delays = path.lctl("rtr3", &["net_delay_list"]);
    assert!(delays.contains("rate=5 latency=10ms"), "{delays}");

    // A router that aborts: its process is gone and the routes through the others carry on.
    path.arm("rtr0", "router.forward:abort:once");
    path.round_trip(11, "/after-abort", "a router aborted");
    wait_for_death(&path.stack.storage(), "rtr0");
    path.lctl("rtr3", &["net_delay_del", "-a"]);
    assert_eq!(path.lctl("rtr3", &["net_delay_list"]).trim(), "");
    path.stack.stop();
}
