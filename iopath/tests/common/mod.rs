//! What the tests that run real stacks share: `iopath`, and a stack of processes under
//! `iopath up --processes` whose storage servers can be killed and started again.

#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[allow(unused_imports)]
// as with dead_code above: each test file names the types it builds with
pub use iopath_stack::schema::file::{
    FyodModeName, JournalName, NetworkEntry, NodeEntry, RoleName, StackFile,
};

/// The recovery window of the stack's servers: long enough for a client that is alive to
/// reconnect and replay even when its request was in flight at the crash and it learns of the
/// crash only by the RPC timeout (10 s; a 5 s window evicted such a live writer on a busy
/// machine), short enough for the test.
pub const WINDOW_MS: u64 = 15_000;

/// A stack file: two storage servers of two targets, every file over all four, with commits
/// only when a client forces one (`journal` async), or at every write (sync).
pub fn crash_stack(journal: JournalName) -> StackFile {
    StackFile::named("crash-test")
        .description("spider-mini's shape; async commits only when forced")
        .stripe_size(1 << 20)
        .stripe_count(4)
        .network(NetworkEntry::named("o2ib0"))
        .node(
            NodeEntry::new("c", RoleName::Client)
                .count(2)
                .nid("o2ib0", 100),
        )
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .count(2)
                .nid("o2ib0", 10)
                .targets(2)
                .journal(journal)
                .commit_interval_ms(60_000)
                .recovery_window_ms(WINDOW_MS),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib0", 1))
}

/// The `iopath` binary under test.
pub fn iopath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iopath"))
}

/// `iopath lctl --admin ADMIN ARGS...`'s standard output; panics, with its error, if it fails.
pub fn lctl(admin: &str, args: &[&str]) -> String {
    lctl_as(admin, None, args)
}

/// `iopath lctl --admin ADMIN --secret-file SECRET ARGS...`'s standard output, for changes;
/// panics, with its error, if it fails.
pub fn lctl_with_secret(admin: &str, secret: &Path, args: &[&str]) -> String {
    lctl_as(admin, Some(secret), args)
}

