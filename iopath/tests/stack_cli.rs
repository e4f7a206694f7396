//! The stack commands as a user runs them: `iopath demo`, and `iopath up` (with and without
//! `--processes`) with `iopath lfs` and `iopath lctl` against the running stack.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

mod common;
use common::iopath;

#[test]
fn demo_runs_and_verifies() {
    let out = iopath().args(["demo", "--size", "8m"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("every byte read back matched what was written"),
        "{stdout}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("ERROR"),
        "a clean run logs no error"
    );
}

#[test]
fn demo_with_processes_shows_the_addresses_its_nodes_really_use() {
    let out = iopath()
        .args([
            "demo",
            "--preset",
            "spider-mini",
            "--processes",
            "--size",
            "8m",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let row = |name: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    for server in ["oss0", "oss1", "mds"] {
        let cols = row(server);
        assert!(
            cols[2].starts_with("127.0.0.1:") && cols[2].ends_with("@tcp0"),
            "{cols:?}"
        );
        assert!(
            cols[4].parse::<std::net::SocketAddr>().is_ok(),
            "{server} has an admin address: {cols:?}"
        );
    }
    assert!(!stdout.contains("@mem0"), "no in-memory NIDs: {stdout}");
}

#[test]
fn lfs_and_lctl_work_against_a_stack_of_processes() {
    let mut up = iopath()
        .args(["up", "--preset", "spider-mini", "--processes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let (mut mds, mut oss_admin, mut secret, mut stack_file) = (None, None, None, None);
    for line in lines.by_ref() {
        let line = line.unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        match cols.first() {
            Some(&"mds") if cols.len() > 4 => mds = Some(cols[2].to_owned()),
            Some(&"oss0") if cols.len() > 4 => oss_admin = Some(cols[4].to_owned()),
            _ => {}
        }
        secret = secret.or_else(|| common::secret_file_in(&line));
        stack_file = stack_file.or_else(|| {
            let rest = line.strip_prefix("stack file: ")?;
            Some(rest.split(" (").next()?.to_owned())
        });
        if line.starts_with("ready") {
            break;
        }
    }
    let (mds, oss_admin) = (
        mds.expect("up printed the mds"),
        oss_admin.expect("up printed oss0"),
    );
    let lfs = |args: &[&str]| {
        let out = iopath()
            .args(["lfs", "--mds", &mds])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lfs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("in");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7) as u8).collect();
    std::fs::File::create(&local)
        .unwrap()
        .write_all(&data)
        .unwrap();
    lfs(&["setstripe", "-c", "2", "-S", "64k", "/striped"]);
    lfs(&["put", local.to_str().unwrap(), "/striped"]);
    let stripe = lfs(&["getstripe", "/striped"]);
    assert!(
        stripe.contains("lmm_stripe_count:  2") || stripe.contains("lmm_stripe_count: 2"),
        "{stripe}"
    );
    assert!(
        stripe.contains("lmm_stripe_size:") && stripe.contains("65536"),
        "{stripe}"
    );
    let back = dir.path().join("out");
    lfs(&["get", "/striped", back.to_str().unwrap()]);
    assert!(
        std::fs::read(&back).unwrap() == data,
        "the file came back byte for byte"
    );
    // The storage servers' parameters through their admin services.
    let out = iopath()
        .args([
            "lctl",
            "--admin",
            &oss_admin,
            "get_param",
            "obdfilter.*.last_committed",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("obdfilter.iopath-OST"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    lctl_changes_need_the_stacks_secret(&oss_admin, &secret.expect("up printed its secret"));
    // The stack file `up` advertises for tools names each node's admin service.
    let stack_file = stack_file.expect("up printed its stack file");
    for tool in [&["lctl", "dl"][..], &["lnetctl", "net", "show"][..]] {
        let out = iopath()
            .args(&tool[..1])
            .args(["--stack", &stack_file, "--node", "oss0"])
            .args(&tool[1..])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool:?} --stack: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Bad input: a missing file is a clear error.
    let out = iopath()
        .args(["lfs", "--mds", &mds, "stat", "/nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .to_lowercase()
            .contains("no such"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(up.stdin.take());
    assert!(up.wait().unwrap().success());
}

/// Against storage server `admin` of a stack whose admin secret is in `secret`: `lctl
/// set_param` without the secret, with another stack's, or with a file others may read is
/// refused, saying why and what to pass, and changes nothing; with `--secret-file`, or the
/// file named in the environment, it sets.
fn lctl_changes_need_the_stacks_secret(admin: &str, secret: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}: mode {mode:o}", secret.display());
    let param = "obdfilter.iopath-OST0000.sync_journal";
    let lctl = |extra: &[&str], env: Option<&std::path::Path>| {
        let mut command = iopath();
        command
            .args(["lctl", "--admin", admin])
            .args(extra)
            .env_remove("IOPATH_ADMIN_SECRET_FILE");
        if let Some(file) = env {
            command.env("IOPATH_ADMIN_SECRET_FILE", file);
        }
        command.output().unwrap()
    };
    let get = || {
        let out = lctl(&["get_param", "-n", param], None);
        assert!(out.status.success(), "reads need no secret");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let before = get();
    let flipped = if before == "1" { "0" } else { "1" };
    let set = format!("{param}={flipped}");

    let refused = lctl(&["set_param", &set], None);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "set without the secret: {said}");
    assert!(
        said.contains(&format!("set_param {param}"))
            && said.contains("set_param refused: no admin secret was sent")
            && said.contains("--secret-file FILE"),
        "{said}"
    );

    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.secret");
    iopath_admin::Secret::create(&other).unwrap();
    let refused = lctl(
        &["--secret-file", other.to_str().unwrap(), "set_param", &set],
        None,
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success()
            && said.contains("set_param refused: the admin secret sent is not this node's"),
        "{said}"
    );

    let shared = dir.path().join("shared.secret");
    std::fs::copy(secret, &shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = lctl(
        &["--secret-file", shared.to_str().unwrap(), "set_param", &set],
        None,
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success()
            && said.contains(&format!("{} has mode 0644", shared.display()))
            && said.contains("chmod 600"),
        "{said}"
    );
    assert_eq!(get(), before, "no refused set changed the value");

    let out = lctl(
        &["--secret-file", secret.to_str().unwrap(), "set_param", &set],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{set}\n"));
    assert_eq!(get(), flipped);
    let out = lctl(&["set_param", &format!("{param}={before}")], Some(secret));
    assert!(
        out.status.success(),
        "the secret file named in the environment: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(get(), before);
}

#[test]
fn lctl_reads_and_clears_the_osc_files_of_an_up_stacks_client_node() {
    // Embedded, every node serves its admin service, client nodes included (with
    // --processes, client nodes run in the application and serve none).
    let mut up = iopath()
        .args(["up", "--preset", "spider-mini"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut c0_admin, mut secret) = (None, None);
    for line in BufReader::new(up.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first() == Some(&"c0") && cols.len() > 4 {
            c0_admin = Some(cols[4].to_owned());
        }
        secret = secret.or_else(|| common::secret_file_in(&line));
        if line.starts_with("ready") {
            break;
        }
    }
    let admin = c0_admin.expect("up printed c0 with its admin address");
    let lctl = |args: &[&str]| common::lctl(&admin, args);
    let rpc_stats = lctl(&["get_param", "osc.*.rpc_stats"]);
    for target in 0..4 {
        assert!(
            rpc_stats.contains(&format!(
                "osc.iopath-OST000{target}-osc-c0.rpc_stats=\nsnapshot_time:  "
            )),
            "{rpc_stats}"
        );
    }
    assert!(
        rpc_stats.contains("\npages per rpc         rpcs   % cum % |       rpcs   % cum %\n"),
        "{rpc_stats}"
    );
    assert!(lctl(&["get_param", "osc.iopath-OST0002-osc-c0.stats"]).contains("\nelapsed_time  "));
    assert!(
        lctl(&["dl"]).contains("  3 UP osc iopath-OST0003-osc-c0 iopath-OST0003-osc-c0_UUID\n")
    );
    let secret = secret.expect("up printed where the admin secret is");
    assert_eq!(
        common::lctl_with_secret(
            &admin,
            &secret,
            &["set_param", "osc.iopath-OST0001-osc-c0.stats=clear"]
        ),
        "osc.iopath-OST0001-osc-c0.stats=clear\n"
    );
    drop(up.stdin.take());
    assert!(up.wait().unwrap().success());
}

#[test]
fn a_dir_whose_parent_is_missing_is_refused_with_the_command_that_makes_it() {
    let scratch = tempfile::tempdir().unwrap();
    let chain = scratch.path().join("typo/run1");
    for args in [
        &["up", "--preset", "spider-mini"][..],
        &["demo", "--size", "8m"][..],
    ] {
        let out = iopath()
            .args(args)
            .arg("--dir")
            .arg(&chain)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("mkdir -p {}", chain.display())),
            "{args:?}: {err}"
        );
        assert!(!scratch.path().join("typo").exists(), "nothing was made");
    }
    // A missing last component inside an existing directory is made, as before.
    let fresh = scratch.path().join("run2");
    let out = iopath()
        .args(["up", "--preset", "spider-mini", "--dir"])
        .arg(&fresh)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fresh.is_dir());
}

#[test]
fn the_stack_file_reference_example_runs() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/stack-file.md"
    ))
    .unwrap();
    let start = page.find("```toml\n").unwrap() + "```toml\n".len();
    let example = &page[start..start + page[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("example.toml");
    std::fs::write(&file, example).unwrap();
    let out = iopath()
        .args(["up", "--stack"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for node in ["c0", "c7", "rtr1", "oss1", "mds"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{node} "))),
            "{node}: {stdout}"
        );
    }
}

/// `demo --crash` on the default preset, whose clients write through fyods: the account says
/// the fyod replayed the writes, not that the client replayed none.
#[test]
fn demo_crash_through_a_fyod_says_the_fyod_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let out = iopath()
        .args(["demo", "--crash", "oss0", "--size", "8m", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("replayed"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let replayed: u64 = line
        .split("replayed ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(line.contains("the fyod at "), "{line}");
    assert!(
        replayed > 0,
        "the fyod replayed what the crash lost: {line}"
    );
    assert!(stdout.contains("pinned for the fyod at "), "{stdout}");
}

#[test]
fn up_stops_cleanly_after_a_storage_server_was_killed_and_started_again_by_hand() {
    let stack = common::Stack::start(&common::crash_stack(common::JournalName::Async));
    stack.kill("oss0");
    let storage = stack.storage();
    // Started again as an operator would: `iopath node` on the stack's file, secret and
    // directory, running until told to stop. Another test's stack may hold the freed port
    // for a moment: then it is tried again, for a bounded time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (mut by_hand, log) = loop {
        let log = stack.dir.path().join("oss0-by-hand.log");
        let mut child = iopath()
            .args(["node", "--stack"])
            .arg(storage.join("stack.toml"))
            .arg("--secret-file")
            .arg(stack.secret_file())
            .args(["--name", "oss0", "--dir"])
            .arg(storage.join("oss0"))
            .env("IOPATH_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        if common::wait_ready(child.stdout.take().unwrap()).is_some() {
            break (child, log);
        }
        let _ = child.wait();
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            said.contains("Address already in use") && std::time::Instant::now() < deadline,
            "oss0 did not start again: {said}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let mut up = stack.up;
    // End of standard input: the stack stops.
    drop(up.stdin.take());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let status = loop {
        if let Some(status) = up.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "up did not stop");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let up_log = std::fs::read_to_string(stack.dir.path().join("up.log")).unwrap_or_default();
    // The oss0 started by hand is stopped with the stack, and up says nothing failed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let stopped = loop {
        if let Some(status) = by_hand.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = by_hand.kill();
            let _ = by_hand.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        stopped.is_some_and(|s| s.success()),
        "the oss0 started by hand was not stopped with the stack ({stopped:?}): {said}\nup: {up_log}"
    );
    assert!(status.success(), "up exited {status}: {up_log}");
}
