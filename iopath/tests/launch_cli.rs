//! `iopath launch` as a user first meets it: `--print` shows each node's command on its host
//! and writes the placed stack file; what is missing or wrong is said, naming what to give.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::process::{Child, Command, Output};

fn iopath(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iopath"))
        .args(args)
        .current_dir(dir)
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap()
}

const HOSTS: &str = "\
# the spider-cluster preset's five hosts
login 10.1.1.2
rtr-a 10.1.1.3 10.1.2.3
rtr-b 10.1.1.4 10.1.2.4
oss-a 10.1.2.5
oss-b 10.1.2.6
";

#[test]
fn print_shows_every_server_node_started_on_its_host_and_writes_the_placed_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hosts"), HOSTS).unwrap();
    let out = iopath(
        &[
            "launch",
            "--preset",
            "spider-cluster",
            "--hostfile",
            "hosts",
            "--exec",
            "ssh -o BatchMode=yes {host}",
            "--subnet",
            "compute=10.1.1.0/24",
            "--subnet",
            "storage=10.1.2.0/24",
            "--print",
            "--out",
            "placed.toml",
        ],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Routers first, each through ssh on its host, reading the admin secret and the placed
    // file on its input: the secret is never on a command line.
    let commands: Vec<&str> = text.lines().filter(|l| l.starts_with("cat ")).collect();
    assert_eq!(commands.len(), 5, "two routers, two OSSes, the MDS: {text}");
    assert!(
        commands[0].starts_with("cat placed.toml.secret placed.toml | sh -c ")
            && commands[0].contains("ssh -o BatchMode=yes rtr-a")
            && commands[0].contains("node --secret-file - --stack - --name rtr0")
            && commands[0].contains("--admin 10.1.1.3:0"),
        "{}",
        commands[0]
    );
    let secret = dir.path().join("placed.toml.secret");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&secret).unwrap().permissions());
    assert_eq!(
        mode & 0o777,
        0o600,
        "the secret beside the placed file: {mode:o}"
    );
    let hex = std::fs::read_to_string(&secret).unwrap();
    assert!(!text.contains(hex.trim()), "the secret is not printed");
    assert!(
        commands
            .iter()
            .any(|c| c.contains("oss-b") && c.contains("--name oss1"))
    );
    assert!(
        text.contains("clients c0 c1 c2 c3 run where the application runs, on login"),
        "{text}"
    );
    // The placed file: every address a socket on its host's subnet.
    let placed = std::fs::read_to_string(dir.path().join("placed.toml")).unwrap();
    assert!(
        placed.contains("\"10.1.2.4:22051\""),
        "rtr1 on storage: {placed}"
    );
    assert!(
        placed.contains("\"10.1.1.2:21103\""),
        "c3 on compute: {placed}"
    );
}

#[test]
fn what_is_missing_is_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hosts"), HOSTS).unwrap();
    let said = |args: &[&str]| {
        let out = iopath(args, dir.path());
        assert!(!out.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let launch =
        |extra: &[&str]| said(&[&["launch", "--preset", "spider-cluster"][..], extra].concat());
    let e = launch(&[]);
    assert!(
        e.contains("SLURM_JOB_NODELIST") && e.contains("--hostfile"),
        "{e}"
    );
    let e = launch(&["--hostfile", "hosts"]);
    assert!(e.contains("--exec 'ssh {host}'"), "{e}");
    let e = launch(&["--hostfile", "hosts", "--exec", "ssh", "--print"]);
    assert!(e.contains("{host}"), "{e}");
    // The preset's own subnets are not these hosts': the router is named, and its host.
    let e = launch(&["--hostfile", "hosts", "--exec", "ssh {host}", "--print"]);
    assert!(
        e.contains("c0") && e.contains("login") && e.contains("10.231.1.0/24"),
        "{e}"
    );
    let e = launch(&[
        "--hostfile",
        "hosts",
        "--exec",
        "ssh {host}",
        "--subnet",
        "nosuch=10.0.0.0/8",
        "--print",
    ]);
    assert!(e.contains("no network \"nosuch\""), "{e}");
    // A tool pointed at a file launch did not write.
    std::fs::write(
        dir.path().join("plain.toml"),
        iopath_stack::preset("spider-mini").unwrap().text,
    )
    .unwrap();
    let e = said(&["lctl", "--stack", "plain.toml", "--node", "oss0", "dl"]);
    assert!(
        e.contains("no admin address") && e.contains("iopath launch"),
        "{e}"
    );
}

/// A running `iopath launch`; dropped, told to stop (SIGTERM) and waited for, so no node
/// outlives a test that failed.
struct Running(Option<Child>);

impl Running {
    /// SIGTERM and the exit status's success.
    fn stop(mut self) -> bool {
        let child = self.0.take().unwrap();
        terminate(child)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            terminate(child);
        }
    }
}

fn terminate(mut child: Child) -> bool {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait().is_ok_and(|s| s.success())
}

#[test]
fn launch_web_follows_every_server_node_from_its_metrics() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hosts"), "here 127.0.0.1\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iopath"))
        .args([
            "launch",
            "--preset",
            "spider-mini-routed",
            "--hostfile",
            "hosts",
            "--exec",
            "env IOPATH_HOST={host}",
            "--port-base",
            "31000",
            "--dir",
            "nodes",
            "--out",
            "launched.toml",
            "--web",
            "127.0.0.1:0",
        ])
        .current_dir(dir.path())
        .env_remove("SLURM_JOB_ID")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let launch = Running(Some(child));
    // Its lines through a thread, so a launch that hangs fails the test instead of holding it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("launch printed no live view address within 60 s");
        if let Some(url) = line.strip_prefix("live view: ") {
            break url.to_owned();
        }
    };
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let page = common::http_get(&addr, "/");
    assert!(page.contains("<html"), "{page}");
    let state = |at: &str| -> serde_json::Value {
        serde_json::from_str(&common::http_get(at, "/state.json")).unwrap()
    };
    // The sampler reads every second; the first reading may precede the first sample.
    let mut read = Vec::new();
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let now = state(&addr);
        read = now["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["read"] == true)
            .map(|n| n["name"].as_str().unwrap().to_owned())
            .collect();
        if read.len() == 7 {
            break;
        }
    }
    // Every server node (four routers, two OSSes, the MDS) read from its /metrics; the
    // clients, which run in the application, not.
    assert_eq!(read.len(), 7, "read: {read:?}");
    assert!(read.iter().all(|n| !n.starts_with('c')), "{read:?}");
    // The stack's admin secret is beside the stack file launch wrote; lctl --stack finds it
    // there, and without it a change is refused.
    let lctl = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_iopath"))
            .args(["lctl", "--stack", "launched.toml", "--node", "oss0"])
            .args(args)
            .current_dir(dir.path())
            .env_remove("IOPATH_ADMIN_SECRET_FILE")
            .output()
            .unwrap()
    };
    let set = lctl(&["set_param", "obdfilter.*.sync_journal=1"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    std::fs::rename(
        dir.path().join("launched.toml.secret"),
        dir.path().join("elsewhere.secret"),
    )
    .unwrap();
    let refused = lctl(&["set_param", "obdfilter.*.sync_journal=0"]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("no admin secret was sent"),
        "{said}"
    );
    // Launch itself stops its nodes with the secret it holds, file or not.
    assert!(
        launch.stop(),
        "launch stopped every node cleanly on SIGTERM"
    );
}