fn lctl_as(admin: &str, secret: Option<&Path>, args: &[&str]) -> String {
    let mut lctl = iopath();
    lctl.args(["lctl", "--admin", admin]);
    if let Some(secret) = secret {
        lctl.arg("--secret-file").arg(secret);
    }
    let out = lctl.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "lctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The admin secret file `iopath up` or `iopath launch` names in `line` (`admin secret: FILE
/// (...)`), if it is that line.
pub fn secret_file_in(line: &str) -> Option<PathBuf> {
    let rest = line.strip_prefix("admin secret: ")?;
    let path = rest.split(" (").next()?;
    Some(PathBuf::from(path))
}

/// A stack running under `iopath up --processes`.
pub struct Stack {
    pub up: Child,
    pub dir: tempfile::TempDir,
    /// The metadata service's NID.
    pub mds: String,
    /// Every node's name and first NID, as `up` printed them.
    pub nids: Vec<(String, String)>,
    /// What `up` printed before `ready`: the stack's table.
    pub table: Vec<String>,
    pub restarted: Vec<Child>,
}

impl Stack {
    /// Starts the stack file `text` (its name is `crash-test.toml`).
    pub fn start(stack: &StackFile) -> Stack {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{}.toml", stack.name));
        std::fs::write(&file, stack.to_toml()).unwrap();
        // Another test's stack may take a port this one picked in the moment between the
        // pick and its node's bind (a race of concurrent stacks on one machine): then the
        // stack says so and is started again, a bounded number of times.
        for _attempt in 0..5 {
            let log = dir.path().join("up.log");
            let mut up = iopath()
                .args(["up", "--processes", "--stack"])
                .arg(&file)
                .arg("--dir")
                .arg(dir.path().join("s"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap();
            let mut mds = None;
            let mut nids = Vec::new();
            let mut table = Vec::new();
            let mut ready = false;
            for line in BufReader::new(up.stdout.take().unwrap()).lines() {
                let line = line.unwrap();
                table.push(line.clone());
                let cols: Vec<&str> = line.split_whitespace().collect();
                if cols.first() == Some(&"mds") && cols.len() > 4 {
                    mds = Some(cols[2].to_owned());
                }
                if cols.len() > 4 && cols[2].contains("@tcp") {
                    nids.push((cols[0].to_owned(), cols[2].to_owned()));
                }
                if line.starts_with("ready") {
                    ready = true;
                    break;
                }
            }
            if ready {
                return Stack {
                    up,
                    mds: mds.expect("up printed the mds"),
                    nids,
                    table,
                    dir,
                    restarted: Vec::new(),
                };
            }
            let _ = up.wait();
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                said.contains("Address already in use"),
                "the stack did not start: {said}"
            );
            let _ = std::fs::remove_dir_all(dir.path().join("s"));
        }
        panic!("the stack's ports were taken five times over");
    }

    /// The NID of node `name`, as `up` printed it.
    pub fn nid(&self, name: &str) -> &str {
        self.nids
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, nid)| nid.as_str())
            .unwrap_or_else(|| panic!("up printed no node {name}"))
    }

    /// The admin address of node `name`, as `up` printed it in its table.
    pub fn admin(&self, name: &str) -> &str {
        self.table
            .iter()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols.first() == Some(&name) && cols.len() > 4)
            .map(|cols| cols[4])
            .unwrap_or_else(|| panic!("up printed no row for {name}"))
    }

    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("s")
    }

    /// The stack's admin secret file, which changes need: `up` writes it into the storage
    /// directory.
    pub fn secret_file(&self) -> PathBuf {
        self.storage().join("admin.secret")
    }

    /// SIGKILL for the process of node `name`: no commit, no clean-shutdown marker.
    pub fn kill(&self, name: &str) {
        let pid = node_pid(&self.storage(), name).expect("the node's process is running");
        let status = Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        // Gone before anything else happens.
        let deadline = Instant::now() + Duration::from_secs(10);
        while node_pid(&self.storage(), name).is_some() {
            assert!(Instant::now() < deadline, "{name} did not die");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts node `name` again on its own addresses and disk, as an operator would; returns
    /// its admin address. Another test's stack, started meanwhile, may have picked the freed
    /// port for a node of its own: then the start is tried again, for a bounded time, until
    /// that stack is done with it.
    pub fn restart(&mut self, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.start_node(name) {
                Ok(admin) => return admin,
                Err(why) if why.contains("Address already in use") && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(250));
                }
                Err(why) => panic!("{name} did not start again: {why}"),
            }
        }
    }

    /// One try at starting node `name`: its admin address, or what it said when it failed.
    pub fn start_node(&mut self, name: &str) -> Result<String, String> {
        let storage = self.storage();
        let mut child = iopath()
            .args(["node", "--watch-stdin", "--stack"])
            .arg(storage.join("stack.toml"))
            .arg("--secret-file")
            .arg(self.secret_file())
            .args(["--name", name, "--dir"])
            .arg(storage.join(name))
            .env("IOPATH_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let Some(admin) = wait_ready(child.stdout.take().unwrap()) else {
            let output = child.wait_with_output().unwrap();
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        };
        self.restarted.push(child);
        Ok(admin)
    }

    pub fn lfs(&self, args: &[&str]) -> Output {
        iopath()
            .args(["lfs", "--mds", &self.mds])
            .args(args)
            .output()
            .unwrap()
    }

    /// Stops everything; returns what the restarted nodes logged.
    pub fn stop(mut self) -> String {
        drop(self.up.stdin.take());
        let _ = self.up.wait();
        let mut logs = String::new();
        for mut child in self.restarted.drain(..) {
            drop(child.stdin.take());
            let output = child.wait_with_output().unwrap();
            logs.push_str(&String::from_utf8_lossy(&output.stderr));
        }
        logs
    }
}

/// Waits for the node's `READY NID ADMIN` line; returns the admin address, or `None` if the
/// node ended without one.
pub fn wait_ready(stdout: ChildStdout) -> Option<String> {
    ready_words(stdout)
        .ok()
        .and_then(|words| words.get(1).cloned())
}

/// The words after `READY` on the first line a starting iopath process prints (`iopath node`:
/// its NIDs, its admin address, ...), or the line it printed instead.
pub fn ready_words(stdout: ChildStdout) -> Result<Vec<String>, String> {
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    match line.strip_prefix("READY ") {
        Some(rest) => Ok(rest.split_whitespace().map(str::to_owned).collect()),
        None => Err(line),
    }
}

/// The pid of the `iopath node` process serving `name` under `storage`, if it runs.
pub fn node_pid(storage: &Path, name: &str) -> Option<u32> {
    let dir = storage.join(name);
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let named = args.windows(2).any(|w| w[0] == "--name" && w[1] == name);
        let here = args
            .windows(2)
            .any(|w| w[0] == "--dir" && Path::new(&w[1]) == dir);
        let alive = std::fs::read_to_string(entry.path().join("stat"))
            .is_ok_and(|stat| !stat.contains(") Z "));
        if args.get(1).is_some_and(|a| a == "node") && named && here && alive {
            return Some(pid);
        }
    }
    None
}

/// A tool the tests need, or a loud failure naming it and the packages `scripts/test`
/// installs it from.
pub fn require_tool(tool: &str, packages: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .unwrap()
        .status
        .success();
    assert!(
        found,
        "{tool} is not installed: scripts/test installs it (apt-get install {packages})"
    );
}

/// A counter's value in a node's `lctl get_param -n stats` (`recv_length 123`).
pub fn stat(stats: &str, name: &str) -> u64 {
    stats
        .lines()
        .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {stats}"))
}

/// How long an HTTP answer from a node or the live view may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// `GET path` from `addr` (HTTP/1.1, the connection closed after): the body of a 200.
pub fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(HTTP_TIMEOUT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    body.to_owned()
}
